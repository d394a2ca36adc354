// Stream: an in-order queue of device work (kernel launches, copies, memsets, event records and
// waits, host callbacks).
//
// Contract shared by every driver:
//   - Work enqueued on one stream runs in enqueue order; each item sees the effects of the ones
//     before it. Work on different streams is unordered unless an Event orders it.
//   - Enqueue calls return once the work is queued; they do not wait for it. They fail only on
//     invalid arguments or a failed/lost device; an error raised while the work runs is reported
//     by a later Synchronize (or event query) on the stream, and the stream stays in error: every
//     later call returns that error. (CUDA's sticky errors behave the same way.)
//   - Host pointers passed to copies must stay valid, and unchanged for H2D, until the copy has
//     run (synchronize or wait on an event recorded after it). Pageable host memory may make a
//     CUDA copy synchronous; pinned memory (Device::pinned_host_allocator) keeps it asynchronous.
//   - Host callbacks run on a driver thread after all earlier work on the stream and before any
//     later work. They must not call back into the runtime (CUDA forbids driver calls from host
//     functions) and should be short: later work on the stream waits for them.
//
// Thread safety: a Stream may be used from several threads, but concurrent enqueues from
// different threads have no defined relative order. Destroying a stream waits for its work.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/types.h"

namespace kiln::runtime {

class Device;
class Event;
class Kernel;

struct StreamOptions {
  // Scheduling priority (see StreamPriority). Default: normal.
  StreamPriority priority = StreamPriority::kNormal;
};

class Stream {
 public:
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  virtual Device& device() const = 0;
  virtual StreamPriority priority() const = 0;

  // Launches `kernel` (loaded on this stream's device) over `dims` with `args`.
  virtual Status Launch(const Kernel& kernel, const LaunchDims& dims, const KernelArgs& args) = 0;

  // Copies `bytes` bytes. Ranges are checked against the DeviceMemory sizes (InvalidArgument).
  virtual Status MemcpyHostToDevice(DeviceMemory dst, const void* src, uint64_t bytes) = 0;
  virtual Status MemcpyDeviceToHost(void* dst, DeviceMemory src, uint64_t bytes) = 0;
  virtual Status MemcpyDeviceToDevice(DeviceMemory dst, DeviceMemory src, uint64_t bytes) = 0;
  // Sets every byte of `dst` to `value`.
  virtual Status Memset8(DeviceMemory dst, uint8_t value) = 0;
  // Sets every 32-bit word of `dst` to `value`; dst.size must be a multiple of 4 and its
  // address 4-byte aligned.
  virtual Status Memset32(DeviceMemory dst, uint32_t value) = 0;

  virtual Status RecordEvent(Event& event) = 0;
  virtual Status WaitEvent(Event& event) = 0;
  virtual Status AddHostCallback(std::function<void()> callback) = 0;

  // Blocks until all enqueued work has finished; returns the stream's error, if any.
  virtual Status Synchronize() = 0;
  // True when all enqueued work has finished (non-blocking).
  virtual StatusOr<bool> IsIdle() = 0;

 protected:
  Stream() = default;
};

// For drivers: InvalidArgument unless `bytes` bytes fit in `memory` (and it is non-null when
// bytes > 0); `what` names the operation in the message.
Status CheckDeviceRange(const DeviceMemory& memory, uint64_t bytes, std::string_view what);
// For drivers: InvalidArgument unless `dims` is a non-empty launch within the device limits.
struct DeviceDescription;
Status CheckLaunchDims(const DeviceDescription& device, std::string_view kernel,
                       const LaunchDims& dims, int max_threads_per_block);

}  // namespace kiln::runtime
