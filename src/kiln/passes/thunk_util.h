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

// The branch a conditional takes for its index operand's bytes, as XLA defines it: a pred
// index picks branch 0 for true and 1 for false; an s32 index picks that branch, and any index
// outside [0, num_branches) picks the last one.
int64_t SelectConditionalBranch(PrimitiveType index_type, const uint8_t* index, int64_t num_branches);

}  // namespace kiln
