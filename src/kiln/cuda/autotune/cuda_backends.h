// The CUDA platform's autotuning backends (autotune/backend.h), in preference order:
//
//   cublas    GEMM custom calls (__kiln$gemm) on cuBLAS: config {"algo": cublasGemmAlgo_t}.
//             With tuning on: CUBLAS_GEMM_DEFAULT and CUBLAS_GEMM_DEFAULT_TENSOR_OP; exhaustive:
//             every id cublas_gemm.h lists. Listed without a device (the ids are fixed).
//             Default: CUBLAS_GEMM_DEFAULT. Cannot produce wrong results: the reference.
//   cublaslt  the same calls on cuBLASLt: every algorithm its heuristic returns (16 with tuning
//             on, 128 exhaustive), each with its workspace: config {"index", "opaque" (the
//             cublasLtMatmulAlgo_t words), "workspace", "waves", "desc"}. Needs a device to list.
//             Deterministic mode keeps only algorithms without split-K.
//   fission   GEMM calls with an epilogue (bias, activation, residual): the plain GEMM on each
//             algorithm cuBLASLt's heuristic returns for the epilogue-free problem, followed by
//             the epilogue as one generated kernel; applied, it splits the call into a GEMM call
//             and an epilogue fusion (fission_backend.h). Needs a device to list and NVRTC
//             (else left out).
//   cudnn     convolution custom calls (__kiln$conv) on cuDNN: the algorithms ConvPlan lists,
//             in its order (for fused calls: cuDNN's fused call first where it is documented,
//             then the split fallback, conv.h), config {"algo", "math_type", "workspace",
//             "deterministic", "tensor_ops", "split_epilogue", "index", "desc"}; deterministic
//             mode keeps the deterministic ones. Needs a device to list.
//   codegen   fusions: kiln's generated kernels with every launch configuration
//             codegen::CandidateConfigs lists (codegen_backend.h). Needs NVRTC (else left out).
// Every backend writes its choice with WriteConfigToBackendConfig, i.e. under "autotune" in the
// call's JSON backend_config beside the GEMM/convolution config, where the GPU compiler's thunks
// read it (cuda/compiler/library_calls.h: TunedGemmAlgorithm, TunedConvAlgorithm;
// cuda/compiler/gpu_autotune.h: TunedKernelConfig).
//
// cuda/autotune is the room above cuda/compiler: the backends include the compiler's call formats
// and the compiler takes them only as a factory (GpuCompileOptions::autotune.factory).
#pragma once

#include "kiln/autotune/backend.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/library_calls.h"

namespace kiln::cuda {

// `device` (a CUDA device, or null to compile without one) must outlive the backends.
StatusOr<autotune::BackendList> CreateCudaBackends(const runtime::DeviceDescription& target,
                                                   runtime::Device* device,
                                                   const autotune::BackendOptions& options);

// The factory the GPU compiler uses on CUDA devices (GpuCompileOptions::autotune.factory,
// cuda/compiler/gpu_autotune.h): CreateCudaBackends.
autotune::BackendFactory CudaAutotuneFactory();

// Registers CreateCudaBackends as the "cuda" platform's factory.
Status RegisterCudaAutotuneFactory(autotune::BackendFactoryRegistry& registry);

}  // namespace kiln::cuda
