// Dependency analysis and the executor (thunk_sequence.h), with fake thunks.
#include "kiln/cpu/thunk_sequence.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

namespace kiln::cpu {
namespace {

BufferSlice S(int64_t alloc, int64_t offset, int64_t size) { return {alloc, offset, size}; }

std::vector<std::vector<int32_t>> Deps(std::vector<std::vector<BufferUse>> uses) {
  return ComputeThunkDependencies(uses);
}

TEST(ThunkDependenciesTest, ReadAfterWriteWriteAfterReadWriteAfterWrite) {
  auto d = Deps({
      {BufferUse::Write(S(0, 0, 16))},                              // 0 writes x
      {BufferUse::Read(S(0, 0, 16)), BufferUse::Write(S(0, 16, 16))},  // 1 reads x, writes y
      {BufferUse::Read(S(0, 0, 16))},                               // 2 reads x
      {BufferUse::Write(S(0, 0, 8))},                               // 3 overwrites part of x
      {BufferUse::Write(S(0, 16, 16))},                             // 4 overwrites y
  });
  EXPECT_EQ(d[0], (std::vector<int32_t>{}));
  EXPECT_EQ(d[1], (std::vector<int32_t>{0}));
  EXPECT_EQ(d[2], (std::vector<int32_t>{0}));        // reads do not order reads
  EXPECT_EQ(d[3], (std::vector<int32_t>{0, 1, 2}));  // WAW on 0, WAR on 1 and 2
  EXPECT_EQ(d[4], (std::vector<int32_t>{1}));        // WAW on 1 (nobody read y)
}

TEST(ThunkDependenciesTest, DisjointSlicesOtherAllocationsAndEmptySlicesAreIndependent) {
  auto d = Deps({
      {BufferUse::Write(S(0, 0, 64))},
      {BufferUse::Write(S(0, 64, 64))},   // adjacent, not overlapping
      {BufferUse::Write(S(1, 0, 64))},    // another allocation
      {BufferUse::Write(S(0, 32, 0))},    // zero bytes
      {BufferUse::Read(S(0, 60, 8))},     // straddles 0 and 1
  });
  EXPECT_TRUE(d[1].empty());
  EXPECT_TRUE(d[2].empty());
  EXPECT_TRUE(d[3].empty());
  EXPECT_EQ(d[4], (std::vector<int32_t>{0, 1}));
}

TEST(ThunkDependenciesTest, CoveringWriteSupersedesEarlierAccesses) {
  // 2 covers what 0 and 1 touched: 3 only needs 2 (and reaches 0, 1 through it).
  auto d = Deps({
      {BufferUse::Write(S(0, 0, 32))},
      {BufferUse::Read(S(0, 0, 32))},
      {BufferUse::Write(S(0, 0, 64))},
      {BufferUse::Read(S(0, 8, 8))},
  });
  EXPECT_EQ(d[2], (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(d[3], (std::vector<int32_t>{2}));
}

// A thunk that calls a function.
class FakeThunk : public Thunk {
 public:
  FakeThunk(std::string name, std::vector<BufferUse> uses, int64_t cost, std::function<Status()> fn)
      : Thunk(Kind::kKernel, std::move(name), std::move(uses), cost), fn_(std::move(fn)) {}
  Status Execute(const ExecuteParams&) const override { return fn_(); }

 private:
  std::function<Status()> fn_;
};

ExecutorOptions Opts() { return ExecutorOptions{}; }
constexpr int64_t kTiny = 10, kMedium = 10000, kBig = 1000000;

TEST(ThunkExecutorTest, RandomGraphsRespectDependencies) {
  ThreadPool pool(3);
  std::mt19937 rng(7);
  for (int round = 0; round < 30; ++round) {
    const int n = 40;
    std::atomic<int64_t> clock{0};
    std::vector<int64_t> start(n, -1), end(n, -1);
    std::vector<std::unique_ptr<Thunk>> thunks;
    for (int i = 0; i < n; ++i) {
      std::vector<BufferUse> uses;
      for (int k = 0; k < 2; ++k) {
        BufferSlice s = S(rng() % 2, (rng() % 8) * 16, 16 * (1 + rng() % 2));
        uses.push_back(rng() % 2 ? BufferUse::Write(s) : BufferUse::Read(s));
      }
      int64_t cost = (std::array<int64_t, 3>{kTiny, kMedium, kBig})[rng() % 3];
      thunks.push_back(std::make_unique<FakeThunk>("t" + std::to_string(i), uses, cost, [&, i] {
        start[i] = clock++;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        end[i] = clock++;
        return OkStatus();
      }));
    }
    ThunkSequence seq(std::move(thunks), Opts());
    ExecuteParams p;
    p.pool = &pool;
    ASSERT_TRUE(seq.Execute(p).ok());
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(start[i], 0) << "thunk " << i << " never ran";
      for (int32_t pred : seq.predecessors(i))
        EXPECT_LT(end[pred], start[i]) << "round " << round << ": " << pred << " -> " << i;
    }
  }
}

TEST(ThunkExecutorTest, IndependentMediumThunksOverlap) {
  ThreadPool pool(1);  // one worker + the calling thread
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  // Each waits (bounded) until the other has started: only concurrent execution lets both see 2.
  std::atomic<int> saw_both{0};
  auto meet = [&] {
    std::unique_lock<std::mutex> lock(mu);
    ++arrived;
    cv.notify_all();
    if (cv.wait_for(lock, std::chrono::seconds(5), [&] { return arrived == 2; })) ++saw_both;
    return OkStatus();
  };
  std::vector<std::unique_ptr<Thunk>> thunks;
  thunks.push_back(std::make_unique<FakeThunk>("a", std::vector<BufferUse>{BufferUse::Write(S(0, 0, 64))}, kMedium, meet));
  thunks.push_back(std::make_unique<FakeThunk>("b", std::vector<BufferUse>{BufferUse::Write(S(0, 64, 64))}, kMedium, meet));
  ThunkSequence seq(std::move(thunks), Opts());
  EXPECT_TRUE(seq.concurrent());
  ExecuteParams p;
  p.pool = &pool;
  ASSERT_TRUE(seq.Execute(p).ok());
  EXPECT_EQ(saw_both.load(), 2);
}

TEST(ThunkExecutorTest, BigAndTinyThunksRunOnTheCallingThread) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran(4);
  std::vector<std::unique_ptr<Thunk>> thunks;
  const int64_t costs[] = {kBig, kTiny, kMedium, kMedium};
  for (int i = 0; i < 4; ++i)
    thunks.push_back(std::make_unique<FakeThunk>(
        "t", std::vector<BufferUse>{BufferUse::Write(S(0, 64 * i, 64))}, costs[i], [&, i] {
          ran[i] = std::this_thread::get_id();
          return OkStatus();
        }));
  ThunkSequence seq(std::move(thunks), Opts());
  ExecuteParams p;
  p.pool = &pool;
  ASSERT_TRUE(seq.Execute(p).ok());
  EXPECT_EQ(ran[0], caller);
  EXPECT_EQ(ran[1], caller);
}

TEST(ThunkExecutorTest, SequentialRunsInScheduleOrder) {
  ThreadPool pool(2);
  std::vector<std::unique_ptr<Thunk>> thunks;
  for (int i = 0; i < 6; ++i)
    thunks.push_back(std::make_unique<FakeThunk>(
        "t", std::vector<BufferUse>{BufferUse::Write(S(0, 64 * i, 64))}, kMedium, [] { return OkStatus(); }));
  ThunkSequence seq(std::move(thunks), Opts());
  ExecutorOptions sequential;
  sequential.sequential = true;
  ExecuteParams p;
  p.pool = &pool;
  p.executor = &sequential;
  std::vector<int32_t> trace;
  ASSERT_TRUE(seq.Execute(p, &trace).ok());
  EXPECT_EQ(trace, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(ThunkExecutorTest, FirstErrorStopsDependents) {
  ThreadPool pool(2);
  for (bool sequential : {false, true}) {
    std::atomic<int> dependent_ran{0};
    std::vector<std::unique_ptr<Thunk>> thunks;
    thunks.push_back(std::make_unique<FakeThunk>("ok", std::vector<BufferUse>{BufferUse::Write(S(0, 0, 64))}, kMedium,
                                                 [] { return OkStatus(); }));
    thunks.push_back(std::make_unique<FakeThunk>("bad", std::vector<BufferUse>{BufferUse::Write(S(0, 64, 64))},
                                                 kMedium, [] { return InvalidArgument("boom"); }));
    thunks.push_back(std::make_unique<FakeThunk>("after", std::vector<BufferUse>{BufferUse::Read(S(0, 64, 64))},
                                                 kMedium, [&] {
                                                   ++dependent_ran;
                                                   return OkStatus();
                                                 }));
    ThunkSequence seq(std::move(thunks), Opts());
    ExecutorOptions o;
    o.sequential = sequential;
    ExecuteParams p;
    p.pool = &pool;
    p.executor = &o;
    Status s = seq.Execute(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "boom");
    EXPECT_EQ(dependent_ran.load(), 0);
  }
}

TEST(ThunkExecutorTest, ProfileCountsRuns) {
  std::vector<std::unique_ptr<Thunk>> thunks;
  thunks.push_back(std::make_unique<FakeThunk>("a", std::vector<BufferUse>{}, kTiny, [] { return OkStatus(); }));
  thunks.back()->set_id(0);
  ThunkSequence seq(std::move(thunks), Opts());
  ThunkProfile profile(1);
  ExecuteParams p;
  p.profile = &profile;
  ASSERT_TRUE(seq.Execute(p).ok());
  ASSERT_TRUE(seq.Execute(p).ok());
  EXPECT_EQ(profile.count(0), 2);
}

}  // namespace
}  // namespace kiln::cpu
