// ROCm streams, events, modules, kernels and the uncached allocators (Note [Untested ROCm
// execution] in rocm_device.h).
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/rocm/rocm_device.h"

namespace kiln::rocm {

using runtime::AllocatorStats;
using runtime::DeviceMemory;
using runtime::MemoryKind;

namespace {

hipDeviceptr_t Ptr(const DeviceMemory& m) { return m.ptr; }

void RunHostCallback(hipStream_t, hipError_t, void* data) {
  auto* callback = static_cast<std::function<void()>*>(data);
  (*callback)();
  delete callback;
}

std::string ForTag(std::string_view tag) {
  return tag.empty() ? std::string() : StrCat(" for '", tag, "'");
}

}  // namespace

// ---- streams ----

RocmStream::~RocmStream() {
  const HipApi& api = device_.api();
  Status status = device_.Activate();
  if (status.ok()) status = KILN_HIP(api, hipStreamSynchronize(stream_));
  Status destroyed = KILN_HIP(api, hipStreamDestroy(stream_));
  if (!status.ok() || !destroyed.ok()) {
    KILN_LOG(Warning) << "destroying a rocm stream: " << (status.ok() ? destroyed : status).ToString();
  }
}

runtime::Device& RocmStream::device() const { return device_; }

Status RocmStream::Launch(const runtime::Kernel& kernel, const runtime::LaunchDims& dims,
                          const runtime::KernelArgs& args) {
  const auto* rocm_kernel = dynamic_cast<const RocmKernel*>(&kernel);
  if (rocm_kernel == nullptr) {
    return InvalidArgument("kernel '", kernel.name(), "' was not loaded by the rocm driver");
  }
  if (&rocm_kernel->rocm_device() != &device_) {
    return InvalidArgument("kernel '", kernel.name(), "' belongs to another device");
  }
  KILN_RETURN_IF_ERROR(runtime::CheckLaunchDims(device_.description(), kernel.name(), dims,
                                                device_.description().max_threads_per_block));
  KILN_RETURN_IF_ERROR(device_.Activate());
  Status status = KILN_HIP(
      device_.api(),
      hipModuleLaunchKernel(rocm_kernel->handle(), dims.grid.x, dims.grid.y, dims.grid.z,
                            dims.block.x, dims.block.y, dims.block.z, dims.shared_memory_bytes,
                            stream_, args.pointers(), nullptr));
  if (!status.ok()) {
    return status.WithContext(StrCat("launching '", kernel.name(), "' grid ",
                                     dims.grid.ToString(), " block ", dims.block.ToString(),
                                     " shared ", dims.shared_memory_bytes));
  }
  return OkStatus();
}

Status RocmStream::MemcpyHostToDevice(DeviceMemory dst, const void* src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, bytes, "host-to-device copy"));
  if (bytes == 0) return OkStatus();
  if (src == nullptr) return InvalidArgument("host-to-device copy: null host pointer");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(),
                  hipMemcpyHtoDAsync(Ptr(dst), const_cast<void*>(src), bytes, stream_));
}

Status RocmStream::MemcpyDeviceToHost(void* dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(src, bytes, "device-to-host copy"));
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return InvalidArgument("device-to-host copy: null host pointer");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipMemcpyDtoHAsync(dst, Ptr(src), bytes, stream_));
}

Status RocmStream::MemcpyDeviceToDevice(DeviceMemory dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, bytes, "device-to-device copy (destination)"));
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(src, bytes, "device-to-device copy (source)"));
  if (bytes == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipMemcpyDtoDAsync(Ptr(dst), Ptr(src), bytes, stream_));
}

Status RocmStream::Memset8(DeviceMemory dst, uint8_t value) {
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, dst.size, "memset"));
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipMemsetD8Async(Ptr(dst), value, dst.size, stream_));
}

Status RocmStream::Memset32(DeviceMemory dst, uint32_t value) {
  if (dst.size % 4 != 0 || dst.address() % 4 != 0) {
    return InvalidArgument("32-bit memset needs a 4-byte aligned address and a size that is a "
                           "multiple of 4, got ",
                           dst.size, " bytes");
  }
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(runtime::CheckDeviceRange(dst, dst.size, "memset"));
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(),
                  hipMemsetD32Async(Ptr(dst), static_cast<int>(value), dst.size / 4, stream_));
}

