#include "kiln/autotune/whole_program.h"

#include <gtest/gtest.h>

namespace kiln::autotune {
namespace {

// A program of three tuned choices whose effects add up: choice 1 loses in place.
struct Program {
  double base = 10.0;
  std::vector<double> tuned_effect = {-1.0, +3.0, -0.5};
  int calls = 0;
  double Time(const std::vector<bool>& reverted) {
    ++calls;
    double t = base;
    for (size_t i = 0; i < reverted.size(); ++i)
      if (!reverted[i]) t += tuned_effect[i];
    return t;
  }
};

TEST(KeepFasterChoicesTest, RevertsOnlyTheChoiceThatLosesInPlace) {
  Program p;
  const double tuned = p.Time({false, false, false});  // 11.5
  const double untuned = p.Time({true, true, true});   // 10
  auto kept = KeepFasterChoices(3, tuned, untuned, [&](const std::vector<bool>& r) -> StatusOr<double> { return p.Time(r); });
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->reverted, (std::vector<bool>{false, true, false}));
  EXPECT_DOUBLE_EQ(kept->ms, 8.5);
  EXPECT_EQ(kept->timings, 3);
}

TEST(KeepFasterChoicesTest, NothingToDoWhenTheTunedProgramIsFaster) {
  int calls = 0;
  auto kept = KeepFasterChoices(4, 9.0, 10.0, [&](const std::vector<bool>&) -> StatusOr<double> {
    ++calls;
    return 1.0;
  });
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->reverted, std::vector<bool>(4, false));
  EXPECT_EQ(calls, 0);
  EXPECT_DOUBLE_EQ(kept->ms, 9.0);
}

TEST(KeepFasterChoicesTest, NoiseWithinTheMarginKeepsTheTunedChoice) {
  // Each revert looks 0.5% faster: noise under half the 2% margin, so nothing is reverted...
  double t = 10.3;
  auto kept = KeepFasterChoices(2, 10.3, 10.0, [&](const std::vector<bool>&) -> StatusOr<double> {
    t *= 0.995;
    return t;
  });
  ASSERT_TRUE(kept.ok());
  // ...until the end, where the program is still slower than untuned by more than the margin?
  // 10.3 > 10.2: yes, so everything goes back.
  EXPECT_EQ(kept->reverted, std::vector<bool>(2, true));
}

TEST(KeepFasterChoicesTest, EverythingBackWhenNoSingleRevertHelps) {
  // The choices only hurt together (an interaction no single revert shows).
  auto time = [](const std::vector<bool>& r) -> StatusOr<double> {
    const bool all_tuned = !r[0] && !r[1];
    const bool none_tuned = r[0] && r[1];
    return none_tuned ? 10.0 : all_tuned ? 12.0 : 12.0;
  };
  auto kept = KeepFasterChoices(2, 12.0, 10.0, time);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->reverted, std::vector<bool>(2, true));
  EXPECT_DOUBLE_EQ(kept->ms, 10.0);
}

TEST(KeepFasterChoicesTest, TimingErrorsEndTheSearch) {
  auto kept = KeepFasterChoices(2, 12.0, 10.0, [](const std::vector<bool>&) -> StatusOr<double> {
    return Unavailable("device lost");
  });
  EXPECT_EQ(kept.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kiln::autotune
