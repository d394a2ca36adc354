// The "codegen" autotuning backend: kiln's generated kernels (src/kiln/codegen) for every fusion
// the GPU compiler forms, one candidate per launch configuration codegen::CandidateConfigs lists
// (block size, vector width, rows per block, unroll, reduction split, transpose tile; the
// emitter's default first).
//
//   config      {"config": "b256.v4.u2.r1.s1"}   (codegen::KernelConfig::ToString)
//   default     codegen::DefaultConfig (what the compiler emits untuned)
//   Compile     emits the kernel with that config, compiles it with NVRTC (its disk cache;
//               the autotuner calls Compile for all candidates in parallel on its pool) and
//               loads it on the device
//   Apply       WriteConfigToBackendConfig: the fusion's backend_config {"autotune": ...}, which
//               the GPU compiler's thunk emitter reads (TunedKernelConfig) when it emits the
//               fusion's kernel
// The config format (kCodegenBackend, KernelConfigToConfig / KernelConfigFromConfig) and
// TunedKernelConfig live with the compiler's autotuning step (cuda/compiler/gpu_autotune.h,
// included here), since the thunk emitter reads them and the compiler includes no backend.
// Generated kernels can be wrong (CanProduceWrongResults): with no trusted backend for a
// fusion, the autotuner checks every candidate against the default config's outputs.
// Listing configs needs no device; Compile does.
#pragma once

#include <memory>

#include "kiln/autotune/backend.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/compiler/gpu_autotune.h"
#include "kiln/cuda/nvrtc_compiler.h"

namespace kiln::cuda {

// `device` may be null (no Compile); `nvrtc` must outlive the backend (shared with others).
std::unique_ptr<autotune::Backend> CreateCodegenBackend(codegen::DeviceSpec spec,
                                                        runtime::Device* device,
                                                        std::shared_ptr<NvrtcCompiler> nvrtc,
                                                        const autotune::BackendOptions& options);

}  // namespace kiln::cuda
