#include "kiln/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <memory>

#include <unsupported/Eigen/CXX11/ThreadPool>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kiln {

namespace {
inline void CpuRelax() {
#if defined(__SSE2__)
  _mm_pause();
#endif
}
}  // namespace

struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n) {}
  Eigen::ThreadPool pool;
  std::atomic<int64_t> pending{0};  // scheduled through Schedule and not yet finished
  std::mutex mu;
  std::condition_variable idle_cv;  // pending reached zero
};

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  impl_ = std::make_unique<Impl>(num_threads);
}

ThreadPool::~ThreadPool() {
  // Everything scheduled runs; Eigen's destructor then joins the workers (after draining
  // any ParallelFor helpers still queued: they find no chunk left and return).
  if (impl_->pending.load(std::memory_order_acquire) != 0) Wait();
}

bool ThreadPool::InWorkerThread() const { return impl_->pool.CurrentThreadId() >= 0; }

Eigen::ThreadPoolInterface* ThreadPool::eigen_pool() const { return &impl_->pool; }

void ThreadPool::Schedule(std::function<void()> fn) {
  impl_->pending.fetch_add(1, std::memory_order_relaxed);
  Impl* impl = impl_.get();
  impl->pool.Schedule([impl, fn = std::move(fn)] {
    fn();
    if (impl->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taking the lock orders this notification after a waiter's check of `pending`.
      std::lock_guard<std::mutex> lock(impl->mu);
      impl->idle_cv.notify_all();
    }
  });
}

void ThreadPool::Wait() {
  assert(!InWorkerThread() && "ThreadPool::Wait called from its own worker");
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle_cv.wait(lock, [this] { return impl_->pending.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  // About four chunks per participant, so that uneven chunks (and, on a loaded machine, a
  // descheduled worker) even out.
  int64_t participants = num_threads() + 1;
  int64_t chunk = std::max(min_chunk, (n + 4 * participants - 1) / (4 * participants));
  int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks <= 1 || InWorkerThread()) {
    fn(0, n);
    return;
  }
  // Shared with the helper closures, which may start after this call has returned (when the
  // caller and the early helpers took every chunk): they must not touch the caller's stack
  // unless they claimed a chunk, which the caller waits for.
  struct State {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
    Eigen::ThreadPool* pool = nullptr;
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    int64_t n = 0, chunk = 0, num_chunks = 0, helpers = 0;

    int64_t RunChunks() {
      int64_t finished = 0;
      while (true) {
        int64_t c = next.fetch_add(1, std::memory_order_relaxed);
        if (c >= num_chunks) break;
        int64_t begin = c * chunk;
        (*body)(begin, std::min(n, begin + chunk));
        ++finished;
      }
      return finished;
    }
    // Helpers form a binary tree (the caller is node 0): node k hands nodes 2k+1 and 2k+2 to
    // the pool before it starts on chunks, so that the wake-ups of a wide pool overlap instead
    // of queueing up on the caller (as Eigen's own parallelFor splits its range).
    static void Spawn(const std::shared_ptr<State>& st, int64_t k) {
      for (int64_t c = 2 * k + 1; c <= 2 * k + 2; ++c) {
        if (c > st->helpers || st->next.load(std::memory_order_relaxed) >= st->num_chunks) return;
        st->pool->Schedule([st, c] {
          Spawn(st, c);
          int64_t finished = st->RunChunks();
          if (finished == 0) return;
          if (st->done.fetch_add(finished, std::memory_order_acq_rel) + finished == st->num_chunks) {
            std::lock_guard<std::mutex> lock(st->mu);
            st->cv.notify_all();
          }
        });
      }
    }
  };
  auto state = std::make_shared<State>();
  state->pool = &impl_->pool;
  state->body = &fn;
  state->n = n;
  state->chunk = chunk;
  state->num_chunks = num_chunks;
  state->helpers = std::min<int64_t>(num_threads(), num_chunks - 1);
  State::Spawn(state, 0);
  int64_t mine = state->RunChunks();
  if (state->done.fetch_add(mine, std::memory_order_acq_rel) + mine == num_chunks) return;
  // The helpers are finishing their last chunks: spin a little (a chunk is usually short),
  // then sleep.
  for (int i = 0; i < 256; ++i) {
    if (state->done.load(std::memory_order_acquire) == num_chunks) return;
    CpuRelax();
  }
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load(std::memory_order_acquire) == num_chunks; });
}

}  // namespace kiln