Status RocmStream::RecordEvent(runtime::Event& event) {
  auto* rocm_event = dynamic_cast<RocmEvent*>(&event);
  if (rocm_event == nullptr) return InvalidArgument("event was not created by the rocm driver");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipEventRecord(rocm_event->handle(), stream_));
}

Status RocmStream::WaitEvent(runtime::Event& event) {
  auto* rocm_event = dynamic_cast<RocmEvent*>(&event);
  if (rocm_event == nullptr) return InvalidArgument("event was not created by the rocm driver");
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipStreamWaitEvent(stream_, rocm_event->handle(), 0));
}

// HIP 5.x has no hipLaunchHostFunc; hipStreamAddCallback (in 5.x and 6.x) runs after the
// stream's earlier work, which is the contract of runtime::Stream.
Status RocmStream::AddHostCallback(std::function<void()> callback) {
  if (!callback) return InvalidArgument("empty host callback");
  KILN_RETURN_IF_ERROR(device_.Activate());
  auto* heap = new std::function<void()>(std::move(callback));
  Status status =
      KILN_HIP(device_.api(), hipStreamAddCallback(stream_, RunHostCallback, heap, 0));
  if (!status.ok()) delete heap;  // never enqueued, so never run
  return status;
}

Status RocmStream::Synchronize() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipStreamSynchronize(stream_));
}

StatusOr<bool> RocmStream::IsIdle() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  hipError_t result = device_.api().hipStreamQuery(stream_);
  if (result == hipSuccess) return true;
  if (result == hipErrorNotReady) return false;
  return HipStatus(device_.api(), result, "hipStreamQuery(stream)");
}

// ---- events ----

RocmEvent::~RocmEvent() {
  Status status = device_.Activate();
  if (status.ok()) status = KILN_HIP(device_.api(), hipEventDestroy(event_));
  if (!status.ok()) {
    KILN_LOG(Warning) << "destroying a rocm event: " << status.ToString();
  }
}

StatusOr<bool> RocmEvent::IsComplete() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  hipError_t result = device_.api().hipEventQuery(event_);
  if (result == hipSuccess) return true;
  if (result == hipErrorNotReady) return false;
  return HipStatus(device_.api(), result, "hipEventQuery(event)");
}

Status RocmEvent::Synchronize() {
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_HIP(device_.api(), hipEventSynchronize(event_));
}

StatusOr<float> RocmEvent::ElapsedMillisSince(const runtime::Event& start) const {
  const auto* begin = dynamic_cast<const RocmEvent*>(&start);
  if (begin == nullptr) return InvalidArgument("elapsed time between events of different drivers");
  if (!timing_enabled() || !begin->timing_enabled()) {
    return FailedPrecondition("elapsed time needs events created with enable_timing");
  }
  KILN_RETURN_IF_ERROR(device_.Activate());
  float ms = 0;
  KILN_RETURN_IF_ERROR(KILN_HIP(device_.api(), hipEventElapsedTime(&ms, begin->handle(), event_)));
  return ms;
}

// ---- modules and kernels ----

RocmModule::~RocmModule() {
  kernels_.clear();
  Status status = device_.Activate();
  if (status.ok()) status = KILN_HIP(device_.api(), hipModuleUnload(module_));
  if (!status.ok()) {
    KILN_LOG(Warning) << "unloading module '" << name_ << "': " << status.ToString();
  }
}

StatusOr<runtime::Kernel*> RocmModule::GetKernel(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second.get();
  KILN_RETURN_IF_ERROR(device_.Activate());
  std::string key(name);
  hipFunction_t function;
  hipError_t result = device_.api().hipModuleGetFunction(&function, module_, key.c_str());
  if (result == hipErrorNotFound) {
    return NotFound("no kernel '", name, "' in code object '", name_,
                    "' (C++ kernels need their mangled name, or extern \"C\")");
  }
  KILN_RETURN_IF_ERROR(HipStatus(device_.api(), result, StrCat("hipModuleGetFunction(", key, ")")));
  auto kernel = std::make_unique<RocmKernel>(device_, key, function);
  runtime::Kernel* out = kernel.get();
  kernels_.emplace(std::move(key), std::move(kernel));
  return out;
}

