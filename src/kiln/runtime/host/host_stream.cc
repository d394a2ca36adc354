// Host streams (one worker thread per in-order queue) and events.
#include <cstring>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/runtime/host/host_internal.h"

namespace kiln::runtime::host_internal {

void Signal::Complete(Status s) {
  std::lock_guard<std::mutex> lock(mu);
  status = std::move(s);
  time = std::chrono::steady_clock::now();
  done = true;
  cv.notify_all();
}

Status Signal::Wait() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return status;
}

std::shared_ptr<Signal> HostEvent::Rearm() {
  auto signal = std::make_shared<Signal>();
  std::lock_guard<std::mutex> lock(mu_);
  current_ = signal;
  return signal;
}

std::shared_ptr<Signal> HostEvent::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

StatusOr<bool> HostEvent::IsComplete() {
  std::shared_ptr<Signal> signal = current();
  if (signal == nullptr) return true;
  std::lock_guard<std::mutex> lock(signal->mu);
  if (signal->done && !signal->status.ok()) return signal->status;
  return signal->done;
}

Status HostEvent::Synchronize() {
  std::shared_ptr<Signal> signal = current();
  if (signal == nullptr) return OkStatus();
  return signal->Wait();
}

StatusOr<float> HostEvent::ElapsedMillisSince(const Event& start) const {
  const auto* begin = dynamic_cast<const HostEvent*>(&start);
  if (begin == nullptr) return InvalidArgument("elapsed time between events of different drivers");
  if (!timing_enabled() || !begin->timing_enabled()) {
    return FailedPrecondition("elapsed time needs events created with enable_timing");
  }
  std::shared_ptr<Signal> a = begin->current(), b = current();
  if (a == nullptr || b == nullptr) return FailedPrecondition("event was never recorded");
  std::chrono::steady_clock::time_point ta, tb;
  {
    std::lock_guard<std::mutex> lock(a->mu);
    if (!a->done) return FailedPrecondition("start event has not completed");
    ta = a->time;
  }
  {
    std::lock_guard<std::mutex> lock(b->mu);
    if (!b->done) return FailedPrecondition("end event has not completed");
    tb = b->time;
  }
  return std::chrono::duration<float, std::milli>(tb - ta).count();
}

HostStream::HostStream(HostDevice& device, StreamPriority priority)
    : device_(device), priority_(priority), worker_([this] { WorkerLoop(); }) {
  device_.AddStream(this);
}

HostStream::~HostStream() {
  device_.RemoveStream(this);
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return completed_ == enqueued_; });
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

Device& HostStream::device() const { return device_; }

Status HostStream::Enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(task));
    ++enqueued_;
  }
  work_cv_.notify_one();
  return OkStatus();
}

void HostStream::WorkerLoop() {
  while (true) {
    Task task;
    Status status_so_far;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ with nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      status_so_far = error_;
    }
    Status result;
    if (status_so_far.ok() || task.always_run) result = task.run(status_so_far);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok() && !result.ok()) error_ = std::move(result);
      ++completed_;
      if (completed_ == enqueued_) idle_cv_.notify_all();
    }
  }
}

Status HostStream::Synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return completed_ == enqueued_; });
  return error_;
}

StatusOr<bool> HostStream::IsIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  return completed_ == enqueued_;
}


Status HostStream::MemcpyHostToDevice(DeviceMemory dst, const void* src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(CheckDeviceRange(dst, bytes, "host-to-device copy"));
  if (bytes == 0) return OkStatus();
  if (src == nullptr) return InvalidArgument("host-to-device copy: null host pointer");
  return Enqueue({[=](const Status&) {
    std::memcpy(dst.ptr, src, bytes);
    return OkStatus();
  }});
}

Status HostStream::MemcpyDeviceToHost(void* dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(CheckDeviceRange(src, bytes, "device-to-host copy"));
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return InvalidArgument("device-to-host copy: null host pointer");
  return Enqueue({[=](const Status&) {
    std::memcpy(dst, src.ptr, bytes);
    return OkStatus();
  }});
}

Status HostStream::MemcpyDeviceToDevice(DeviceMemory dst, DeviceMemory src, uint64_t bytes) {
  KILN_RETURN_IF_ERROR(CheckDeviceRange(dst, bytes, "device-to-device copy (destination)"));
  KILN_RETURN_IF_ERROR(CheckDeviceRange(src, bytes, "device-to-device copy (source)"));
  if (bytes == 0) return OkStatus();
  return Enqueue({[=](const Status&) {
    std::memmove(dst.ptr, src.ptr, bytes);
    return OkStatus();
  }});
}

