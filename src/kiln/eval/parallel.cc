#include "kiln/eval/parallel.h"

#include <algorithm>
#include <thread>

#include "kiln/base/thread_pool.h"

namespace kiln::eval_internal {
namespace {

// One pool for the process, created on first use and never destroyed (evaluators may run in
// static destructors' time, e.g. constant folding in a test's global teardown; a pool joined at
// exit would race with them). hardware_concurrency - 1 workers: the caller is the last thread.
ThreadPool& EvalPool() {
  static ThreadPool* pool = [] {
    const unsigned hc = std::max(1u, std::thread::hardware_concurrency());
    return new ThreadPool(static_cast<int>(std::max(1u, hc - 1)));
  }();
  return *pool;
}

}  // namespace

void EvalParallelFor(const Evaluator& evaluator, int64_t items, int64_t work_per_item,
                     const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (items <= 0) return;
  const int threads = evaluator.options().threads;
  const unsigned hc = std::max(1u, std::thread::hardware_concurrency());
  const int64_t width = threads <= 0 ? hc : std::min<int64_t>(threads, hc);
  const int64_t work = std::max<int64_t>(work_per_item, 1);
  if (width <= 1 || items < 2 || items > INT64_MAX / work || items * work < kEvalParallelMinWork) {
    fn(0, items);
    return;
  }
  // Chunks of at least ~1M multiply-adds (the pool's dispatch costs microseconds), and no more
  // than `width` of them at once: a chunk count that is a multiple of width keeps the others idle.
  int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 20) / work);
  if (threads > 0) min_chunk = std::max(min_chunk, (items + width - 1) / width);
  EvalPool().ParallelFor(items, min_chunk, fn);
}

}  // namespace kiln::eval_internal
