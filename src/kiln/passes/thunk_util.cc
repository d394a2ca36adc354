#include "kiln/passes/thunk_util.h"

#include <cstring>

#include "kiln/base/strings.h"

namespace kiln {

StatusOr<BufferSlice> CheckedSlice(const BufferAssignment& assignment, const HloInstruction& instr,
                                   const ShapeIndex& index) {
  KILN_ASSIGN_OR_RETURN(BufferSlice s, assignment.GetSlice(instr, index));
  const auto& allocs = assignment.allocations();
  if (s.allocation < 0 || s.allocation >= static_cast<int64_t>(allocs.size()) || s.offset < 0 ||
      s.offset + s.size > allocs[s.allocation].size)
    return Internal("slice ", s.ToString(), " of %", instr.name(), " {", StrJoin(index, ","),
                    "} lies outside its allocation");
  return s;
}

StatusOr<bool> IsBufferView(const BufferAssignment& assignment, const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kReshape) return false;
  for (const ShapeIndex& leaf : ArrayLeafIndices(instr.shape())) {
    KILN_ASSIGN_OR_RETURN(BufferSlice a, CheckedSlice(assignment, instr, leaf));
    KILN_ASSIGN_OR_RETURN(BufferSlice b, CheckedSlice(assignment, *instr.operand(0), leaf));
    if (a != b) return false;
  }
  return true;
}

int64_t SelectConditionalBranch(PrimitiveType index_type, const uint8_t* index, int64_t num_branches) {
  if (index_type == PrimitiveType::kPred) return *index != 0 ? 0 : 1;
  int32_t i;
  std::memcpy(&i, index, sizeof i);
  return (i < 0 || i >= num_branches) ? num_branches - 1 : i;
}

}  // namespace kiln
