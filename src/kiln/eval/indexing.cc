// Indexing kernels: dynamic-slice and dynamic-update-slice.
//
// Start indices are scalars of any integer type (signed or unsigned), one per operand dimension
// (the old form, a single rank-1 index vector, is accepted too). As in XLA, each start index is
// clamped into [0, operand_dim - slice_dim] so the slice always lies inside the operand.
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/eval_util.h"
#include "kiln/eval/kernels.h"

namespace kiln {
namespace {

using eval_internal::ClampedIndex;
using eval_internal::ExpectArray;
using eval_internal::StridedCopy;
using eval_internal::StridesOf;

// Reads the clamped start indices from operands [first, ...) for a slice of `sizes` of `dims`.
StatusOr<std::vector<int64_t>> StartIndices(const HloInstruction& instr,
                                            std::span<const Literal* const> ops, size_t first,
                                            const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& sizes) {
  const size_t rank = dims.size();
  std::vector<int64_t> starts(rank, 0);
  const size_t n_index = ops.size() - first;
  bool vector_form = n_index == 1 && rank != 1 && ops[first]->shape().rank() == 1;
  if (n_index == 1 && rank == 1 && ops[first]->shape().rank() == 1) vector_form = true;
  if (!vector_form && n_index != rank)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has ", n_index,
                           " start indices for rank ", rank);
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || sizes[d] > dims[d])
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": slice size ", sizes[d], " exceeds dimension ", d, " of size ",
                             dims[d]);
    const Literal& idx = vector_form ? *ops[first] : *ops[first + d];
    int64_t element = vector_form ? static_cast<int64_t>(d) : 0;
    if (!idx.shape().IsArray() || !IsIntegralType(idx.shape().element_type()) ||
        element >= idx.element_count())
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": start indices must be integers, got ",
                             idx.shape().ToString(false));
    starts[d] = ClampedIndex(idx, element, 0, dims[d] - sizes[d]);
  }
  return starts;
}

StatusOr<Literal> EvalDynamicSlice(const HloInstruction& instr,
                                   std::span<const Literal* const> ops, Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  const Shape& rs = instr.shape();
  if (!rs.IsArray() || rs.element_type() != a.shape().element_type() ||
      rs.rank() != a.shape().rank())
    return InvalidArgument("dynamic-slice %", instr.name(), ": result ", rs.ToString(false),
                           " does not match the operand ", a.shape().ToString(false));
  std::vector<int64_t> sizes = rs.dimensions();
  const auto& attr_sizes = instr.attrs().dynamic_slice_sizes;
  if (!attr_sizes.empty() && attr_sizes != sizes)
    return InvalidArgument("dynamic-slice %", instr.name(),
                           ": dynamic_slice_sizes differ from the result shape");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts,
                        StartIndices(instr, ops, 1, a.shape().dimensions(), sizes));
  std::vector<int64_t> strides = StridesOf(a.shape());
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) base += starts[d] * strides[d];
  Literal out(rs);
  StridedCopy(a.untyped_data(), out.untyped_data(), PrimitiveByteWidth(rs.element_type()),
              sizes, strides, base, StridesOf(rs), 0);
  return out;
}

StatusOr<Literal> EvalDynamicUpdateSlice(const HloInstruction& instr,
                                         std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() < 2) return InvalidArgument("dynamic-update-slice %", instr.name(), " needs an update");
  const Literal& a = *ops[0];
  const Literal& u = *ops[1];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectArray(u, instr, "update"));
  if (u.shape().element_type() != a.shape().element_type() || u.shape().rank() != a.shape().rank() ||
      !Shape::Compatible(instr.shape(), a.shape()))
    return InvalidArgument("dynamic-update-slice %", instr.name(), ": update ",
                           u.shape().ToString(false), " does not fit operand ",
                           a.shape().ToString(false));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts,
                        StartIndices(instr, ops, 2, a.shape().dimensions(), u.shape().dimensions()));
  Literal out(instr.shape());
  if (a.size_bytes() > 0)  // empty: no data pointers, and memcpy of null is undefined (UBSan)
    std::memcpy(out.untyped_data(), a.untyped_data(), a.size_bytes());
  std::vector<int64_t> strides = StridesOf(a.shape());
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) base += starts[d] * strides[d];
  StridedCopy(u.untyped_data(), out.untyped_data(), PrimitiveByteWidth(a.shape().element_type()),
              u.shape().dimensions(), StridesOf(u.shape()), 0, strides, base);
  return out;
}

}  // namespace

void RegisterIndexingKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kDynamicSlice, EvalDynamicSlice);
  r.Register(HloOpcode::kDynamicUpdateSlice, EvalDynamicUpdateSlice);
}

}  // namespace kiln
