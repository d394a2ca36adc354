// StreamPool and EventPool: reuse streams and events instead of creating one per use.
//
//   StreamPool pool(device);
//   KILN_ASSIGN_OR_RETURN(StreamPool::Handle stream, pool.Borrow(StreamPriority::kHigh));
//   KILN_RETURN_IF_ERROR(stream->MemcpyHostToDevice(...));
//   // ~Handle returns the stream to the pool.
//
// A stream goes back to the pool as it is: work still pending on it stays ordered before the
// next borrower's work (in-order queue), so returning does not block. A returned stream that
// reports an error (IsIdle fails) is destroyed rather than pooled, so a borrower never inherits
// a sticky error. Events are pooled by their timing flag; a borrowed event may still hold an
// old record, which the borrower's first RecordEvent replaces.
//
// Pools keep at most `max_idle` idle objects per kind (extra returns are destroyed). Handles
// must not outlive their pool; the pool must not outlive its device.
// Thread safety: Borrow and returns may happen concurrently from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/device.h"

namespace kiln::runtime {

struct PoolOptions {
  // Idle objects kept per kind; more are destroyed on return. Default 32.
  size_t max_idle = 32;
};

// A pooled object on loan; returns it on destruction. Movable, not copyable.
template <typename T, typename Pool>
class PoolHandle {
 public:
  PoolHandle() = default;
  PoolHandle(Pool* pool, std::unique_ptr<T> object, int kind)
      : pool_(pool), object_(std::move(object)), kind_(kind) {}
  PoolHandle(PoolHandle&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)),
        object_(std::move(other.object_)),
        kind_(other.kind_) {}
  PoolHandle& operator=(PoolHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      pool_ = std::exchange(other.pool_, nullptr);
      object_ = std::move(other.object_);
      kind_ = other.kind_;
    }
    return *this;
  }
  ~PoolHandle() { Reset(); }

  T* get() const { return object_.get(); }
  T* operator->() const { return object_.get(); }
  T& operator*() const { return *object_; }
  explicit operator bool() const { return object_ != nullptr; }
  // Returns the object to its pool now.
  void Reset() {
    if (pool_ != nullptr && object_ != nullptr) pool_->Return(std::move(object_), kind_);
    pool_ = nullptr;
    object_.reset();
  }

 private:
  Pool* pool_ = nullptr;
  std::unique_ptr<T> object_;
  int kind_ = 0;
};

class StreamPool {
 public:
  using Handle = PoolHandle<Stream, StreamPool>;

  explicit StreamPool(Device& device, PoolOptions options = {})
      : device_(device), options_(options) {}
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;

  // An idle stream of `priority`, or a new one.
  StatusOr<Handle> Borrow(StreamPriority priority = StreamPriority::kNormal);

  size_t idle_count(StreamPriority priority) const;
  size_t created_count() const;

 private:
  friend Handle;
  void Return(std::unique_ptr<Stream> stream, int kind);

  Device& device_;
  const PoolOptions options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Stream>> idle_[2];  // by StreamPriority
  size_t created_ = 0;
};

class EventPool {
 public:
  using Handle = PoolHandle<Event, EventPool>;

  explicit EventPool(Device& device, PoolOptions options = {})
      : device_(device), options_(options) {}
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // An idle event with the same options, or a new one.
  StatusOr<Handle> Borrow(const EventOptions& options = {});

  size_t idle_count(bool timing) const;
  size_t created_count() const;

 private:
  friend Handle;
  void Return(std::unique_ptr<Event> event, int kind);

  Device& device_;
  const PoolOptions options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Event>> idle_[2];  // [0] no timing, [1] timing
  size_t created_ = 0;
};

}  // namespace kiln::runtime
