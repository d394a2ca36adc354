// Host driver classes (internal to runtime/host; use host_platform.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "kiln/runtime/device.h"
#include "kiln/runtime/host/host_kernel.h"

namespace kiln::runtime::host_internal {

// Completion of one event record.
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;  // the recording stream's error, if it failed before the record
  std::chrono::steady_clock::time_point time;

  void Complete(Status s);
  Status Wait();
};

class HostDevice;

class HostEvent final : public Event {
 public:
  explicit HostEvent(bool timing) : Event(timing) {}
  StatusOr<bool> IsComplete() override;
  Status Synchronize() override;
  StatusOr<float> ElapsedMillisSince(const Event& start) const override;

  // A fresh signal that becomes the event's newest record.
  std::shared_ptr<Signal> Rearm();
  std::shared_ptr<Signal> current() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<Signal> current_;
};

class HostStream final : public Stream {
 public:
  HostStream(HostDevice& device, StreamPriority priority);
  ~HostStream() override;

  Device& device() const override;
  StreamPriority priority() const override { return priority_; }
  Status Launch(const Kernel& kernel, const LaunchDims& dims, const KernelArgs& args) override;
  Status MemcpyHostToDevice(DeviceMemory dst, const void* src, uint64_t bytes) override;
  Status MemcpyDeviceToHost(void* dst, DeviceMemory src, uint64_t bytes) override;
  Status MemcpyDeviceToDevice(DeviceMemory dst, DeviceMemory src, uint64_t bytes) override;
  Status Memset8(DeviceMemory dst, uint8_t value) override;
  Status Memset32(DeviceMemory dst, uint32_t value) override;
  Status RecordEvent(Event& event) override;
  Status WaitEvent(Event& event) override;
  Status AddHostCallback(std::function<void()> callback) override;
  Status Synchronize() override;
  StatusOr<bool> IsIdle() override;

  // A unit of work. `run` is skipped once the stream has failed unless `always_run` is set
  // (event records must still complete so that nobody waits forever); it receives the stream's
  // status so far.
  struct Task {
    std::function<Status(const Status& stream_status)> run;
    bool always_run = false;
  };
  Status Enqueue(Task task);

 private:
  void WorkerLoop();

  HostDevice& device_;
  const StreamPriority priority_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stop_ = false;
  Status error_;
  std::thread worker_;  // last: starts after everything above is initialized
};

class HostKernel final : public Kernel {
 public:
  HostKernel(std::string name, const HostKernelLibrary::Entry* entry)
      : name_(std::move(name)), entry_(entry) {}
  std::string_view name() const override { return name_; }
  StatusOr<KernelAttributes> GetAttributes() const override;
  StatusOr<int> MaxActiveBlocksPerMultiprocessor(int block_size,
                                                 uint64_t dynamic_shared) const override;
  Status SetMaxDynamicSharedMemory(uint64_t bytes) override;

  const HostKernelLibrary::Entry& entry() const { return *entry_; }
  uint64_t max_dynamic_shared_memory() const { return max_dynamic_shared_.load(); }

 private:
  std::string name_;
  const HostKernelLibrary::Entry* entry_;  // owned by the module's library
  std::atomic<uint64_t> max_dynamic_shared_{48 * 1024};
};

class HostModule final : public Module {
 public:
  explicit HostModule(std::shared_ptr<const HostKernelLibrary> library)
      : library_(std::move(library)) {}
  StatusOr<Kernel*> GetKernel(std::string_view name) override;

 private:
  std::shared_ptr<const HostKernelLibrary> library_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<HostKernel>, std::less<>> kernels_;
};

// Aligned host memory standing in for device or pinned memory.
class HostMemoryAllocator final : public Allocator {
 public:
  HostMemoryAllocator(std::string name, MemoryKind kind) : name_(std::move(name)), kind_(kind) {}
  ~HostMemoryAllocator() override;
  std::string_view name() const override { return name_; }
  MemoryKind memory_kind() const override { return kind_; }
  uint64_t alignment() const override { return 256; }
  std::optional<AllocatorStats> GetStats() const override;

 protected:
  StatusOr<DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override;
  Status DoDeallocate(DeviceMemory memory) override;

 private:
  std::string name_;
  MemoryKind kind_;
  mutable std::mutex mu_;
  std::unordered_map<void*, uint64_t> live_;
  AllocatorStats stats_;
};

class HostDevice final : public Device {
 public:
  explicit HostDevice(int ordinal);
  const DeviceDescription& description() const override { return description_; }
  StatusOr<std::unique_ptr<Stream>> CreateStream(const StreamOptions& options) override;
  StatusOr<std::unique_ptr<Event>> CreateEvent(const EventOptions& options) override;
  StatusOr<std::unique_ptr<Module>> LoadModule(const ModuleSpec& spec) override;
  Allocator& device_allocator() override { return device_allocator_; }
  Allocator& pinned_host_allocator() override { return pinned_allocator_; }
  StatusOr<std::unique_ptr<Allocator>> CreateStreamOrderedAllocator(
      const StreamOrderedAllocatorOptions& options) override;
  StatusOr<MemoryUsage> GetMemoryUsage() override;
  Status Synchronize() override;

  void AddStream(HostStream* stream);
  void RemoveStream(HostStream* stream);

 private:
  DeviceDescription description_;
  HostMemoryAllocator device_allocator_;
  HostMemoryAllocator pinned_allocator_;
  std::mutex streams_mu_;
  std::set<HostStream*> streams_;
};

// Describes the machine (CPU model, threads, memory, caches) as host device `ordinal`.
DeviceDescription DescribeHost(int ordinal);

}  // namespace kiln::runtime::host_internal
