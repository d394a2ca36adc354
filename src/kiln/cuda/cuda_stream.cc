// CUDA streams and events.
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"

namespace kiln::cuda {

using runtime::DeviceMemory;

namespace {

CUdeviceptr Ptr(const DeviceMemory& m) { return static_cast<CUdeviceptr>(m.address()); }

void CUDA_CB RunHostCallback(void* data) {
  auto* callback = static_cast<std::function<void()>*>(data);
  (*callback)();
  delete callback;
}

}  // namespace

CudaStream::~CudaStream() {
  const DriverApi& api = device_.api();
  Status status = device_.Activate();
  if (status.ok()) status = KILN_CU(api, cuStreamSynchronize(stream_));
  Status destroyed = KILN_CU(api, cuStreamDestroy(stream_));
  if (!status.ok() || !destroyed.ok()) {
    KILN_LOG(Warning) << "destroying a cuda stream: " << (status.ok() ? destroyed : status).ToString();
  }
}

runtime::Device& CudaStream::device() const { return device_; }

Status CudaStream::Launch(const runtime::Kernel& kernel, const runtime::LaunchDims& dims,
                          const runtime::KernelArgs& args) {
  const auto* cuda_kernel = dynamic_cast<const CudaKernel*>(&kernel);
  if (cuda_kernel == nullptr) {
    return InvalidArgument("kernel '", kernel.name(), "' was not loaded by the cuda driver");
  }
  if (&cuda_kernel->cuda_device() != &device_) {
    return InvalidArgument("kernel '", kernel.name(), "' belongs to another device");
  }
  KILN_RETURN_IF_ERROR(runtime::CheckLaunchDims(device_.description(), kernel.name(), dims,
                                                device_.description().max_threads_per_block));
  KILN_RETURN_IF_ERROR(device_.Activate());
  Status status = KILN_CU(
      device_.api(),
      cuLaunchKernel(cuda_kernel->handle(), dims.grid.x, dims.grid.y, dims.grid.z, dims.block.x,
                     dims.block.y, dims.block.z, dims.shared_memory_bytes, stream_,
                     args.pointers(), nullptr));
  if (!status.ok()) {
    return status.WithContext(StrCat("launching '", kernel.name(), "' grid ",
                                     dims.grid.ToString(), " block ", dims.block.ToString(),
                                     " shared ", dims.shared_memory_bytes));
  }
  return OkStatus();
}

Status CudaStream::MemcpyHostToDevice(DeviceMemory dst, const void* src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, bytes, "host-to-device copy"));
  if (bytes == 0) return OkStatus();
  if (src == nullptr) return InvalidArgument("host-to-device copy: null host pointer");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemcpyHtoDAsync(Ptr(dst), src, bytes, stream_));
}

Status CudaStream::MemcpyDeviceToHost(void* dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(src, bytes, "device-to-host copy"));
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return InvalidArgument("device-to-host copy: null host pointer");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemcpyDtoHAsync(dst, Ptr(src), bytes, stream_));
}

Status CudaStream::MemcpyDeviceToDevice(DeviceMemory dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, bytes, "device-to-device copy (destination)"));
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(src, bytes, "device-to-device copy (source)"));
  if (bytes == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemcpyDtoDAsync(Ptr(dst), Ptr(src), bytes, stream_));
}

Status CudaStream::Memset8(DeviceMemory dst, uint8_t value) {
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, dst.size, "memset"));
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemsetD8Async(Ptr(dst), value, dst.size, stream_));
}

Status CudaStream::Memset32(DeviceMemory dst, uint32_t value) {
  if (dst.size % 4 != 0 || dst.address() % 4 != 0) {
    return InvalidArgument("32-bit memset needs a 4-byte aligned address and a size that is a "
                           "multiple of 4, got ",
                           dst.size, " bytes");
  }
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, dst.size, "memset"));
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemsetD32Async(Ptr(dst), value, dst.size / 4, stream_));
}

Status CudaStream::RecordEvent(runtime::Event& event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(&event);
  if (cuda_event == nullptr) return InvalidArgument("event was not created by the cuda driver");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuEventRecord(cuda_event->handle(), stream_));
}

Status CudaStream::WaitEvent(runtime::Event& event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(&event);
  if (cuda_event == nullptr) return InvalidArgument("event was not created by the cuda driver");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuStreamWaitEvent(stream_, cuda_event->handle(), 0));
}

Status CudaStream::AddHostCallback(std::function<void()> callback) {
  if (!callback) return InvalidArgument("empty host callback");
  KILN_RETURN_IF_ERROR(device_.Activate());
  auto* heap = new std::function<void()>(std::move(callback));
  Status status = KILN_CU(device_.api(), cuLaunchHostFunc(stream_, RunHostCallback, heap));
  if (!status.ok()) delete heap;  // never enqueued, so never run
  return status;
}

Status CudaStream::Synchronize() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuStreamSynchronize(stream_));
}

StatusOr<bool> CudaStream::IsIdle() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  CUresult result = device_.api().cuStreamQuery(stream_);
  if (result == CUDA_SUCCESS) return true;
  if (result == CUDA_ERROR_NOT_READY) return false;
  return CuStatus(device_.api(), result, "cuStreamQuery(stream)");
}

CudaEvent::~CudaEvent() {
  Status status = device_.Activate();
  if (status.ok()) status = KILN_CU(device_.api(), cuEventDestroy(event_));
  if (!status.ok()) {
    KILN_LOG(Warning) << "destroying a cuda event: " << status.ToString();
  }
}

StatusOr<bool> CudaEvent::IsComplete() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  CUresult result = device_.api().cuEventQuery(event_);
  if (result == CUDA_SUCCESS) return true;
  if (result == CUDA_ERROR_NOT_READY) return false;
  return CuStatus(device_.api(), result, "cuEventQuery(event)");
}

Status CudaEvent::Synchronize() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuEventSynchronize(event_));
}

StatusOr<float> CudaEvent::ElapsedMillisSince(const runtime::Event& start) const {
  const auto* begin = dynamic_cast<const CudaEvent*>(&start);
  if (begin == nullptr) return InvalidArgument("elapsed time between events of different drivers");
  if (!timing_enabled() || !begin->timing_enabled()) {
    return FailedPrecondition("elapsed time needs events created with enable_timing");
  }
  KILN_RETURN_IF_ERROR(device_.Activate());
  float ms = 0;
  KILN_RETURN_IF_ERROR(
      KILN_CU(device_.api(), cuEventElapsedTime(&ms, begin->handle(), event_)));
  return ms;
}

}  // namespace kiln::cuda
