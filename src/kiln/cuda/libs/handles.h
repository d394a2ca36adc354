// LibraryHandles: the vendor-library handles of one CUDA device, created once and shared by every
// GEMM, convolution, FFT and solver plan on that device.
//
// Stages (see Note [Objects in stages] in ../shared/design/STYLE.md): plans are created in the
// compiler's Initialize stage, and so are the handles: ForDevice() creates the cuBLASLt handle;
// PrepareStream() creates the per-stream cuBLAS and cuDNN handles (and cuSOLVER's, once a solver
// plan has loaded cuSOLVER: Cusolver() below) that Execute-stage calls then
// only look up. A handle missing at Execute time is still created there (correct, but slow the
// first time): executables should call PrepareStream for each stream they run on.
//
// cuBLAS, cuDNN and cuSOLVER handles carry a stream, and a handle must not be used by two threads at once;
// kiln keeps one of each per (device, stream), so concurrent runs on different streams never
// share one. Runs on one stream from several threads at once are a caller bug (as with any
// stream). The cuBLASLt handle is stream-less and thread-safe; one per device.
//
// Lifetime: the registry is process-wide and never destroyed (vendor handles are not destroyed
// at exit: the driver may already be gone by then). A device's handles live as long as the
// process; the device (its platform) must therefore outlive every use.
//
// Every call makes the device's primary context current on the calling thread first.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <memory>
#include <mutex>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/vendor_apis.h"

namespace kiln::cuda::libs {

class LibraryHandles {
 public:
  // The handles of `device`, created on the first call (loads cuBLASLt, creates its handle).
  // Fails with the loader's status where cuBLASLt is absent.
  static StatusOr<LibraryHandles*> ForDevice(CudaDevice& device);

  CudaDevice& device() const { return device_; }
  const CublasLtApi& lt_api() const { return *lt_api_; }
  cublasLtHandle_t lt_handle() const { return lt_handle_; }

  // Creates this stream's cuBLAS and cuDNN handles (where those libraries load). Idempotent.
  Status PrepareStream(runtime::Stream& stream);

  // The library APIs (loaded on first use; the status says why one is unusable).
  StatusOr<const CublasApi*> cublas_api();
  StatusOr<const CusolverApi*> cusolver_api();
#if defined(KILN_HAVE_CUDNN_HEADERS)
  StatusOr<const CudnnApi*> cudnn_api();
#endif

  // The stream's handle, bound to it; created on first use (see the header comment).
  StatusOr<cublasHandle_t> Cublas(runtime::Stream& stream);
  StatusOr<cusolverDnHandle_t> Cusolver(runtime::Stream& stream);
#if defined(KILN_HAVE_CUDNN_HEADERS)
  StatusOr<cudnnHandle_t> Cudnn(runtime::Stream& stream);
  // A cuDNN handle for heuristics and workspace queries only (never launches work); shared by
  // the device's plans under the caller's own lock: use it under QueryLock().
  StatusOr<cudnnHandle_t> CudnnForQueries();
  std::unique_lock<std::mutex> QueryLock() { return std::unique_lock<std::mutex>(query_mu_); }
#endif

 private:
  LibraryHandles(CudaDevice& device, std::shared_ptr<const CublasLtApi> lt_api,
                 cublasLtHandle_t lt_handle)
      : device_(device), lt_api_(std::move(lt_api)), lt_handle_(lt_handle) {}

  CudaDevice& device_;
  std::shared_ptr<const CublasLtApi> lt_api_;
  cublasLtHandle_t lt_handle_;

  std::mutex mu_;
  std::shared_ptr<const CublasApi> cublas_api_;
  std::map<CUstream, cublasHandle_t> cublas_;
  std::shared_ptr<const CusolverApi> cusolver_api_;
  std::map<CUstream, cusolverDnHandle_t> cusolver_;
#if defined(KILN_HAVE_CUDNN_HEADERS)
  std::shared_ptr<const CudnnApi> cudnn_api_;
  std::map<CUstream, cudnnHandle_t> cudnn_;
  cudnnHandle_t cudnn_query_ = nullptr;
  std::mutex query_mu_;
#endif
};

// The CUstream of a runtime stream, or InvalidArgument when it is not a CUDA stream of `device`.
StatusOr<CUstream> CudaStreamHandle(runtime::Stream& stream, const CudaDevice& device);

// InvalidArgument unless `memory` holds at least `bytes` bytes (and is non-null when bytes > 0).
Status CheckBuffer(const runtime::DeviceMemory& memory, uint64_t bytes, std::string_view what);

}  // namespace kiln::cuda::libs
