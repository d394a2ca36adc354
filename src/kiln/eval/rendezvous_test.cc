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
  EXPECT_EQ(rv.Post("m", std::make_shared<const int>(8)).code(), StatusCode::kAlreadyExists);
  auto v = rv.Take("m", 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*static_cast<const int*>(v->get()), 7);
}

}  // namespace
}  // namespace kiln
