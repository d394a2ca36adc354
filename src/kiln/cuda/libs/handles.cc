#include "kiln/cuda/libs/handles.h"

#include "kiln/base/strings.h"

namespace kiln::cuda::libs {

namespace {

struct Registry {
  std::mutex mu;
  std::map<const CudaDevice*, std::unique_ptr<LibraryHandles>> handles;
};
Registry& GetRegistry() {
  static auto* registry = new Registry;  // never destroyed: see the header
  return *registry;
}

}  // namespace

StatusOr<LibraryHandles*> LibraryHandles::ForDevice(CudaDevice& device) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  if (auto it = registry.handles.find(&device); it != registry.handles.end()) {
    return it->second.get();
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const CublasLtApi> lt_api, CublasLtApi::Default());
  KILN_RETURN_IF_ERROR(device.Activate());
  cublasLtHandle_t lt_handle = nullptr;
  KILN_RETURN_IF_ERROR(CublasLtStatus(*lt_api, lt_api->cublasLtCreate(&lt_handle),
                                      "cublasLtCreate(&handle)"));
  std::unique_ptr<LibraryHandles> handles(
      new LibraryHandles(device, std::move(lt_api), lt_handle));
  LibraryHandles* out = handles.get();
  registry.handles.emplace(&device, std::move(handles));
  return out;
}

StatusOr<const CublasApi*> LibraryHandles::cublas_api() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cublas_api_ == nullptr) {
    KILN_ASSIGN_OR_RETURN(cublas_api_, CublasApi::Default());
  }
  return cublas_api_.get();
}

StatusOr<cublasHandle_t> LibraryHandles::Cublas(runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(CUstream cu_stream, CudaStreamHandle(stream, device_));
  KILN_ASSIGN_OR_RETURN(const CublasApi* api, cublas_api());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cublas_.find(cu_stream); it != cublas_.end()) return it->second;
  KILN_RETURN_IF_ERROR(device_.Activate());
  cublasHandle_t handle = nullptr;
  KILN_RETURN_IF_ERROR(CublasStatus(*api, api->cublasCreate(&handle), "cublasCreate(&handle)"));
  Status status = CublasStatus(*api, api->cublasSetStream(handle, cu_stream),
                               "cublasSetStream(handle, stream)");
  if (!status.ok()) {
    api->cublasDestroy(handle);
    return status;
  }
  cublas_.emplace(cu_stream, handle);
  return handle;
}

StatusOr<const CusolverApi*> LibraryHandles::cusolver_api() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cusolver_api_ == nullptr) {
    KILN_ASSIGN_OR_RETURN(cusolver_api_, CusolverApi::Default());
  }
  return cusolver_api_.get();
}

StatusOr<cusolverDnHandle_t> LibraryHandles::Cusolver(runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(CUstream cu_stream, CudaStreamHandle(stream, device_));
  KILN_ASSIGN_OR_RETURN(const CusolverApi* api, cusolver_api());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cusolver_.find(cu_stream); it != cusolver_.end()) return it->second;
  KILN_RETURN_IF_ERROR(device_.Activate());
  cusolverDnHandle_t handle = nullptr;
  KILN_RETURN_IF_ERROR(CusolverStatus(api->cusolverDnCreate(&handle), "cusolverDnCreate(&handle)"));
  Status status = CusolverStatus(api->cusolverDnSetStream(handle, cu_stream),
                                 "cusolverDnSetStream(handle, stream)");
  if (!status.ok()) {
    api->cusolverDnDestroy(handle);
    return status;
  }
  cusolver_.emplace(cu_stream, handle);
  return handle;
}

#if defined(KILN_HAVE_CUDNN_HEADERS)
StatusOr<const CudnnApi*> LibraryHandles::cudnn_api() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cudnn_api_ == nullptr) {
    KILN_ASSIGN_OR_RETURN(cudnn_api_, CudnnApi::Default());
  }
  return cudnn_api_.get();
}

StatusOr<cudnnHandle_t> LibraryHandles::Cudnn(runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(CUstream cu_stream, CudaStreamHandle(stream, device_));
  KILN_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cudnn_.find(cu_stream); it != cudnn_.end()) return it->second;
  KILN_RETURN_IF_ERROR(device_.Activate());
  cudnnHandle_t handle = nullptr;
  KILN_RETURN_IF_ERROR(CudnnStatus(*api, api->cudnnCreate(&handle), "cudnnCreate(&handle)"));
  Status status = CudnnStatus(*api, api->cudnnSetStream(handle, cu_stream),
                              "cudnnSetStream(handle, stream)");
  if (!status.ok()) {
    api->cudnnDestroy(handle);
    return status;
  }
  cudnn_.emplace(cu_stream, handle);
  return handle;
}

StatusOr<cudnnHandle_t> LibraryHandles::CudnnForQueries() {
  KILN_ASSIGN_OR_RETURN(const CudnnApi* api, cudnn_api());
  std::lock_guard<std::mutex> lock(mu_);
  if (cudnn_query_ != nullptr) return cudnn_query_;
  KILN_RETURN_IF_ERROR(device_.Activate());
  KILN_RETURN_IF_ERROR(
      CudnnStatus(*api, api->cudnnCreate(&cudnn_query_), "cudnnCreate(&query_handle)"));
  return cudnn_query_;
}
#endif

Status LibraryHandles::PrepareStream(runtime::Stream& stream) {
  // Each library is optional: a missing cuBLAS or cuDNN only matters to plans that use it,
  // and those report it themselves.
  if (cublas_api().ok()) KILN_RETURN_IF_ERROR(Cublas(stream).status());
  // cuSOLVER only once a solver plan loaded it (most executables never call it).
  bool solver_loaded = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    solver_loaded = cusolver_api_ != nullptr;
  }
  if (solver_loaded) KILN_RETURN_IF_ERROR(Cusolver(stream).status());
#if defined(KILN_HAVE_CUDNN_HEADERS)
  if (cudnn_api().ok()) KILN_RETURN_IF_ERROR(Cudnn(stream).status());
#endif
  return OkStatus();
}

StatusOr<CUstream> CudaStreamHandle(runtime::Stream& stream, const CudaDevice& device) {
  if (&stream.device() != &device) {
    return InvalidArgument("the stream belongs to device '", stream.device().description().name,
                           "' (", stream.device().description().platform,
                           "), not to the CUDA device of this plan");
  }
  // Only CudaDevice creates streams whose device() is a CudaDevice.
  return static_cast<CudaStream&>(stream).handle();
}

Status CheckBuffer(const runtime::DeviceMemory& memory, uint64_t bytes, std::string_view what) {
  if (bytes == 0) return OkStatus();
  if (memory.is_null()) return InvalidArgument(what, ": missing buffer (", bytes, " bytes)");
  if (memory.size < bytes) {
    return InvalidArgument(what, ": buffer of ", memory.size, " bytes, needs ", bytes);
  }
  return OkStatus();
}

}  // namespace kiln::cuda::libs
