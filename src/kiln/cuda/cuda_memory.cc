// CUDA allocators: uncached device memory, pinned host memory, stream-ordered pools.
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"

namespace kiln::cuda {

using runtime::AllocatorStats;
using runtime::DeviceMemory;
using runtime::MemoryKind;

namespace {

std::string ForTag(std::string_view tag) {
  return tag.empty() ? std::string() : StrCat(" for '", tag, "'");
}

// Adds "(free X of Y)" to an out-of-memory error from the driver.
Status WithMemoryInfo(CudaDevice& device, Status status, std::string_view what, uint64_t bytes,
                      std::string_view tag) {
  if (status.code() != StatusCode::kResourceExhausted) return status;
  size_t free = 0, total = 0;
  std::string usage;
  if (device.api().cuMemGetInfo(&free, &total) == CUDA_SUCCESS) {
    usage = StrCat(" (device memory free ", HumanBytes(free), " of ", HumanBytes(total), ")");
  }
  return ResourceExhausted(what, ": out of memory allocating ", HumanBytes(bytes), ForTag(tag),
                           usage, ": ", status.message());
}

}  // namespace

CudaRawAllocator::~CudaRawAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_.empty()) return;
  KILN_LOG(Warning) << name_ << " destroyed with " << live_.size() << " live allocation(s)";
  if (!device_.Activate().ok()) return;
  for (const auto& [address, size] : live_) {
    if (kind_ == MemoryKind::kDevice) {
      (void)device_.api().cuMemFree(static_cast<CUdeviceptr>(address));
    } else {
      (void)device_.api().cuMemFreeHost(reinterpret_cast<void*>(address));
    }
  }
}

StatusOr<DeviceMemory> CudaRawAllocator::DoAllocate(uint64_t bytes, std::string_view tag) {
  KILN_RETURN_IF_ERROR(device_.Activate());
  uint64_t address = 0;
  if (kind_ == MemoryKind::kDevice) {
    CUdeviceptr ptr = 0;
    Status status = KILN_CU(device_.api(), cuMemAlloc(&ptr, bytes));
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.num_ooms;
      return WithMemoryInfo(device_, status, name_, bytes, tag);
    }
    address = ptr;
  } else {
    void* ptr = nullptr;
    Status status =
        KILN_CU(device_.api(), cuMemHostAlloc(&ptr, bytes, CU_MEMHOSTALLOC_PORTABLE));
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.num_ooms;
      return Status(status.code(), StrCat(name_, ": allocating ", HumanBytes(bytes), ForTag(tag),
                                          ": ", status.message()));
    }
    address = reinterpret_cast<uint64_t>(ptr);
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_[address] = bytes;
  stats_.bytes_in_use += bytes;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_reserved = stats_.peak_bytes_in_use;
  ++stats_.num_allocs;
  stats_.num_live_allocs = live_.size();
  return DeviceMemory{reinterpret_cast<void*>(address), bytes};
}

Status CudaRawAllocator::DoDeallocate(DeviceMemory memory) {
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
  if (kind_ == MemoryKind::kDevice) {
    return KILN_CU(device_.api(), cuMemFree(static_cast<CUdeviceptr>(memory.address())));
  }
  return KILN_CU(device_.api(), cuMemFreeHost(memory.ptr));
}

std::optional<AllocatorStats> CudaRawAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

StatusOr<std::unique_ptr<CudaStreamOrderedAllocator>> CudaStreamOrderedAllocator::Create(
    CudaDevice& device, const runtime::StreamOrderedAllocatorOptions& options) {
  if (!device.description().supports_stream_ordered_allocation) {
    return Unimplemented("cuda:", device.ordinal(), " (", device.description().name,
                         ") does not support memory pools (stream-ordered allocation)");
  }
  KILN_RETURN_IF_ERROR(device.Activate());
  const DriverApi& api = device.api();
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device.ordinal();
  CUmemoryPool pool;
  KILN_RETURN_IF_ERROR(KILN_CU(api, cuMemPoolCreate(&pool, &props)));
  cuuint64_t threshold = options.release_threshold_bytes;
  Status status =
      KILN_CU(api, cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CUstream stream = nullptr;
  if (status.ok()) {
    status = KILN_CU(api, cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0));
  }
  if (!status.ok()) {
    (void)api.cuMemPoolDestroy(pool);
    return status;
  }
  return std::unique_ptr<CudaStreamOrderedAllocator>(
      new CudaStreamOrderedAllocator(device, pool, stream));
}

CudaStreamOrderedAllocator::CudaStreamOrderedAllocator(CudaDevice& device, CUmemoryPool pool,
                                                       CUstream stream)
    : device_(device),
      pool_(pool),
      private_stream_(stream),
      name_(StrCat("cuda:", device.ordinal(), ":stream-ordered")) {}

