// DivideByBroadcastToMultiply: text in, the rewritten root checked, values checked by the
// evaluator before and after (random and special inputs, within the f32 tolerance).
#include "kiln/cpu/divide_to_multiply.h"

#include <gtest/gtest.h>

#include "kiln/passes/passes_test_util.h"

namespace kiln::cpu {
namespace {

using kiln::testing::Match;
using kiln::testing::RootSummary;
using kiln::testing::RunPassAndCheck;

TEST(DivideToMultiplyTest, RowSums) {
  DivideByBroadcastToMultiply pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[8,16] parameter(0)
  s = f32[8] parameter(1)
  b = f32[8,16] broadcast(s), dimensions={0}
  ROOT d = f32[8,16] divide(x, b)
})", true, Match::kClose);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(RootSummary(*m), "multiply(parameter,broadcast)");
}

TEST(DivideToMultiplyTest, ScalarConstantF64) {
  DivideByBroadcastToMultiply pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f64[4,4] parameter(0)
  c = f64[] constant(3)
  b = f64[4,4] broadcast(c), dimensions={}
  ROOT d = f64[4,4] divide(x, b)
})", true, Match::kClose);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(RootSummary(*m), "multiply(parameter,broadcast)");
}

TEST(DivideToMultiplyTest, LeftAlone) {
  DivideByBroadcastToMultiply pass;
  // Not a broadcast divisor; a broadcast that barely expands; bf16; integers.
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT d = f32[8] divide(x, y)
})", false);
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[8,2] parameter(0)
  y = f32[8] parameter(1)
  b = f32[8,2] broadcast(y), dimensions={0}
  ROOT d = f32[8,2] divide(x, b)
})", false);
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = bf16[8,16] parameter(0)
  y = bf16[8] parameter(1)
  b = bf16[8,16] broadcast(y), dimensions={0}
  ROOT d = bf16[8,16] divide(x, b)
})", false);
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = s32[8,16] parameter(0)
  y = s32[8] parameter(1)
  b = s32[8,16] broadcast(y), dimensions={0}
  ROOT d = s32[8,16] divide(x, b)
})", false);
}

}  // namespace
}  // namespace kiln::cpu
