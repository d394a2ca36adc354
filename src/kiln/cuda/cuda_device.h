// The CUDA driver's implementations of the runtime interfaces.
//
// Code outside cuda/ sees only the runtime interfaces; CUDA-specific code (cuBLAS/cuDNN
// backends, the GPU compiler) reaches the raw handles through these classes:
//   auto* stream = static_cast<CudaStream*>(&generic_stream);  // after checking the platform
//   cublasSetStream(handle, stream->handle());
//
// Context: every call first makes the device's primary context current on the calling thread
// (cheap when it already is), so objects may be used from any thread.
#pragma once

#include <cuda.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/cuda/driver_api.h"
#include "kiln/runtime/device.h"

namespace kiln::cuda {

class CudaDevice;

class CudaStream final : public runtime::Stream {
 public:
  CudaStream(CudaDevice& device, CUstream stream, runtime::StreamPriority priority)
      : device_(device), stream_(stream), priority_(priority) {}
  // Waits for the stream's work, then destroys it.
  ~CudaStream() override;

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

  CUstream handle() const { return stream_; }

 private:
  CudaDevice& device_;
  CUstream stream_;
  runtime::StreamPriority priority_;
};

class CudaEvent final : public runtime::Event {
 public:
  CudaEvent(CudaDevice& device, CUevent event, bool timing)
      : Event(timing), device_(device), event_(event) {}
  ~CudaEvent() override;
  StatusOr<bool> IsComplete() override;
  Status Synchronize() override;
  StatusOr<float> ElapsedMillisSince(const runtime::Event& start) const override;

  CUevent handle() const { return event_; }

 private:
  CudaDevice& device_;
  CUevent event_;
};

class CudaKernel final : public runtime::Kernel {
 public:
  CudaKernel(CudaDevice& device, std::string name, CUfunction function)
      : device_(device), name_(std::move(name)), function_(function) {}
  std::string_view name() const override { return name_; }
  StatusOr<runtime::KernelAttributes> GetAttributes() const override;
  StatusOr<int> MaxActiveBlocksPerMultiprocessor(int block_size,
                                                 uint64_t dynamic_shared) const override;
  Status SetMaxDynamicSharedMemory(uint64_t bytes) override;

  CUfunction handle() const { return function_; }
  CudaDevice& cuda_device() const { return device_; }

 private:
  CudaDevice& device_;
  std::string name_;
  CUfunction function_;
};

class CudaModule final : public runtime::Module {
 public:
  CudaModule(CudaDevice& device, CUmodule module, std::string name)
      : device_(device), module_(module), name_(std::move(name)) {}
  ~CudaModule() override;
  StatusOr<runtime::Kernel*> GetKernel(std::string_view name) override;

  CUmodule handle() const { return module_; }

 private:
  CudaDevice& device_;
  CUmodule module_;
  std::string name_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<CudaKernel>, std::less<>> kernels_;
};

// Uncached device memory (cuMemAlloc/cuMemFree) or pinned host memory
// (cuMemHostAlloc/cuMemFreeHost). Tracks live allocations so that a foreign or double free is an
// InvalidArgument rather than undefined behaviour.
class CudaRawAllocator final : public runtime::Allocator {
 public:
  CudaRawAllocator(CudaDevice& device, runtime::MemoryKind kind, std::string name)
      : device_(device), kind_(kind), name_(std::move(name)) {}
  ~CudaRawAllocator() override;
  std::string_view name() const override { return name_; }
  runtime::MemoryKind memory_kind() const override { return kind_; }
  uint64_t alignment() const override { return 256; }
  std::optional<runtime::AllocatorStats> GetStats() const override;

 protected:
  StatusOr<runtime::DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override;
  Status DoDeallocate(runtime::DeviceMemory memory) override;

 private:
  CudaDevice& device_;
  runtime::MemoryKind kind_;
  std::string name_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address → size
  runtime::AllocatorStats stats_;
};

// Stream-ordered allocation from a dedicated CUDA memory pool (cuMemPoolCreate,
// cuMemAllocFromPoolAsync, cuMemFreeAsync). The synchronous Allocate/Deallocate go through a
// private stream and wait for it.
class CudaStreamOrderedAllocator final : public runtime::Allocator {
 public:
  static StatusOr<std::unique_ptr<CudaStreamOrderedAllocator>> Create(
      CudaDevice& device, const runtime::StreamOrderedAllocatorOptions& options);
  ~CudaStreamOrderedAllocator() override;

  std::string_view name() const override { return name_; }
  runtime::MemoryKind memory_kind() const override { return runtime::MemoryKind::kDevice; }
  uint64_t alignment() const override { return 256; }
  bool is_stream_ordered() const override { return true; }
  StatusOr<runtime::DeviceMemory> AllocateOnStream(uint64_t bytes, runtime::Stream& stream,
                                                   std::string_view tag) override;
  Status DeallocateOnStream(runtime::DeviceMemory memory, runtime::Stream& stream) override;
  std::optional<runtime::AllocatorStats> GetStats() const override;

  CUmemoryPool pool() const { return pool_; }

 protected:
  StatusOr<runtime::DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override;
  Status DoDeallocate(runtime::DeviceMemory memory) override;

 private:
  CudaStreamOrderedAllocator(CudaDevice& device, CUmemoryPool pool, CUstream stream);
  StatusOr<runtime::DeviceMemory> AllocateOn(uint64_t bytes, CUstream stream,
                                             std::string_view tag);
  Status DeallocateOn(runtime::DeviceMemory memory, CUstream stream);

  CudaDevice& device_;
  CUmemoryPool pool_;
  CUstream private_stream_;
  std::string name_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> live_;
  uint64_t num_allocs_ = 0;
  uint64_t num_ooms_ = 0;
};

class CudaDevice final : public runtime::Device {
 public:
  // Retains `ordinal`'s primary context and describes the device.
  static StatusOr<std::unique_ptr<CudaDevice>> Create(const DriverApi& api, int ordinal);
  // Releases the primary context.
  ~CudaDevice() override;

  const runtime::DeviceDescription& description() const override { return description_; }
  StatusOr<std::unique_ptr<runtime::Stream>> CreateStream(
      const runtime::StreamOptions& options) override;
  StatusOr<std::unique_ptr<runtime::Event>> CreateEvent(
      const runtime::EventOptions& options) override;
  StatusOr<std::unique_ptr<runtime::Module>> LoadModule(const runtime::ModuleSpec& spec) override;
  runtime::Allocator& device_allocator() override { return *device_allocator_; }
  runtime::Allocator& pinned_host_allocator() override { return *pinned_allocator_; }
  StatusOr<std::unique_ptr<runtime::Allocator>> CreateStreamOrderedAllocator(
      const runtime::StreamOrderedAllocatorOptions& options) override;
  StatusOr<runtime::MemoryUsage> GetMemoryUsage() override;
  Status Synchronize() override;

  const DriverApi& api() const { return api_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }
  // Makes the primary context current on the calling thread.
  Status Activate() const;

 private:
  CudaDevice(const DriverApi& api, CUdevice device, CUcontext context)
      : api_(api), device_(device), context_(context) {}
  Status Describe(int ordinal);

  const DriverApi& api_;
  CUdevice device_;
  CUcontext context_;
  int least_priority_ = 0;
  int greatest_priority_ = 0;
  runtime::DeviceDescription description_;
  std::unique_ptr<CudaRawAllocator> device_allocator_;
  std::unique_ptr<CudaRawAllocator> pinned_allocator_;
};

}  // namespace kiln::cuda
