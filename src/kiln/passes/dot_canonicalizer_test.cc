#include "kiln/passes/dot_canonicalizer.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;

// The one dot left in the entry computation.
const HloInstruction* TheDot(const HloModule& m) {
  const HloInstruction* found = nullptr;
  for (const HloInstruction* i : m.entry_computation()->instructions())
    if (i->opcode() == HloOpcode::kDot) {
      EXPECT_EQ(found, nullptr) << "more than one dot";
      found = i;
    }
  return found;
}

std::unique_ptr<HloModule> Canonicalize(std::string_view text, bool expect_changed = true) {
  DotCanonicalizer pass;
  auto m = testing::RunPassAndCheck(pass, text, expect_changed);
  if (m) {
    const HloInstruction* dot = TheDot(*m);
    EXPECT_TRUE(dot && IsCanonicalDot(*dot)) << m->ToString();
  }
  return m;
}

std::string DotModule(std::string_view lhs, std::string_view rhs, std::string_view out,
                      std::string_view dnums, std::string_view extra = "") {
  return StrCat("HloModule m\nENTRY e {\n  a = ", lhs, " parameter(0)\n  b = ", rhs,
                " parameter(1)\n  ROOT d = ", out, " dot(a, b), ", dnums, extra, "\n}\n");
}

TEST(DotCanonicalizerTest, LeavesCanonicalDotsAlone) {
  Canonicalize(DotModule("f32[4,5]", "f32[5,6]", "f32[4,6]",
                         "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
               false);
  Canonicalize(DotModule("f32[2,4,5]", "f32[2,5,6]", "f32[2,4,6]",
                         "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                         "rhs_contracting_dims={1}"),
               false);
}

TEST(DotCanonicalizerTest, TransposedOperands) {
  // A^T B^T: both operands need a transpose.
  auto m = Canonicalize(DotModule("f32[5,4]", "f32[6,5]", "f32[4,6]",
                                  "lhs_contracting_dims={0}, rhs_contracting_dims={1}"));
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,transpose,transpose,dot");
}

TEST(DotCanonicalizerTest, BatchDimsInOddPositionsAndSeveralContractingDims) {
  auto m = Canonicalize(DotModule(
      "f32[3,2,4,5,7]", "f32[5,6,7,2,3]", "f32[3,2,4,6]",
      "lhs_batch_dims={0,1}, lhs_contracting_dims={3,4}, rhs_batch_dims={4,3}, "
      "rhs_contracting_dims={0,2}"));
  EXPECT_EQ(TheDot(*m)->shape().dimensions(), (std::vector<int64_t>{6, 4, 6}));
}

TEST(DotCanonicalizerTest, SeveralContractingDimsListedOutOfOrder) {
  Canonicalize(DotModule("f32[4,3,5]", "f32[5,3,2]", "f32[4,2]",
                         "lhs_contracting_dims={2,1}, rhs_contracting_dims={0,1}"));
}

TEST(DotCanonicalizerTest, MatrixVector) {
  auto m = Canonicalize(DotModule("f32[4,5]", "f32[5]", "f32[4]",
                                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  EXPECT_EQ(TheDot(*m)->shape().dimensions(), (std::vector<int64_t>{4, 1}));
  Canonicalize(DotModule("f32[5]", "f32[5,3]", "f32[3]",
                         "lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
}

TEST(DotCanonicalizerTest, VectorVectorAndOuterProduct) {
  Canonicalize(DotModule("f32[7]", "f32[7]", "f32[]",
                         "lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
  Canonicalize(DotModule("f32[3]", "f32[4]", "f32[3,4]", "lhs_contracting_dims={}, rhs_contracting_dims={}"));
}

TEST(DotCanonicalizerTest, NoFreeDimsWithBatch) {
  Canonicalize(DotModule("f32[2,3,5]", "f32[2,3,5]", "f32[2,3]",
                         "lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, "
                         "rhs_contracting_dims={2}"));
}

TEST(DotCanonicalizerTest, SeveralFreeDims) {
  Canonicalize(DotModule("f32[2,3,6]", "f32[6,4,5]", "f32[2,3,4,5]",
                         "lhs_contracting_dims={2}, rhs_contracting_dims={0}"));
}

TEST(DotCanonicalizerTest, KeepsPrecisionAlgorithmAndResultType) {
  auto m = Canonicalize(DotModule("bf16[5,4]", "bf16[3,5,6]", "f32[4,3,6]",
                                  "lhs_batch_dims={}, lhs_contracting_dims={0}, "
                                  "rhs_contracting_dims={1}",
                                  ", operand_precision={highest,default}"));
  const HloInstruction* dot = TheDot(*m);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->shape().element_type(), PrimitiveType::kF32);
  ASSERT_EQ(dot->attrs().precision_config.operand_precision.size(), 2u);
  EXPECT_EQ(dot->attrs().precision_config.operand_precision[0], Precision::kHighest);
  // Integer dots: s8 x s8 -> s32 with wraparound.
  Canonicalize(DotModule("s8[3,4]", "s8[2,3]", "s32[4,2]",
                         "lhs_contracting_dims={0}, rhs_contracting_dims={1}"));
}

TEST(DotCanonicalizerTest, ZeroSizedDimensions) {
  Canonicalize(DotModule("f32[0,5]", "f32[5,3]", "f32[0,3]",
                         "lhs_contracting_dims={1}, rhs_contracting_dims={0}"), false);
  Canonicalize(DotModule("f32[5,2]", "f32[0,5]", "f32[2,0]",
                         "lhs_contracting_dims={0}, rhs_contracting_dims={1}"));
  Canonicalize(DotModule("f32[4,0]", "f32[3,0]", "f32[4,3]",
                         "lhs_contracting_dims={1}, rhs_contracting_dims={1}"));
}

TEST(DotCanonicalizerTest, DotsInsideCalledComputations) {
  DotCanonicalizer pass;
  auto m = testing::RunPassAndCheck(pass, R"(
HloModule m
cond {
  s = (s32[], f32[3,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3,3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = f32[3,3] dot(x, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (s32[], f32[3,3]) tuple(i2, y)
}
ENTRY e {
  p = f32[3,3] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[3,3]) tuple(z, p)
  w = (s32[], f32[3,3]) while(init), condition=cond, body=body
  ROOT r = f32[3,3] get-tuple-element(w), index=1
}
)");
  for (const HloInstruction* i : m->GetComputationWithName("body")->instructions()) {
    if (i->opcode() == HloOpcode::kDot) {
      EXPECT_TRUE(IsCanonicalDot(*i));
    }
  }
}

}  // namespace
}  // namespace kiln
