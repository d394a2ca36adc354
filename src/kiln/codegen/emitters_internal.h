// Internal helpers shared by the emitters and their config logic (not part of the API).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/kernel_spec.h"

namespace kiln::codegen {

// How many times a loop kernel over `iteration_elements` elements would recompute each element
// of the reductions it contains (1: none is broadcast back).
int64_t ReduceRecomputeFactor(const FusionView& view, int64_t iteration_elements);
// The loop emitter's config with every 0 field replaced by its default.
KernelConfig ResolveLoopConfig(const FusionView& view, const DeviceSpec& device,
                               const KernelConfig& config);

// The output of `view` that the in-place dynamic-update-slice emitter writes window-only: a
// dynamic-update-slice of a leaf nothing else reads, with an update smaller than the array,
// every other output an array of the update's dimensions (size-1 dimensions aside; Note
// [In-place update spaces] in passes/fusion_policy.h). -1 when there is none.
int64_t InPlaceDusOutput(const FusionView& view);

// Whether the linalg emitters take the instruction (emit_linalg.cc): Unimplemented/
// InvalidArgument with the reason otherwise.
Status CheckCholesky(const HloInstruction& instr);
Status CheckTriangularSolve(const HloInstruction& instr);
// Whether the sort emitter takes the sort (emit_sort.cc).
Status CheckSort(const HloInstruction& sort);

// A reduce-window that is a cumulative reduction (emit_scan.cc): one operand, the window as long
// as dimension `dim` (length `length`) with the padding on one side -- low: forward (output i
// reduces 0..i), high: reverse (i..n-1) -- no strides, dilations or other windows. nullopt
// for anything else, for axes shorter than 16, and for sums / products of narrow floats
// shorter than 8192 (Note [Chunked scan]).
struct ScanPattern {
  int64_t dim = 0;
  int64_t length = 0;
  bool reverse = false;
};
std::optional<ScanPattern> MatchScan(const HloInstruction& reduce_window);

}  // namespace kiln::codegen