Status HostStream::Memset8(DeviceMemory dst, uint8_t value) {
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(CheckDeviceRange(dst, dst.size, "memset"));
  return Enqueue({[=](const Status&) {
    std::memset(dst.ptr, value, dst.size);
    return OkStatus();
  }});
}

Status HostStream::Memset32(DeviceMemory dst, uint32_t value) {
  if (dst.size % 4 != 0 || dst.address() % 4 != 0) {
    return InvalidArgument("32-bit memset needs a 4-byte aligned address and a size that is a "
                           "multiple of 4, got ",
                           dst.size, " bytes");
  }
  if (dst.size == 0) return OkStatus();
  KILN_RETURN_IF_ERROR(CheckDeviceRange(dst, dst.size, "memset"));
  return Enqueue({[=](const Status&) {
    auto* p = static_cast<uint32_t*>(dst.ptr);
    for (uint64_t i = 0; i < dst.size / 4; ++i) p[i] = value;
    return OkStatus();
  }});
}

Status HostStream::RecordEvent(Event& event) {
  auto* host_event = dynamic_cast<HostEvent*>(&event);
  if (host_event == nullptr) return InvalidArgument("event was not created by the host driver");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
  }
  std::shared_ptr<Signal> signal = host_event->Rearm();
  Task task;
  task.always_run = true;
  task.run = [signal](const Status& stream_status) {
    signal->Complete(stream_status);
    return OkStatus();
  };
  Status status = Enqueue(std::move(task));
  if (!status.ok()) signal->Complete(status);  // the stream failed meanwhile: nobody may hang
  return status;
}

Status HostStream::WaitEvent(Event& event) {
  auto* host_event = dynamic_cast<HostEvent*>(&event);
  if (host_event == nullptr) return InvalidArgument("event was not created by the host driver");
  std::shared_ptr<Signal> signal = host_event->current();
  if (signal == nullptr) return OkStatus();  // never recorded: nothing to wait for
  return Enqueue({[signal](const Status&) {
    Status status = signal->Wait();
    return status.WithContext("waiting on an event whose stream failed");
  }});
}

Status HostStream::AddHostCallback(std::function<void()> callback) {
  if (!callback) return InvalidArgument("empty host callback");
  return Enqueue({[callback = std::move(callback)](const Status&) {
    callback();
    return OkStatus();
  }});
}

Status HostStream::Launch(const Kernel& kernel, const LaunchDims& dims, const KernelArgs& args) {
  const auto* host_kernel = dynamic_cast<const HostKernel*>(&kernel);
  if (host_kernel == nullptr) {
    return InvalidArgument("kernel '", kernel.name(), "' was not loaded by the host driver");
  }
  KILN_RETURN_IF_ERROR(CheckLaunchDims(device_.description(), kernel.name(), dims,
                                       host_kernel->entry().max_threads_per_block));
  if (dims.shared_memory_bytes > host_kernel->max_dynamic_shared_memory()) {
    return InvalidArgument("launch of '", kernel.name(), "' asks for ", dims.shared_memory_bytes,
                           " bytes of shared memory; the kernel allows ",
                           host_kernel->max_dynamic_shared_memory(),
                           " (raise it with SetMaxDynamicSharedMemory)");
  }
  HostKernelFn fn = host_kernel->entry().fn;
  std::string name(kernel.name());
  return Enqueue({[fn, name, dims, args](const Status&) -> Status {
    std::vector<std::byte> shared(dims.shared_memory_bytes);
    for (uint32_t z = 0; z < dims.grid.z; ++z) {
      for (uint32_t y = 0; y < dims.grid.y; ++y) {
        for (uint32_t x = 0; x < dims.grid.x; ++x) {
          HostKernelContext context{dims, Dim3{x, y, z}, args, shared.data()};
          Status status = fn(context);
          if (!status.ok()) {
            return status.WithContext(
                StrCat("host kernel '", name, "' block ", Dim3{x, y, z}.ToString()));
          }
        }
      }
    }
    return OkStatus();
  }});
}

}  // namespace kiln::runtime::host_internal
