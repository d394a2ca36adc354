// ThreadPool: a fixed set of worker threads running scheduled closures.
//
//   ThreadPool pool(4);
//   pool.Schedule([] { ... });          // fire and forget
//   pool.Wait();                        // until every scheduled closure has finished
//   pool.ParallelFor(n, 1024, [&](int64_t begin, int64_t end) { ... });  // blocking
//
// Threads start in the constructor and are joined in the destructor, which first runs every
// closure already scheduled. Schedule, Wait and ParallelFor may be called from any thread,
// including from inside a closure running on the pool: ParallelFor called from a worker of the
// same pool runs its range on the calling thread (nested parallelism never deadlocks), and
// Wait called from a worker is an error (asserts: it would wait for itself).
//
// The workers are an Eigen::ThreadPool (Eigen's non-blocking pool: per-thread lock-free queues,
// work stealing, an idle worker spins briefly before it sleeps), so that a closure handed over
// costs no lock and, between the back-to-back parallel loops of a program run, usually no
// wake-up. eigen_pool() exposes it so that Eigen's tensor contractions run on the same workers
// (one set of threads per pool). Closures run in no particular order.
//
// Closures must not throw (kiln code reports errors as Status values); an exception escaping a
// closure terminates the process, as it would on any std::thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace Eigen {
class ThreadPoolInterface;
}  // namespace Eigen

namespace kiln {

class ThreadPool {
 public:
  // `num_threads` workers; 0 means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Queues `fn` to run on some worker.
  void Schedule(std::function<void()> fn);

  // Blocks until every closure scheduled so far (and any they schedule) has finished.
  void Wait();

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each chunk at least `min_chunk`
  // iterations long (except the last), on the workers and the calling thread; returns when all
  // chunks are done. Chunks are claimed dynamically, so uneven work (or a worker the OS has
  // descheduled) balances itself. n <= 0 does nothing; a range that fits in one chunk runs
  // inline, and so does every range when called from one of this pool's workers.
  void ParallelFor(int64_t n, int64_t min_chunk,
                   const std::function<void(int64_t begin, int64_t end)>& fn);

  // True when called from one of this pool's workers.
  bool InWorkerThread() const;

  // The Eigen pool behind this one (never null, owned by this pool): Eigen's ThreadPoolDevice
  // may run on it. Closures scheduled on it directly are not seen by Wait().
  Eigen::ThreadPoolInterface* eigen_pool() const;

 private:
  struct Impl;
  int num_threads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
