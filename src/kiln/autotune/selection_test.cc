#include "kiln/autotune/selection.h"

#include <gtest/gtest.h>

namespace kiln::autotune {
namespace {

CandidateRecord Rec(int id, Verdict verdict, double us, uint64_t scratch = 0) {
  CandidateRecord r;
  r.config = Config("b", {{"id", id}});
  r.measurement.verdict = verdict;
  r.measurement.median_us = us;
  r.measurement.scratch_bytes = scratch;
  r.profiled = true;
  return r;
}

TEST(SelectionTest, FastestValidWins) {
  std::vector<CandidateRecord> r = {Rec(0, Verdict::kOk, 50), Rec(1, Verdict::kWrongResult, 5),
                                    Rec(2, Verdict::kOk, 20), Rec(3, Verdict::kRedzoneWritten, 1),
                                    Rec(4, Verdict::kOk, 30)};
  Selection s = SelectCandidate(r);
  EXPECT_EQ(s.chosen, 2);
  EXPECT_EQ(s.runner_up, 4);
}

TEST(SelectionTest, LeastScratchWithinTheWindow) {
  std::vector<CandidateRecord> r = {Rec(0, Verdict::kOk, 100, 1 << 20),
                                    Rec(1, Verdict::kOk, 101.5, 0),      // within 2%: wins
                                    Rec(2, Verdict::kOk, 101.0, 4096),
                                    Rec(3, Verdict::kOk, 103, 0)};       // outside the window
  Selection s = SelectCandidate(r);
  EXPECT_EQ(s.chosen, 1);
  EXPECT_EQ(s.runner_up, 0);
  EXPECT_EQ(SelectCandidate(r, {.window = 0}).chosen, 0);
  // Equal scratch inside the window: the faster one; equal times: the earlier one.
  std::vector<CandidateRecord> tie = {Rec(0, Verdict::kOk, 101), Rec(1, Verdict::kOk, 100)};
  EXPECT_EQ(SelectCandidate(tie).chosen, 1);
  std::vector<CandidateRecord> same = {Rec(0, Verdict::kOk, 100), Rec(1, Verdict::kOk, 100)};
  EXPECT_EQ(SelectCandidate(same).chosen, 0);
}

TEST(SelectionTest, DeterministicTakesTheFirstValid) {
  std::vector<CandidateRecord> r = {Rec(0, Verdict::kCompileFailed, 0), Rec(1, Verdict::kOk, 90),
                                    Rec(2, Verdict::kOk, 10)};
  Selection s = SelectCandidate(r, {.deterministic = true});
  EXPECT_EQ(s.chosen, 1);
  EXPECT_EQ(s.runner_up, 2);
}

TEST(SelectionTest, NothingValid) {
  std::vector<CandidateRecord> r = {Rec(0, Verdict::kTooSlow, 1), Rec(1, Verdict::kTimeout, 1)};
  r.push_back(Rec(2, Verdict::kOk, 1));
  r.back().profiled = false;  // never ran
  Selection s = SelectCandidate(r);
  EXPECT_EQ(s.chosen, -1);
  EXPECT_EQ(s.runner_up, -1);
  EXPECT_EQ(SelectCandidate({}).chosen, -1);
}

}  // namespace
}  // namespace kiln::autotune
