// The rendezvous itself: exchange, point-to-point, timeouts, finished and aborted peers.
#include "kiln/eval/rendezvous.h"

#include <gtest/gtest.h>

#include <thread>

namespace kiln {
namespace {

TEST(Rendezvous, ExchangeGivesEveryoneEveryPointer) {
  Rendezvous rv(3);
  int values[3] = {1, 2, 3};
  int sums[3] = {};
  const int64_t group[3] = {0, 1, 2};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i)
    ts.emplace_back([&, i] {
      Status s = rv.Exchange("k", group, i, &values[i], [&](std::span<const void* const> p) {
        for (const void* q : p) sums[i] += *static_cast<const int*>(q);
        return OkStatus();
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(sums[0], 6);
  EXPECT_EQ(sums[2], 6);
}

TEST(Rendezvous, MissingPeerTimesOut) {
  Rendezvous rv(2, RendezvousOptions{std::chrono::milliseconds(50)});
  const int64_t group[2] = {0, 1};
  Status s = rv.Exchange("all-reduce %x #0", group, 0, nullptr,
                         [](std::span<const void* const>) { return OkStatus(); });
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("participant(s) 1 did not arrive"), std::string::npos) << s.ToString();
}

TEST(Rendezvous, FinishedOrAbortedPeerFailsAtOnce) {
  Rendezvous rv(2);  // a minute's timeout: the test would time out if these waited
  const int64_t group[2] = {0, 1};
  rv.Finish(1);
  Status s = rv.Exchange("k", group, 0, nullptr, [](std::span<const void* const>) { return OkStatus(); });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  Rendezvous rv2(2);
  std::thread t([&] { rv2.Abort(Status(StatusCode::kAborted, "participant 1 failed")); });
  auto v = rv2.Take("m", 1);
  t.join();
  EXPECT_EQ(v.status().code(), StatusCode::kAborted);
}

TEST(Rendezvous, PostThenTake) {
  Rendezvous rv(2);
  ASSERT_TRUE(rv.Post("m", std::make_shared<const int>(7)).ok());
  ASSERT_TRUE(rv.Post("m", std::make_shared<const int>(8)).ok());
  auto v = rv.Take("m", 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*static_cast<const int*>(v->get()), 7);
  auto w = rv.Take("m", 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*static_cast<const int*>(w->get()), 8);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Rendezvous, ReusedKeyMeetsOncePerRound) {
  Rendezvous rv(2);
  const int64_t group[2] = {0, 1};
  int rounds[2] = {};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        int mine = k;
        Status s = rv.Exchange("same", group, i, &mine, [&](std::span<const void* const> p) {
          if (*static_cast<const int*>(p[0]) == *static_cast<const int*>(p[1])) ++rounds[i];
          return OkStatus();
        });
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(rounds[0], 200);
  EXPECT_EQ(rounds[1], 200);
}

}  // namespace
}  // namespace kiln

#include "kiln/eval/communicator.h"

namespace kiln {
namespace {

TEST(InProcessCommunicator, AllReduceGatherScatterAllToAllPermute) {
  auto rv = std::make_shared<Rendezvous>(3);
  InProcessCommunicator comm(rv);
  const int64_t group[3] = {0, 1, 2};
  std::vector<std::vector<float>> sum(3), gathered(3), scattered(3), a2a(3), permuted(3);
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i)
    ts.emplace_back([&, i] {
      std::vector<float> mine = {float(i), float(10 + i), float(20 + i)};
      CollectiveCall call{"c", group, i};
      sum[i].resize(3);
      EXPECT_TRUE(comm.AllReduce(call, PrimitiveType::kF32, ReductionKind::kSum, mine.data(), sum[i].data(), 3).ok());
      gathered[i].resize(9);
      call.key = "g";
      EXPECT_TRUE(comm.AllGather(call, mine.data(), gathered[i].data(), 12).ok());
      scattered[i].resize(1);
      call.key = "s";
      EXPECT_TRUE(comm.ReduceScatter(call, PrimitiveType::kF32, ReductionKind::kMax, mine.data(), scattered[i].data(), 1).ok());
      a2a[i].resize(3);
      call.key = "a";
      EXPECT_TRUE(comm.AllToAll(call, mine.data(), a2a[i].data(), 4).ok());
      // In place: the result overwrites the send buffer the others read.
      call.key = "p";
      EXPECT_TRUE(comm.Permute(call, mine.data(), mine.data(), 12, (i + 2) % 3).ok());
      permuted[i] = mine;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(sum[1], (std::vector<float>{3, 33, 63}));
  EXPECT_EQ(gathered[2], (std::vector<float>{0, 10, 20, 1, 11, 21, 2, 12, 22}));
  EXPECT_EQ(scattered[0], (std::vector<float>{2}));
  EXPECT_EQ(scattered[2], (std::vector<float>{22}));
  EXPECT_EQ(a2a[1], (std::vector<float>{10, 11, 12}));
  EXPECT_EQ(permuted[0], (std::vector<float>{2, 12, 22}));
  EXPECT_EQ(permuted[1], (std::vector<float>{0, 10, 20}));
}

}  // namespace
}  // namespace kiln
