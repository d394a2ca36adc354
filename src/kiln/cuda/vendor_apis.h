// cuBLAS, cuBLASLt, cuDNN, cuFFT and cuSOLVER (its dense API), loaded at run time (see library_loader.h for how the lists
// become typed members). Each list holds what kiln calls today; add names as backends need them.
// cuDNN is compiled in only when its headers are present beside the toolkit's
// (KILN_HAVE_CUDNN_HEADERS below); NCCL needs no headers (nccl_api.h).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cufft.h>
#include <cusolverDn.h>

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
  X(cublasDestroy) X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetMathMode)         \
  X(cublasSetPointerMode) X(cublasGetPointerMode)                                         \
  /* the solver layer (libs/solver.h): transposes, triangular solves, syrk */             \
  X(cublasSgeam) X(cublasDgeam) X(cublasCgeam) X(cublasZgeam)                             \
  X(cublasStrsm) X(cublasDtrsm) X(cublasCtrsm) X(cublasZtrsm)                             \
  X(cublasSsyrk) X(cublasDsyrk) X(cublasCsyrk) X(cublasZsyrk)

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

// cuSOLVER's dense API (cusolverDn.h), the legacy 32-bit routines per type (S, D, C, Z): what
// libs/solver.h calls. The complex forms of orgqr, syevd and sytrd are ungqr, heevd and hetrd.
#define KILN_CUSOLVER_FUNCTIONS(X)                                                        \
  X(cusolverGetProperty) X(cusolverDnCreate) X(cusolverDnDestroy) X(cusolverDnSetStream)  \
  X(cusolverDnSpotrf_bufferSize) X(cusolverDnDpotrf_bufferSize)                           \
  X(cusolverDnCpotrf_bufferSize) X(cusolverDnZpotrf_bufferSize)                           \
  X(cusolverDnSpotrf) X(cusolverDnDpotrf) X(cusolverDnCpotrf) X(cusolverDnZpotrf)         \
  X(cusolverDnSgetrf_bufferSize) X(cusolverDnDgetrf_bufferSize)                           \
  X(cusolverDnCgetrf_bufferSize) X(cusolverDnZgetrf_bufferSize)                           \
  X(cusolverDnSgetrf) X(cusolverDnDgetrf) X(cusolverDnCgetrf) X(cusolverDnZgetrf)         \
  X(cusolverDnSgeqrf_bufferSize) X(cusolverDnDgeqrf_bufferSize)                           \
  X(cusolverDnCgeqrf_bufferSize) X(cusolverDnZgeqrf_bufferSize)                           \
  X(cusolverDnSgeqrf) X(cusolverDnDgeqrf) X(cusolverDnCgeqrf) X(cusolverDnZgeqrf)         \
  X(cusolverDnSorgqr_bufferSize) X(cusolverDnDorgqr_bufferSize)                           \
  X(cusolverDnCungqr_bufferSize) X(cusolverDnZungqr_bufferSize)                           \
  X(cusolverDnSorgqr) X(cusolverDnDorgqr) X(cusolverDnCungqr) X(cusolverDnZungqr)         \
  X(cusolverDnSsyevd_bufferSize) X(cusolverDnDsyevd_bufferSize)                           \
  X(cusolverDnCheevd_bufferSize) X(cusolverDnZheevd_bufferSize)                           \
  X(cusolverDnSsyevd) X(cusolverDnDsyevd) X(cusolverDnCheevd) X(cusolverDnZheevd)         \
  X(cusolverDnSsytrd_bufferSize) X(cusolverDnDsytrd_bufferSize)                           \
  X(cusolverDnChetrd_bufferSize) X(cusolverDnZhetrd_bufferSize)                           \
  X(cusolverDnSsytrd) X(cusolverDnDsytrd) X(cusolverDnChetrd) X(cusolverDnZhetrd)         \
  X(cusolverDnSgesvd_bufferSize) X(cusolverDnDgesvd_bufferSize)                           \
  X(cusolverDnCgesvd_bufferSize) X(cusolverDnZgesvd_bufferSize)                           \
  X(cusolverDnSgesvd) X(cusolverDnDgesvd) X(cusolverDnCgesvd) X(cusolverDnZgesvd)         \
  X(cusolverDnCreateGesvdjInfo) X(cusolverDnDestroyGesvdjInfo)                            \
  X(cusolverDnSgesvdj_bufferSize) X(cusolverDnDgesvdj_bufferSize)                         \
  X(cusolverDnCgesvdj_bufferSize) X(cusolverDnZgesvdj_bufferSize)                         \
  X(cusolverDnSgesvdj) X(cusolverDnDgesvdj) X(cusolverDnCgesvdj) X(cusolverDnZgesvdj)

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

struct CusolverApi {
  KILN_CUSOLVER_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  SharedLibrary library;
  // `library`, else CudaLibraryPaths::cusolver, else libcusolver.so.<CUSOLVER_VER_MAJOR of the
  // headers>, libcusolver.so. Absent: NotFound "cusolver: ..." naming the candidates tried.
  static StatusOr<std::shared_ptr<const CusolverApi>> Load(const std::string& library = "");
  static StatusOr<std::shared_ptr<const CusolverApi>> Default();
  std::string Version() const;  // "12.0.4"
};
// OK for CUSOLVER_STATUS_SUCCESS, else "cusolver: <call>: CUSOLVER_STATUS_<NAME>" (cuSOLVER has
// no message function).
Status CusolverStatus(cusolverStatus_t result, std::string_view call);

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
// {"nvrtc", "13.0"}, {"cublas", "13.0.2"}, ... {"cusolver", "12.0.4"},
// {"cudnn", "not found (cudnn: libcudnn.so.9 ...)"}.
std::vector<std::pair<std::string, std::string>> VendorLibraryVersions();

}  // namespace kiln::cuda

#undef KILN_CUDA_DECLARE_MEMBER
#undef KILN_CUDA_DECLARE_TYPED_MEMBER
