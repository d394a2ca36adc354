// cuBLAS, cuBLASLt, cuDNN and cuFFT, loaded at run time (see library_loader.h for how the lists
// become typed members). Each list holds what kiln calls today; add names as backends need them.
// cuDNN is compiled in only when its headers are present beside the toolkit's
// (KILN_HAVE_CUDNN_HEADERS below); NCCL needs no headers (nccl_api.h).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cufft.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/library_loader.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define KILN_HAVE_CUDNN_HEADERS 1
#endif

#define KILN_CUBLAS_FUNCTIONS(X)                                                          \
  X(cublasGetProperty) X(cublasGetStatusName) X(cublasGetStatusString) X(cublasCreate)    \
  X(cublasDestroy) X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetMathMode)

// Functions the C++ headers overload: the list names the C signature (checked against the
// header's declaration at compile time).
#define KILN_CUBLAS_TYPED_FUNCTIONS(X)                                                    \
  X(cublasGemmEx, cublasStatus_t,                                                         \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,    \
     const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,  \
     cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t))                           \
  X(cublasGemmStridedBatchedEx, cublasStatus_t,                                           \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,    \
     const void*, cudaDataType, int, long long int, const void*, cudaDataType, int,       \
     long long int, const void*, void*, cudaDataType, int, long long int, int,            \
     cublasComputeType_t, cublasGemmAlgo_t))

#define KILN_CUBLASLT_FUNCTIONS(X)                                                       \
  X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtGetStatusString)              \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmul) X(cublasLtMatmulDescCreate)     \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)                         \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                           \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)                  \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)             \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmulAlgoConfigGetAttribute)

#define KILN_CUDNN_FUNCTIONS(X)                                                          \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate)    \
  X(cudnnDestroy) X(cudnnSetStream) X(cudnnBackendCreateDescriptor)                      \
  X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)                           \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)              \
  /* the legacy convolution API (cuDNN 9: cudnn_ops / cudnn_cnn) */                      \
  X(cudnnCreateTensorDescriptor) X(cudnnSetTensorNdDescriptorEx)                         \
  X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor)                          \
  X(cudnnCreateFilterDescriptor) X(cudnnSetFilterNdDescriptor)                           \
  X(cudnnDestroyFilterDescriptor) X(cudnnCreateConvolutionDescriptor)                    \
  X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount)                    \
  X(cudnnSetConvolutionMathType) X(cudnnDestroyConvolutionDescriptor)                    \
  X(cudnnGetConvolutionNdForwardOutputDim) X(cudnnCreateActivationDescriptor)            \
  X(cudnnSetActivationDescriptor) X(cudnnDestroyActivationDescriptor)                    \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount) X(cudnnGetConvolutionForwardAlgorithm_v7) \
  X(cudnnFindConvolutionForwardAlgorithmEx) X(cudnnGetConvolutionForwardWorkspaceSize)   \
  X(cudnnConvolutionForward) X(cudnnConvolutionBiasActivationForward)                    \
  X(cudnnGetConvolutionBackwardDataAlgorithmMaxCount)                                    \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                         \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)                                         \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)        \
  X(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount)                                  \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                       \
  X(cudnnFindConvolutionBackwardFilterAlgorithmEx)                                       \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter)

#define KILN_CUFFT_FUNCTIONS(X)                                                          \
  X(cufftGetVersion) X(cufftGetProperty) X(cufftCreate) X(cufftDestroy)                  \
  X(cufftSetAutoAllocation) X(cufftMakePlanMany64) X(cufftSetWorkArea) X(cufftSetStream) \
  X(cufftExecC2C) X(cufftExecR2C) X(cufftExecC2R) X(cufftExecZ2Z) X(cufftExecD2Z)        \
  X(cufftExecZ2D)

#define KILN_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
#define KILN_CUDA_DECLARE_TYPED_MEMBER(name, result, params) \
  decltype(static_cast<result(*) params>(&::name)) name = nullptr;

namespace kiln::cuda {

struct CublasApi {
  KILN_CUBLAS_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  KILN_CUBLAS_TYPED_FUNCTIONS(KILN_CUDA_DECLARE_TYPED_MEMBER)
  SharedLibrary library;
  // `library`, else CudaLibraryPaths::cublas (library_loader.h), else libcublas.so.<major of the headers>, libcublas.so.
  static StatusOr<std::shared_ptr<const CublasApi>> Load(const std::string& library = "");
  static StatusOr<std::shared_ptr<const CublasApi>> Default();
  std::string Version() const;  // "13.0.2"
};

struct CublasLtApi {
  KILN_CUBLASLT_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  SharedLibrary library;
  // `library`, else CudaLibraryPaths::cublaslt, else libcublasLt.so.<major of the headers>, libcublasLt.so.
  static StatusOr<std::shared_ptr<const CublasLtApi>> Load(const std::string& library = "");
  static StatusOr<std::shared_ptr<const CublasLtApi>> Default();
  std::string Version() const;
};

struct CufftApi {
  KILN_CUFFT_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  SharedLibrary library;
  // `library`, else CudaLibraryPaths::cufft, else libcufft.so.<CUFFT_VER_MAJOR of the headers>, libcufft.so.
  static StatusOr<std::shared_ptr<const CufftApi>> Load(const std::string& library = "");
  static StatusOr<std::shared_ptr<const CufftApi>> Default();
  std::string Version() const;  // "12.0.0"
};
// OK for CUFFT_SUCCESS, else "cufft: <call>: CUFFT_<NAME>" (cuFFT has no message function).
Status CufftStatus(cufftResult result, std::string_view call);

#if defined(KILN_HAVE_CUDNN_HEADERS)
struct CudnnApi {
  KILN_CUDNN_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  SharedLibrary library;
  // `library`, else CudaLibraryPaths::cudnn, else libcudnn.so.<CUDNN_MAJOR>, libcudnn.so.
  static StatusOr<std::shared_ptr<const CudnnApi>> Load(const std::string& library = "");
  static StatusOr<std::shared_ptr<const CudnnApi>> Default();
  std::string Version() const;
};
Status CudnnStatus(const CudnnApi& api, cudnnStatus_t result, std::string_view call);
#endif

// NCCL: nccl_api.h (declared there, no headers needed).

// OK on success, else "<library>: <call>: <status name> (<status text>)" with a mapped code.
Status CublasStatus(const CublasApi& api, cublasStatus_t result, std::string_view call);
Status CublasLtStatus(const CublasLtApi& api, cublasStatus_t result, std::string_view call);

// Every vendor library kiln looks for, with its version or why it is unusable:
// {"nvrtc", "13.0"}, {"cublas", "13.0.2"}, {"cudnn", "not found (cudnn: libcudnn.so.9 ...)"}.
std::vector<std::pair<std::string, std::string>> VendorLibraryVersions();

}  // namespace kiln::cuda

#undef KILN_CUDA_DECLARE_MEMBER
#undef KILN_CUDA_DECLARE_TYPED_MEMBER
