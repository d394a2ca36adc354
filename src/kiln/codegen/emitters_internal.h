// Internal helpers shared by the emitters and their config logic (not part of the API).
#pragma once

#include <cstdint>
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

// Whether the linalg emitters take the instruction (emit_linalg.cc): Unimplemented/
// InvalidArgument with the reason otherwise.
Status CheckCholesky(const HloInstruction& instr);
Status CheckTriangularSolve(const HloInstruction& instr);
// Whether the sort emitter takes the sort (emit_sort.cc).
Status CheckSort(const HloInstruction& sort);

}  // namespace kiln::codegen
