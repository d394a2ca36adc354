// The ROCm driver's implementations of the runtime interfaces (HIP's module API: code objects
// loaded with hipModuleLoadData, kernels launched with hipModuleLaunchKernel).
//
// Code outside rocm/ sees only the runtime interfaces; ROCm-specific code (rocBLAS, MIOpen)
// reaches the raw handles through these classes after checking the platform.
//
// Device selection: HIP's calls act on the calling thread's current device, so every call first
// makes this device current (hipSetDevice; cheap when it already is).
//
// Modules: ModuleSpec::Format::kHsaco, an AMDGPU code object (an ELF for one gfx target, as
// rocm/hsaco_compiler.h makes them). Cubins, PTX and host libraries are refused.
//
// Note [Untested ROCm execution]
//   No AMD GPU is reachable from kiln's machines: everything in this file compiles against the
//   HIP 6.x headers and its symbol table resolves against the real libamdhip64, but no stream,
//   event, allocation, module load or launch has ever run. The code follows the CUDA driver's
//   (cuda/cuda_device.h) line by line where the APIs correspond, so that what the CUDA
//   conformance suite checks there is at least what was meant here.
#pragma once

#include <hip/hip_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/rocm/hip_api.h"
#include "kiln/runtime/device.h"

namespace kiln::rocm {

class RocmDevice;

class RocmStream final : public runtime::Stream {
 public:
  RocmStream(RocmDevice& device, hipStream_t stream, runtime::StreamPriority priority)
      : device_(device), stream_(stream), priority_(priority) {}
  ~RocmStream() override;  // waits for the stream's work, then destroys it

  runtime::Device& device() const override;
  runtime::StreamPriority priority() const override { return priority_; }
  Status Launch(const runtime::Kernel& kernel, const runtime::LaunchDims& dims,
                const runtime::KernelArgs& args) override;
  Status MemcpyHostToDevice(runtime::DeviceMemory dst, const void* src, uint64_t bytes) override;
  Status MemcpyDeviceToHost(void* dst, runtime::DeviceMemory src, uint64_t bytes) override;
  Status MemcpyDeviceToDevice(runtime::DeviceMemory dst, runtime::DeviceMemory src,
                              uint64_t bytes) override;
  Status Memset8(runtime::DeviceMemory dst, uint8_t value) override;
  Status Memset32(runtime::DeviceMemory dst, uint32_t value) override;
  Status RecordEvent(runtime::Event& event) override;
  Status WaitEvent(runtime::Event& event) override;
  Status AddHostCallback(std::function<void()> callback) override;
  Status Synchronize() override;
  StatusOr<bool> IsIdle() override;

  hipStream_t handle() const { return stream_; }

 private:
  RocmDevice& device_;
  hipStream_t stream_;
  runtime::StreamPriority priority_;
};

class RocmEvent final : public runtime::Event {
 public:
  RocmEvent(RocmDevice& device, hipEvent_t event, bool timing)
      : Event(timing), device_(device), event_(event) {}
  ~RocmEvent() override;
  StatusOr<bool> IsComplete() override;
  Status Synchronize() override;
  StatusOr<float> ElapsedMillisSince(const runtime::Event& start) const override;

  hipEvent_t handle() const { return event_; }

 private:
  RocmDevice& device_;
  hipEvent_t event_;
};

class RocmKernel final : public runtime::Kernel {
 public:
  RocmKernel(RocmDevice& device, std::string name, hipFunction_t function)
      : device_(device), name_(std::move(name)), function_(function) {}
  std::string_view name() const override { return name_; }
  StatusOr<runtime::KernelAttributes> GetAttributes() const override;
  StatusOr<int> MaxActiveBlocksPerMultiprocessor(int block_size,
                                                 uint64_t dynamic_shared) const override;
  // AMD GPUs need no opt-in: any size up to the LDS per workgroup is accepted as it is.
  Status SetMaxDynamicSharedMemory(uint64_t bytes) override;

