#include "kiln/runtime/stream_pool.h"

namespace kiln::runtime {

StatusOr<StreamPool::Handle> StreamPool::Borrow(StreamPriority priority) {
  int kind = static_cast<int>(priority);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_[kind].empty()) {
      std::unique_ptr<Stream> stream = std::move(idle_[kind].back());
      idle_[kind].pop_back();
      return Handle(this, std::move(stream), kind);
    }
  }
  StreamOptions options;
  options.priority = priority;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, device_.CreateStream(options));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++created_;
  }
  return Handle(this, std::move(stream), kind);
}

void StreamPool::Return(std::unique_ptr<Stream> stream, int kind) {
  // A stream in error would hand its sticky error to the next borrower: drop it.
  if (!stream->IsIdle().ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_[kind].size() < options_.max_idle) idle_[kind].push_back(std::move(stream));
  // else: destroyed here (waits for its pending work), outside any user's critical path
}

size_t StreamPool::idle_count(StreamPriority priority) const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_[static_cast<int>(priority)].size();
}

size_t StreamPool::created_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

StatusOr<EventPool::Handle> EventPool::Borrow(const EventOptions& options) {
  int kind = options.enable_timing ? 1 : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_[kind].empty()) {
      std::unique_ptr<Event> event = std::move(idle_[kind].back());
      idle_[kind].pop_back();
      return Handle(this, std::move(event), kind);
    }
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Event> event, device_.CreateEvent(options));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++created_;
  }
  return Handle(this, std::move(event), kind);
}

void EventPool::Return(std::unique_ptr<Event> event, int kind) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_[kind].size() < options_.max_idle) idle_[kind].push_back(std::move(event));
}

size_t EventPool::idle_count(bool timing) const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_[timing ? 1 : 0].size();
}

size_t EventPool::created_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

}  // namespace kiln::runtime
