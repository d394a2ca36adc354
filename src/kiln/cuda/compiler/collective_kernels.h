// The device kernels of the collectives NCCL cannot do alone (collective_thunks.h): codegen's
// neutral collective lowering (codegen/collective_lowering.h: Note [Reductions NCCL lacks],
// Note [Ragged all-to-all on NCCL]), shared with the rocm compiler, in the CUDA dialect. The
// thunk emitter compiles them with NVRTC beside the module's other kernels and the collective
// thunk loads them.
#pragma once

#include <optional>

#include "kiln/codegen/collective_lowering.h"

namespace kiln::cuda {

using codegen::CollectiveKernelSource;
using codegen::CombineEntry;
using codegen::kRaggedEntry;

inline StatusOr<std::optional<CollectiveKernelSource>> CollectiveKernelsFor(const HloInstruction& op,
                                                                            bool device_reduction) {
  return codegen::CollectiveKernelsFor(op, device_reduction, codegen::GpuDialect::kCuda);
}

}  // namespace kiln::cuda
