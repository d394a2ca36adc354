// DotTransposeFolding: text in, the dot's operands and dimension numbers checked, values
// checked by the evaluator before and after (exactly: the same products in the same order).
#include "kiln/cpu/dot_transpose_folding.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln::cpu {
namespace {

using kiln::testing::EntryOps;
using kiln::testing::RunPassAndCheck;

const DotDimensionNumbers& Dims(const HloModule& m) {
  return *m.entry_computation()->root_instruction()->attrs().dot_dimension_numbers;
}

TEST(DotTransposeFoldingTest, BothOperands) {
  DotTransposeFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[5,3] parameter(0)
  y = f32[4,5] parameter(1)
  xt = f32[3,5] transpose(x), dimensions={1,0}
  yt = f32[5,4] transpose(y), dimensions={1,0}
  ROOT d = f32[3,4] dot(xt, yt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,dot");
  EXPECT_EQ(Dims(*m).lhs_contracting_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Dims(*m).rhs_contracting_dimensions, std::vector<int64_t>{1});
}

TEST(DotTransposeFoldingTest, Batched) {
  DotTransposeFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  q = f32[2,6,3] parameter(0)
  k = f32[2,7,3] parameter(1)
  kt = f32[2,3,7] transpose(k), dimensions={0,2,1}
  ROOT s = f32[2,6,7] dot(q, kt), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,dot");
  EXPECT_EQ(Dims(*m).rhs_contracting_dimensions, std::vector<int64_t>{2});
  EXPECT_EQ(Dims(*m).lhs_contracting_dimensions, std::vector<int64_t>{2});
}

TEST(DotTransposeFoldingTest, SharedTransposeStays) {
  DotTransposeFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[5,3] parameter(0)
  y = f32[5,4] parameter(1)
  xt = f32[3,5] transpose(x), dimensions={1,0}
  d = f32[3,4] dot(xt, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3,4], f32[3,5]) tuple(d, xt)
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,transpose,dot,tuple");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(0)->operand(0)->opcode(), HloOpcode::kParameter);
}

TEST(DotTransposeFoldingTest, TransposedResult) {
  DotTransposeFolding pass;
  // x^T dy then transposed (a weight gradient as JAX emits it): dot(dy, x) directly.
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  dy = f32[6,4] parameter(0)
  x = f32[6,3] parameter(1)
  xt = f32[3,6] transpose(x), dimensions={1,0}
  d = f32[3,4] dot(xt, dy), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[4,3] transpose(d), dimensions={1,0}
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,dot");
  const HloInstruction* root = m->entry_computation()->root_instruction();
  EXPECT_EQ(root->operand(0)->name(), "dy");
  EXPECT_EQ(Dims(*m).lhs_contracting_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Dims(*m).rhs_contracting_dimensions, std::vector<int64_t>{0});
}

TEST(DotTransposeFoldingTest, TransposedBatchedResult) {
  DotTransposeFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  a = f32[2,5,3] parameter(0)
  b = f32[2,3,4] parameter(1)
  d = f32[2,5,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT t = f32[2,4,5] transpose(d), dimensions={0,2,1}
})");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,dot");
  EXPECT_EQ(Dims(*m).lhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(Dims(*m).rhs_contracting_dimensions, std::vector<int64_t>{2});
}

TEST(DotTransposeFoldingTest, LeftAlone) {
  DotTransposeFolding pass;
  // A batch-moving transpose; a non-canonical dot.
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  q = f32[6,2,3] parameter(0)
  k = f32[2,3,7] parameter(1)
  qt = f32[2,6,3] transpose(q), dimensions={1,0,2}
  ROOT s = f32[2,6,7] dot(qt, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})", false);
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[5,3] parameter(0)
  y = f32[4,5] parameter(1)
  yt = f32[5,4] transpose(y), dimensions={1,0}
  ROOT d = f32[3,4] dot(x, yt), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})", false);
}

}  // namespace
}  // namespace kiln::cpu
