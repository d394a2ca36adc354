// The GPU fusion policy moved to codegen/gpu_fusion_policy.h, shared by the cuda and rocm
// compilers; the CUDA room keeps its names.
#pragma once

#include "kiln/codegen/gpu_fusion_policy.h"

namespace kiln::cuda {

using codegen::GpuFusionOptions;
using codegen::GpuFusionPolicy;

}  // namespace kiln::cuda
