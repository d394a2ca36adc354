// Device: one accelerator (or the host) as seen by its platform's driver.
//
// A Device is owned by its Platform and lives as long as the platform. It creates streams,
// events and modules (owned by the caller, and which must be destroyed before the platform) and
// exposes two uncached allocators. Caching (BFC) and stream-ordered allocators are built on top:
//   auto bfc = CreateBfcDeviceAllocator(device, BfcOptions{.limit_fraction = 0.9});
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/base/status.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/device_description.h"
#include "kiln/runtime/event.h"
#include "kiln/runtime/module.h"
#include "kiln/runtime/stream.h"

namespace kiln::runtime {

struct MemoryUsage {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

struct StreamOrderedAllocatorOptions {
  // Memory the pool keeps reserved after frees instead of returning it to the driver at the
  // next synchronization. Default: keep everything (the pool only grows, like a caching
  // allocator); 0 returns memory eagerly.
  uint64_t release_threshold_bytes = UINT64_MAX;
};

class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual const DeviceDescription& description() const = 0;
  int ordinal() const { return description().ordinal; }

  virtual StatusOr<std::unique_ptr<Stream>> CreateStream(const StreamOptions& options) = 0;
  virtual StatusOr<std::unique_ptr<Event>> CreateEvent(const EventOptions& options) = 0;
  virtual StatusOr<std::unique_ptr<Module>> LoadModule(const ModuleSpec& spec) = 0;

  // Uncached device memory (CUDA: cuMemAlloc/cuMemFree, which synchronize the device on free).
  virtual Allocator& device_allocator() = 0;
  // Page-locked host memory usable for asynchronous copies (CUDA: cuMemHostAlloc).
  virtual Allocator& pinned_host_allocator() = 0;
  // A stream-ordered allocator (CUDA: a cuMemPool with cuMemAllocFromPoolAsync/cuMemFreeAsync).
  virtual StatusOr<std::unique_ptr<Allocator>> CreateStreamOrderedAllocator(
      const StreamOrderedAllocatorOptions& options) = 0;

  virtual StatusOr<MemoryUsage> GetMemoryUsage() = 0;
  // Blocks until all work on all of this device's streams has finished.
  virtual Status Synchronize() = 0;

 protected:
  Device() = default;
};

}  // namespace kiln::runtime
