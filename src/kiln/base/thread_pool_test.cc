#include "kiln/base/thread_pool.h"

#include <gtest/gtest.h>

#include <unsupported/Eigen/CXX11/ThreadPool>

#include <atomic>
#include <thread>
#include <numeric>
#include <set>
#include <vector>

namespace kiln {
namespace {

TEST(ThreadPoolTest, ScheduleAndWait) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3);
  std::atomic<int> sum{0};
  for (int i = 1; i <= 100; ++i) pool.Schedule([&sum, i] { sum += i; });
  pool.Wait();
  EXPECT_EQ(sum.load(), 5050);
  pool.Wait();  // nothing pending: returns at once
}

TEST(ThreadPoolTest, ClosuresMayScheduleMore) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  for (int i = 0; i < 10; ++i)
    pool.Schedule([&] {
      ++count;
      pool.Schedule([&] { ++count; });
    });
  pool.Wait();
  EXPECT_EQ(count.load(), 20);
}

TEST(ThreadPoolTest, DestructorRunsEverythingScheduled) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 50; ++i) pool.Schedule([&] { ++count; });
  }
  EXPECT_EQ(count.load(), 50);
}

TEST(ThreadPoolTest, ParallelForCoversRangeOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int64_t> calls{0};
    pool.ParallelFor(n, 16, [&](int64_t b, int64_t e) {
      ASSERT_LE(0, b);
      ASSERT_LT(b, e);
      ASSERT_LE(e, n);
      ++calls;
      for (int64_t i = b; i < e; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    if (n > 0 && n <= 16) {
      EXPECT_EQ(calls.load(), 1);
    }
  }
}

TEST(ThreadPoolTest, ParallelForUsesSeveralThreads) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  pool.ParallelFor(64, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GT(ids.size(), 1u);
}

TEST(ThreadPoolTest, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.ParallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.ParallelFor(100, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 800);
  EXPECT_FALSE(pool.InWorkerThread());
}

TEST(ThreadPoolTest, ManyShortParallelFors) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 500; ++rep) {
    std::vector<int64_t> v(257, 1);
    std::atomic<int64_t> s{0};
    pool.ParallelFor(static_cast<int64_t>(v.size()), 8, [&](int64_t b, int64_t e) {
      s += std::accumulate(v.begin() + b, v.begin() + e, int64_t{0});
    });
    ASSERT_EQ(s.load(), 257);
  }
}

TEST(ThreadPoolTest, EigenPoolIsTheSameWorkers) {
  ThreadPool pool(2);
  Eigen::ThreadPoolInterface* e = pool.eigen_pool();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->NumThreads(), 2);
  EXPECT_EQ(e->CurrentThreadId(), -1);
  std::atomic<int> in_worker{0};
  Eigen::Barrier done(4);
  for (int i = 0; i < 4; ++i)
    e->Schedule([&] {
      if (pool.InWorkerThread()) ++in_worker;
      done.Notify();
    });
  done.Wait();
  EXPECT_EQ(in_worker.load(), 4);
}

TEST(ThreadPoolTest, ParallelForFromSeveralCallers) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep)
        pool.ParallelFor(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 1000);
}

TEST(ThreadPoolTest, WaitSeesClosuresScheduledFromWorkers) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  pool.Schedule([&] {
    for (int i = 0; i < 100; ++i)
      pool.Schedule([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        ++count;
      });
  });
  pool.Wait();
  EXPECT_EQ(count.load(), 100);
}

TEST(ThreadPoolTest, WidePoolParallelForTree) {
  // More workers than cores: the helpers' spawn tree (node k starts 2k+1 and 2k+2) must still
  // cover every chunk exactly once, also when the caller finishes before the helpers start.
  ThreadPool pool(16);
  for (int rep = 0; rep < 50; ++rep) {
    for (int64_t n : {2, 17, 64, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[i];
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace kiln
