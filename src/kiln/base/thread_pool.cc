#include "kiln/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <memory>

namespace kiln {

namespace {
// The pool whose worker is the current thread (nullptr elsewhere).
thread_local const ThreadPool* current_pool = nullptr;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::InWorkerThread() const { return current_pool == this; }

void ThreadPool::Schedule(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    ++pending_;
  }
  work_cv_.notify_one();
}

void ThreadPool::Wait() {
  assert(!InWorkerThread() && "ThreadPool::Wait called from its own worker");
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::WorkerLoop() {
  current_pool = this;
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Drain the queue before stopping, so the destructor runs everything scheduled.
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) idle_cv_.notify_all();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  // About four chunks per participant, so that uneven chunks even out.
  int64_t participants = num_threads() + 1;
  int64_t chunk = std::max(min_chunk, (n + 4 * participants - 1) / (4 * participants));
  int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks <= 1 || InWorkerThread()) {
    fn(0, n);
    return;
  }
  // Shared with the helper closures, which may start after this call has returned (when the
  // caller and the early helpers took every chunk): they must not touch the caller's stack.
  struct State {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto state = std::make_shared<State>();
  const auto* body = &fn;  // valid until every chunk is done, which we wait for below
  auto run_chunks = [state, body, n, chunk, num_chunks] {
    while (true) {
      int64_t c = state->next.fetch_add(1);
      if (c >= num_chunks) return;
      int64_t begin = c * chunk;
      (*body)(begin, std::min(n, begin + chunk));
      if (state->done.fetch_add(1) + 1 == num_chunks) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->cv.notify_all();
      }
    }
  };
  int64_t helpers = std::min<int64_t>(num_threads(), num_chunks - 1);
  for (int64_t i = 0; i < helpers; ++i) Schedule(run_chunks);
  run_chunks();
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load() == num_chunks; });
}

}  // namespace kiln
