// The host platform's autotuning backends, so that `kiln tune`, the Autotuner and the Profiler
// run end to end on any machine (and in CI):
//   host_gemm  a tiled f32 GEMM for plain row-major dots (f32[m,k] x f32[k,n], contracting
//              lhs 1 / rhs 0, no batch, default layouts), configs
//              {"tile_m", "tile_n", "tile_k", "order": "ikj" | "ijk"}: five with tuning on,
//              the whole 4×4×4×2 grid with `--autotune exhaustive`. Default 64×64×64 ikj.
//   host_eval  kiln's reference evaluator on one dot or convolution; cannot produce wrong
//              results, so it is the reference. One config ({}).
// In this order: a dot's default is the GEMM's default.
// Both read and write buffers in the instruction's default (row-major) layout and support
// nothing else. Apply records the choice in the instruction's backend_config
// (WriteConfigToBackendConfig); the CPU compiler does not read it yet.
#pragma once

#include "kiln/autotune/backend.h"

namespace kiln::autotune {

StatusOr<BackendList> CreateHostBackends(const runtime::DeviceDescription& target,
                                         runtime::Device* device, const BackendOptions& options);

// Registers CreateHostBackends as the "host" platform's factory.
Status RegisterHostAutotuneFactory(BackendFactoryRegistry& registry);

}  // namespace kiln::autotune