CudaStreamOrderedAllocator::~CudaStreamOrderedAllocator() {
  const DriverApi& api = device_.api();
  if (!device_.Activate().ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!live_.empty()) {
    KILN_LOG(Warning) << name_ << " destroyed with " << live_.size() << " live allocation(s)";
    for (const auto& [address, size] : live_) {
      (void)api.cuMemFreeAsync(static_cast<CUdeviceptr>(address), private_stream_);
    }
  }
  (void)api.cuStreamSynchronize(private_stream_);
  (void)api.cuStreamDestroy(private_stream_);
  // Frees issued on user streams may still be pending; the driver defers the pool's
  // destruction until they complete.
  (void)api.cuMemPoolDestroy(pool_);
}

StatusOr<DeviceMemory> CudaStreamOrderedAllocator::AllocateOn(uint64_t bytes, CUstream stream,
                                                              std::string_view tag) {
  if (bytes == 0) return DeviceMemory{};
  KILN_RETURN_IF_ERROR(device_.Activate());
  CUdeviceptr ptr = 0;
  Status status = KILN_CU(device_.api(), cuMemAllocFromPoolAsync(&ptr, bytes, pool_, stream));
  std::lock_guard<std::mutex> lock(mu_);
  if (!status.ok()) {
    ++num_ooms_;
    return WithMemoryInfo(device_, status, name_, bytes, tag);
  }
  live_[ptr] = bytes;
  ++num_allocs_;
  return DeviceMemory{reinterpret_cast<void*>(ptr), bytes};
}

Status CudaStreamOrderedAllocator::DeallocateOn(DeviceMemory memory, CUstream stream) {
  if (memory.is_null()) return OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(memory.address());
    if (it == live_.end()) {
      return InvalidArgument(name_, ": deallocating ", memory.ptr,
                             ", which is not a live allocation (double free?)");
    }
    live_.erase(it);
  }
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(), cuMemFreeAsync(static_cast<CUdeviceptr>(memory.address()), stream));
}

namespace {
StatusOr<CUstream> StreamHandle(CudaDevice& device, runtime::Stream& stream) {
  auto* cuda_stream = dynamic_cast<CudaStream*>(&stream);
  if (cuda_stream == nullptr) return InvalidArgument("stream was not created by the cuda driver");
  if (&cuda_stream->device() != &device) {
    return InvalidArgument("stream belongs to another device");
  }
  return cuda_stream->handle();
}
}  // namespace

StatusOr<DeviceMemory> CudaStreamOrderedAllocator::AllocateOnStream(uint64_t bytes,
                                                                    runtime::Stream& stream,
                                                                    std::string_view tag) {
  KILN_ASSIGN_OR_RETURN(CUstream handle, StreamHandle(device_, stream));
  return AllocateOn(bytes, handle, tag);
}

Status CudaStreamOrderedAllocator::DeallocateOnStream(DeviceMemory memory,
                                                      runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(CUstream handle, StreamHandle(device_, stream));
  return DeallocateOn(memory, handle);
}

StatusOr<DeviceMemory> CudaStreamOrderedAllocator::DoAllocate(uint64_t bytes,
                                                              std::string_view tag) {
  KILN_ASSIGN_OR_RETURN(DeviceMemory memory, AllocateOn(bytes, private_stream_, tag));
  // Synchronous semantics: the memory must be usable by any stream once this returns.
  KILN_RETURN_IF_ERROR(KILN_CU(device_.api(), cuStreamSynchronize(private_stream_)));
  return memory;
}

Status CudaStreamOrderedAllocator::DoDeallocate(DeviceMemory memory) {
  KILN_RETURN_IF_ERROR(DeallocateOn(memory, private_stream_));
  return KILN_CU(device_.api(), cuStreamSynchronize(private_stream_));
}

std::optional<AllocatorStats> CudaStreamOrderedAllocator::GetStats() const {
  AllocatorStats stats;
  if (!device_.Activate().ok()) return std::nullopt;
  const DriverApi& api = device_.api();
  auto get = [&](CUmemPool_attribute attribute) -> uint64_t {
    cuuint64_t value = 0;
    if (api.cuMemPoolGetAttribute(pool_, attribute, &value) != CUDA_SUCCESS) return 0;
    return value;
  };
  stats.bytes_in_use = get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  stats.peak_bytes_in_use = get(CU_MEMPOOL_ATTR_USED_MEM_HIGH);
  stats.bytes_reserved = get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  stats.peak_bytes_reserved = get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
  std::lock_guard<std::mutex> lock(mu_);
  stats.num_allocs = num_allocs_;
  stats.num_live_allocs = live_.size();
  stats.num_ooms = num_ooms_;
  return stats;
}

}  // namespace kiln::cuda
