// Host platform, devices, memory and module loading.
#include "kiln/runtime/host/host_platform.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/runtime/host/host_internal.h"

namespace kiln::runtime {
namespace host_internal {

namespace {

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string CpuInfoField(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (StripWhitespace(std::string_view(line).substr(0, colon)) == key) {
      return std::string(StripWhitespace(std::string_view(line).substr(colon + 1)));
    }
  }
  return "";
}

uint64_t SysconfOrZero(int name) {
  long v = sysconf(name);
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

}  // namespace

DeviceDescription DescribeHost(int ordinal) {
  DeviceDescription d;
  d.platform = "host";
  d.ordinal = ordinal;
  d.name = CpuInfoField("model name");
  if (d.name.empty()) d.name = "host CPU";
  d.vendor = CpuInfoField("vendor_id");
  d.multiprocessor_count = static_cast<int>(std::thread::hardware_concurrency());
  std::string mhz = CpuInfoField("cpu MHz");
  if (!mhz.empty()) d.core_clock_khz = static_cast<int64_t>(std::atof(mhz.c_str()) * 1000);
  d.memory_bytes = SysconfOrZero(_SC_PHYS_PAGES) * SysconfOrZero(_SC_PAGESIZE);
#ifdef _SC_LEVEL2_CACHE_SIZE
  d.l2_cache_bytes = SysconfOrZero(_SC_LEVEL2_CACHE_SIZE);
#endif
  // Host kernels have no hardware limits; these mirror CUDA's so that launch code written for
  // GPUs validates the same way. Shared memory is per-block scratch from the heap.
  d.shared_memory_per_block = 48 * 1024;
  d.shared_memory_per_block_optin = 16 << 20;
  d.shared_memory_per_multiprocessor = 16 << 20;
  d.warp_size = 1;
  d.max_threads_per_block = 1024;
  d.max_threads_per_multiprocessor = 1024;
  d.max_block_dims = Dim3{1024, 1024, 64};
  d.max_grid_dims = Dim3{0x7fffffffu, 65535, 65535};
  d.supports_stream_ordered_allocation = true;
  d.unified_addressing = true;
  struct utsname uts;
  if (uname(&uts) == 0) d.driver_version = StrCat(uts.sysname, " ", uts.release);
  d.runtime_version = StrCat("kiln host driver (", __VERSION__, ")");
  return d;
}

HostMemoryAllocator::~HostMemoryAllocator() {
  for (const auto& [ptr, size] : live_) std::free(ptr);
}

StatusOr<DeviceMemory> HostMemoryAllocator::DoAllocate(uint64_t bytes, std::string_view tag) {
  uint64_t rounded = (bytes + 255) & ~uint64_t{255};
  if (rounded < bytes) return ResourceExhausted(name_, ": cannot allocate ", bytes, " bytes");
  void* p = std::aligned_alloc(256, rounded);
  std::lock_guard<std::mutex> lock(mu_);
  if (p == nullptr) {
    ++stats_.num_ooms;
    return ResourceExhausted(name_, ": out of host memory allocating ", HumanBytes(bytes),
                             tag.empty() ? "" : " for '", tag, tag.empty() ? "" : "'",
                             " (in use ", HumanBytes(stats_.bytes_in_use), ")");
  }
  live_[p] = rounded;
  stats_.bytes_in_use += rounded;
  stats_.bytes_reserved = stats_.bytes_in_use;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_reserved = stats_.peak_bytes_in_use;
  ++stats_.num_allocs;
  stats_.num_live_allocs = live_.size();
  return DeviceMemory{p, bytes};
}

Status HostMemoryAllocator::DoDeallocate(DeviceMemory memory) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(memory.ptr);
  if (it == live_.end()) {
    return InvalidArgument(name_, ": deallocating ", memory.ptr,
                           ", which is not a live allocation (double free?)");
  }
  stats_.bytes_in_use -= it->second;
  stats_.bytes_reserved = stats_.bytes_in_use;
  std::free(it->first);
  live_.erase(it);
  stats_.num_live_allocs = live_.size();
  return OkStatus();
}

std::optional<AllocatorStats> HostMemoryAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

namespace {

// A stream-ordered pool: DeallocateOnStream enqueues the block's return to the pool on the
// stream, so it is reused only after the stream's earlier work; allocations take a cached block
// (best fit, at most twice the size) or fresh memory. Cached memory above the release threshold
// goes back to the heap.
class HostStreamOrderedAllocator final : public Allocator {
 public:
  HostStreamOrderedAllocator(int ordinal, uint64_t release_threshold)
      : name_(StrCat("host:", ordinal, ":stream-ordered")), release_threshold_(release_threshold) {}
  ~HostStreamOrderedAllocator() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [size, ptr] : cached_) std::free(ptr);
    for (const auto& [ptr, size] : live_) std::free(ptr);
  }
  std::string_view name() const override { return name_; }
  MemoryKind memory_kind() const override { return MemoryKind::kDevice; }
  uint64_t alignment() const override { return 256; }
  bool is_stream_ordered() const override { return true; }
  StatusOr<DeviceMemory> AllocateOnStream(uint64_t bytes, Stream& stream,
                                          std::string_view tag) override {
    (void)stream;  // memory is ready at once, so it is ready for the stream's later work
    return Allocate(bytes, tag);
  }
  Status DeallocateOnStream(DeviceMemory memory, Stream& stream) override {
    if (memory.is_null()) return OkStatus();
    auto* host_stream = dynamic_cast<HostStream*>(&stream);
    if (host_stream == nullptr) return InvalidArgument("stream was not created by the host driver");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (live_.find(memory.ptr) == live_.end()) return NotLive(memory);
    }
    HostStream::Task task;
    task.always_run = true;  // return the block even if the stream failed: nothing uses it now
    task.run = [this, memory](const Status&) { return DoDeallocate(memory); };
    return host_stream->Enqueue(std::move(task));
  }
  std::optional<AllocatorStats> GetStats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 protected:
  StatusOr<DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override {
    uint64_t rounded = (bytes + 255) & ~uint64_t{255};
    std::lock_guard<std::mutex> lock(mu_);
    void* p = nullptr;
    uint64_t size = rounded;
    auto it = cached_.lower_bound(rounded);
    if (it != cached_.end() && it->first <= 2 * rounded) {
      size = it->first;
      p = it->second;
      cached_.erase(it);
    } else {
      p = std::aligned_alloc(256, rounded);
      if (p == nullptr) {
        ++stats_.num_ooms;
        return ResourceExhausted(name_, ": out of host memory allocating ", HumanBytes(bytes),
                                 tag.empty() ? "" : " for '", tag, tag.empty() ? "" : "'");
      }
      stats_.bytes_reserved += rounded;
      stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
    }
    live_[p] = size;
    stats_.bytes_in_use += size;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    stats_.num_live_allocs = live_.size();
    return DeviceMemory{p, bytes};
  }
  Status DoDeallocate(DeviceMemory memory) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(memory.ptr);
    if (it == live_.end()) return NotLive(memory);
    uint64_t size = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= size;
    stats_.num_live_allocs = live_.size();
    if (stats_.bytes_reserved - stats_.bytes_in_use > release_threshold_) {
      std::free(memory.ptr);
      stats_.bytes_reserved -= size;
    } else {
      cached_.emplace(size, memory.ptr);
    }
    return OkStatus();
  }

 private:
  Status NotLive(const DeviceMemory& memory) const {
    return InvalidArgument(name_, ": deallocating ", memory.ptr,
                           ", which is not a live allocation (double free?)");
  }

  std::string name_;
  uint64_t release_threshold_;
  mutable std::mutex mu_;
  std::unordered_map<void*, uint64_t> live_;
  std::multimap<uint64_t, void*> cached_;  // size → block
  AllocatorStats stats_;
};

}  // namespace

