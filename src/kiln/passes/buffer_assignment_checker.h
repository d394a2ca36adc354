// An independent check of a BufferAssignment: would running the module with these slices
// compute the right values?
//
// The checker knows nothing of how the assignment was made. It replays the schedule on shadow
// memory where every byte carries the tag of the value last written there: an instruction
// checks that each operand's slice still holds that operand's tag and writes fresh tags into
// its outputs' slices; views (tuple, get-tuple-element, bitcast, ...) whose slice equals their
// operand's carry the tag over; while loops run their copy plans (both phases) for two
// iterations with exits after zero, one and two; conditionals run every branch from the same
// memory and merge (bytes that differ between branches become unreadable); the entry outputs
// must hold their values at the end. A value whose bytes were overwritten while it was still to
// be read is reported with the instruction that overwrote it.
//
// It also checks the structure: every array leaf of every instruction of a sequential
// computation has a slice inside its allocation, big enough for its shape, arena offsets are
// aligned, outputs do not overlap each other or (unless identical, for in-place ops) their
// operands, and no two positions with partially overlapping arena slices are live at the same
// time (GetLiveRange).
#pragma once

#include "kiln/base/status.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln {

struct BufferCheckOptions {
  // The schedule the assignment was made for (null: PostOrderSchedule).
  const HloSchedule* schedule = nullptr;
  // As BufferAssignmentOptions.
  std::function<int64_t(const Shape&)> size_fn;
  int64_t alignment = 64;
};

Status VerifyBufferAssignment(const HloModule& module, const BufferAssignment& assignment,
                              const BufferCheckOptions& options = {});

}  // namespace kiln
