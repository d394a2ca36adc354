// Thunk logic every backend shares, written once: checked buffer slices, which reshapes are
// views of their operand's bytes, and which branch a conditional takes.
#pragma once

#include <cstdint>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/types.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln {

// The slice of `instr` at `index`, checked to lie inside its allocation (Internal otherwise,
// naming the instruction: a buffer-assignment bug, never a user error).
StatusOr<BufferSlice> CheckedSlice(const BufferAssignment& assignment, const HloInstruction& instr,
                                   const ShapeIndex& index = {});

// Whether `instr` needs no work of its own: a reshape whose every leaf shares its operand's
// slice (row-major bytes are the same), so its thunk is nothing.
StatusOr<bool> IsBufferView(const BufferAssignment& assignment, const HloInstruction& instr);

// The copies that end a loop iteration (Note [While loop buffers]), in the order they must run:
// body results another copy overwrites go to their staging slices first, then every copied
// leaf lands in its state slice. `copy(src, dst)` returns a Status; both backends' while
// thunks call this with their own copy.
template <typename CopyFn>
Status ForEachLoopStateCopy(const WhileCopyPlan& plan, CopyFn&& copy) {
  const size_t n = plan.leaves.size();
  for (size_t j = 0; j < n; ++j)
    if (plan.copy_body_result[j] && plan.staging[j].valid())
      KILN_RETURN_IF_ERROR(copy(plan.body_result[j], plan.staging[j]));
  for (size_t j = 0; j < n; ++j) {
    if (!plan.copy_body_result[j]) continue;
    const BufferSlice& src = plan.staging[j].valid() ? plan.staging[j] : plan.body_result[j];
    if (src.valid()) KILN_RETURN_IF_ERROR(copy(src, plan.state[j]));
  }
  return OkStatus();
}

// The branch a conditional takes for its index operand's bytes, as XLA defines it: a pred
// index picks branch 0 for true and 1 for false; an s32 index picks that branch, and any index
// outside [0, num_branches) picks the last one.
int64_t SelectConditionalBranch(PrimitiveType index_type, const uint8_t* index, int64_t num_branches);

}  // namespace kiln