HostDevice::HostDevice(int ordinal)
    : description_(DescribeHost(ordinal)),
      device_allocator_(StrCat("host:", ordinal, ":device"), MemoryKind::kDevice),
      pinned_allocator_(StrCat("host:", ordinal, ":pinned"), MemoryKind::kPinnedHost) {}

StatusOr<std::unique_ptr<Stream>> HostDevice::CreateStream(const StreamOptions& options) {
  return std::unique_ptr<Stream>(std::make_unique<HostStream>(*this, options.priority));
}

StatusOr<std::unique_ptr<Event>> HostDevice::CreateEvent(const EventOptions& options) {
  return std::unique_ptr<Event>(std::make_unique<HostEvent>(options.enable_timing));
}

StatusOr<std::unique_ptr<Module>> HostDevice::LoadModule(const ModuleSpec& spec) {
  if (spec.format != ModuleSpec::Format::kHostLibrary || spec.host_library == nullptr) {
    return InvalidArgument("the host driver loads host kernel libraries only; module '", spec.name,
                           "' is ", ModuleFormatName(spec.format));
  }
  return std::unique_ptr<Module>(std::make_unique<HostModule>(spec.host_library));
}

StatusOr<std::unique_ptr<Allocator>> HostDevice::CreateStreamOrderedAllocator(
    const StreamOrderedAllocatorOptions& options) {
  return std::unique_ptr<Allocator>(std::make_unique<HostStreamOrderedAllocator>(
      description_.ordinal, options.release_threshold_bytes));
}

StatusOr<MemoryUsage> HostDevice::GetMemoryUsage() {
  MemoryUsage usage;
  usage.total_bytes = description_.memory_bytes;
  usage.free_bytes = SysconfOrZero(_SC_AVPHYS_PAGES) * SysconfOrZero(_SC_PAGESIZE);
  return usage;
}

Status HostDevice::Synchronize() {
  std::lock_guard<std::mutex> lock(streams_mu_);
  Status first;
  for (HostStream* stream : streams_) {
    Status status = stream->Synchronize();
    if (first.ok() && !status.ok()) first = status;
  }
  return first;
}

void HostDevice::AddStream(HostStream* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.insert(stream);
}

void HostDevice::RemoveStream(HostStream* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.erase(stream);
}

namespace {

class HostPlatform final : public Platform {
 public:
  explicit HostPlatform(int device_count) {
    for (int i = 0; i < device_count; ++i) devices_.push_back(std::make_unique<HostDevice>(i));
  }
  std::string_view name() const override { return "host"; }
  std::string version() const override {
    return devices_.empty() ? "" : devices_[0]->description().runtime_version;
  }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  StatusOr<Device*> GetDevice(int ordinal) override {
    if (ordinal < 0 || ordinal >= device_count()) {
      return OutOfRange("host device ", ordinal, " does not exist (", device_count(),
                        " device(s))");
    }
    return devices_[ordinal].get();
  }

 private:
  std::vector<std::unique_ptr<HostDevice>> devices_;
};

}  // namespace
}  // namespace host_internal

StatusOr<std::unique_ptr<Platform>> CreateHostPlatform(const HostPlatformOptions& options) {
  if (options.device_count < 1) {
    return InvalidArgument("host platform needs at least one device, got ", options.device_count);
  }
  return std::unique_ptr<Platform>(
      std::make_unique<host_internal::HostPlatform>(options.device_count));
}

Status RegisterHostPlatform(PlatformRegistry& registry, const HostPlatformOptions& options) {
  return registry.Register("host", [options] { return CreateHostPlatform(options); });
}

}  // namespace kiln::runtime