  hipFunction_t handle() const { return function_; }
  RocmDevice& rocm_device() const { return device_; }

 private:
  RocmDevice& device_;
  std::string name_;
  hipFunction_t function_;
};

class RocmModule final : public runtime::Module {
 public:
  RocmModule(RocmDevice& device, hipModule_t module, std::string name)
      : device_(device), module_(module), name_(std::move(name)) {}
  ~RocmModule() override;
  StatusOr<runtime::Kernel*> GetKernel(std::string_view name) override;

 private:
  RocmDevice& device_;
  hipModule_t module_;
  std::string name_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<RocmKernel>, std::less<>> kernels_;
};

// Uncached device memory (hipMalloc/hipFree) or pinned host memory (hipHostMalloc/hipHostFree),
// tracking live allocations so that a foreign or double free is InvalidArgument. The BFC
// allocator (runtime/bfc_allocator.h) caches on top of the device one.
class RocmRawAllocator final : public runtime::Allocator {
 public:
  RocmRawAllocator(RocmDevice& device, runtime::MemoryKind kind, std::string name)
      : device_(device), kind_(kind), name_(std::move(name)) {}
  ~RocmRawAllocator() override;
  std::string_view name() const override { return name_; }
  runtime::MemoryKind memory_kind() const override { return kind_; }
  uint64_t alignment() const override { return 256; }
  std::optional<runtime::AllocatorStats> GetStats() const override;

 protected:
  StatusOr<runtime::DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override;
  Status DoDeallocate(runtime::DeviceMemory memory) override;

 private:
  RocmDevice& device_;
  runtime::MemoryKind kind_;
  std::string name_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address → size
  runtime::AllocatorStats stats_;
};

class RocmDevice final : public runtime::Device {
 public:
  // Describes device `ordinal` (hipGetDevicePropertiesR0600: FailedPrecondition on a HIP 5.x
  // runtime, whose property struct has another layout).
  static StatusOr<std::unique_ptr<RocmDevice>> Create(const HipApi& api, int ordinal);
  ~RocmDevice() override;

  const runtime::DeviceDescription& description() const override { return description_; }
  StatusOr<std::unique_ptr<runtime::Stream>> CreateStream(
      const runtime::StreamOptions& options) override;
  StatusOr<std::unique_ptr<runtime::Event>> CreateEvent(
      const runtime::EventOptions& options) override;
  StatusOr<std::unique_ptr<runtime::Module>> LoadModule(const runtime::ModuleSpec& spec) override;
  runtime::Allocator& device_allocator() override { return *device_allocator_; }
  runtime::Allocator& pinned_host_allocator() override { return *pinned_allocator_; }
  // Unimplemented: HIP's stream-ordered pools (hipMallocAsync) are not wired up yet; callers
  // fall back to the BFC allocator over device_allocator(), as on CUDA devices without pools.
  StatusOr<std::unique_ptr<runtime::Allocator>> CreateStreamOrderedAllocator(
      const runtime::StreamOrderedAllocatorOptions& options) override;
  StatusOr<runtime::MemoryUsage> GetMemoryUsage() override;
  Status Synchronize() override;

  const HipApi& api() const { return api_; }
  int hip_ordinal() const { return ordinal_; }
  const std::string& gfx_arch() const { return gfx_arch_; }  // "gfx942" (no feature suffix)
  Status Activate() const;  // hipSetDevice

 private:
  RocmDevice(const HipApi& api, int ordinal) : api_(api), ordinal_(ordinal) {}
  Status Describe();

  const HipApi& api_;
  int ordinal_;
  int least_priority_ = 0;
  int greatest_priority_ = 0;
  std::string gfx_arch_;
  runtime::DeviceDescription description_;
  std::unique_ptr<RocmRawAllocator> device_allocator_;
  std::unique_ptr<RocmRawAllocator> pinned_allocator_;
};

}  // namespace kiln::rocm