StatusOr<runtime::KernelAttributes> RocmKernel::GetAttributes() const {
  KILN_RETURN_IF_ERROR(device_.Activate());
  const HipApi& api = device_.api();
  auto get = [&](hipFunction_attribute attribute, int& out) -> Status {
    return KILN_HIP(api, hipFuncGetAttribute(&out, attribute, function_));
  };
  runtime::KernelAttributes a;
  int shared = 0, local = 0;
  KILN_RETURN_IF_ERROR(get(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, a.max_threads_per_block));
  KILN_RETURN_IF_ERROR(get(HIP_FUNC_ATTRIBUTE_NUM_REGS, a.registers_per_thread));
  KILN_RETURN_IF_ERROR(get(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, shared));
  KILN_RETURN_IF_ERROR(get(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, local));
  a.static_shared_memory_bytes = static_cast<uint64_t>(shared);
  a.local_memory_bytes = static_cast<uint64_t>(local);
  return a;
}

StatusOr<int> RocmKernel::MaxActiveBlocksPerMultiprocessor(int block_size,
                                                           uint64_t dynamic_shared) const {
  KILN_RETURN_IF_ERROR(device_.Activate());
  int blocks = 0;
  KILN_RETURN_IF_ERROR(KILN_HIP(device_.api(), hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
                                                   &blocks, function_, block_size, dynamic_shared)));
  return blocks;
}

Status RocmKernel::SetMaxDynamicSharedMemory(uint64_t bytes) {
  uint64_t limit = device_.description().shared_memory_per_block_optin;
  if (limit != 0 && bytes > limit) {
    return InvalidArgument("kernel '", name_, "': ", bytes,
                           " bytes of dynamic LDS exceed the device's limit of ", limit);
  }
  return OkStatus();
}

// ---- allocators ----

RocmRawAllocator::~RocmRawAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_.empty()) return;
  KILN_LOG(Warning) << name_ << " destroyed with " << live_.size() << " live allocation(s)";
  if (!device_.Activate().ok()) return;
  for (const auto& [address, size] : live_) {
    void* p = reinterpret_cast<void*>(address);
    if (kind_ == MemoryKind::kDevice) (void)device_.api().hipFree(p);
    else (void)device_.api().hipHostFree(p);
  }
}

StatusOr<DeviceMemory> RocmRawAllocator::DoAllocate(uint64_t bytes, std::string_view tag) {
  KILN_RETURN_IF_ERROR(device_.Activate());
  void* ptr = nullptr;
  Status status = kind_ == MemoryKind::kDevice
                      ? KILN_HIP(device_.api(), hipMalloc(&ptr, bytes))
                      : KILN_HIP(device_.api(), hipHostMalloc(&ptr, bytes, hipHostMallocPortable));
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_ooms;
    std::string usage;
    size_t free = 0, total = 0;
    if (kind_ == MemoryKind::kDevice && device_.api().hipMemGetInfo(&free, &total) == hipSuccess) {
      usage = StrCat(" (device memory free ", HumanBytes(free), " of ", HumanBytes(total), ")");
    }
    return Status(status.code(), StrCat(name_, ": allocating ", HumanBytes(bytes), ForTag(tag),
                                        usage, ": ", status.message()));
  }
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  live_[address] = bytes;
  stats_.bytes_in_use += bytes;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_reserved = stats_.peak_bytes_in_use;
  ++stats_.num_allocs;
  stats_.num_live_allocs = live_.size();
  return DeviceMemory{ptr, bytes};
}

Status RocmRawAllocator::DoDeallocate(DeviceMemory memory) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(memory.address());
    if (it == live_.end()) {
      return InvalidArgument(name_, ": deallocating ", memory.ptr,
                             ", which is not a live allocation (double free?)");
    }
    stats_.bytes_in_use -= it->second;
    stats_.bytes_reserved = stats_.bytes_in_use;
    live_.erase(it);
    stats_.num_live_allocs = live_.size();
  }
  KILN_RETURN_IF_ERROR(device_.Activate());
  if (kind_ == MemoryKind::kDevice) return KILN_HIP(device_.api(), hipFree(memory.ptr));
  return KILN_HIP(device_.api(), hipHostFree(memory.ptr));
}

std::optional<AllocatorStats> RocmRawAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace kiln::rocm
