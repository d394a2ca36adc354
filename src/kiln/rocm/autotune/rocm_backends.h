// The ROCm platform's autotuning backends (autotune/backend.h), XLA's factory_rocm in kiln's
// shape, in preference order:
//
//   rocblas    dots on rocBLAS: config {"solution": N} -- rocblas_gemm_ex's solution index, 0
//              the library's default. With a device, the solutions rocblas_gemm_ex_get_solutions
//              lists for the problem; without one only the default. Cannot produce wrong
//              results: the reference.
//   hipblaslt  dots on hipBLASLt: config {"index": i, "heuristic": n} -- the i-th algorithm of
//              hipblasLtMatmulAlgoGetHeuristic (n requested: 16, exhaustive 128). Needs a device
//              to list.
//   miopen     convolutions on MIOpen: config {"mode": "find"|"immediate", "solution": id,
//              "fallback": bool} -- find mode's measured algorithms, or immediate mode's
//              solutions (miopenConvolutionForwardGetSolution), with or without MIOpen's
//              fallback (untuned) solutions. Needs a device to list.
//   codegen    fusions: kiln's generated HIP kernels with every launch configuration
//              codegen::CandidateConfigs lists for the target (64-lane wavefronts), config
//              {"config": "b256.v4..."}. Listing needs no device; Compile compiles the kernel to
//              a code object (HsacoCompiler) and loads it.
//   fission    dots with an elementwise consumer fused after them: the GEMM on rocBLAS' default
//              followed by the consumer as one generated kernel. Config {"split": true}.
//
// Candidates (Compile) need an AMD GPU and the library: without them Compile is
// FailedPrecondition, saying which is missing -- as here, where neither exists (Note [Untested
// ROCm execution] in rocm/rocm_device.h). Versions (Backend::version, part of every cache key
// with the device's gpu_arch, runtime and library versions: autotune/cache_key.h) name the
// library that was loaded, or "absent".
#pragma once

#include <set>
#include <string>

#include "kiln/autotune/backend.h"
#include "kiln/codegen/device_spec.h"

namespace kiln::rocm {

struct RocmBackendsOptions {
  // Only these backends ("rocblas", "hipblaslt", "miopen", "codegen", "fission"); empty: all.
  // Unknown names are InvalidArgument.
  std::set<std::string> allowed;
};

// The backend names, in preference order.
const std::vector<std::string>& RocmBackendNames();

// `target` a ROCm description (its gpu_arch picks the DeviceSpec), `device` a RocmDevice or
// null (listing only).
StatusOr<autotune::BackendList> CreateRocmBackends(const runtime::DeviceDescription& target,
                                                   runtime::Device* device,
                                                   const autotune::BackendOptions& options,
                                                   const RocmBackendsOptions& rocm = {});

// The factory of the "rocm" platform: CreateRocmBackends with every backend.
autotune::BackendFactory RocmAutotuneFactory(RocmBackendsOptions rocm = {});
Status RegisterRocmAutotuneFactory(autotune::BackendFactoryRegistry& registry);

}  // namespace kiln::rocm
