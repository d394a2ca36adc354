#include "kiln/passes/constant_folding.h"

#include <gtest/gtest.h>

#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;
using testing::RootSummary;
using testing::RunPassAndCheck;

TEST(ConstantFoldingTest, FoldsChainsOfConstants) {
  ConstantFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  p = f32[3] parameter(0)
  a = f32[3] constant({1, 2, 3})
  b = f32[3] constant({0.5, 0.25, -1})
  s = f32[3] add(a, b)
  n = f32[3] negate(s)
  ROOT r = f32[3] multiply(p, n)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,constant,multiply");
  const HloInstruction* c = m->entry_computation()->root_instruction()->operand(1);
  EXPECT_EQ(c->literal().GetAsDouble(0), -1.5);
  EXPECT_EQ(c->literal().GetAsDouble(2), -2);
}

TEST(ConstantFoldingTest, KeepsBroadcastsIotasAndRng) {
  ConstantFolding pass;
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  c = f32[] constant(2)
  b = f32[1000,1000] broadcast(c), dimensions={}
  i = s32[16] iota(), iota_dimension=0
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[4] rng(lo, hi), distribution=rng_uniform
  ROOT t = (f32[1000,1000], s32[16], f32[4]) tuple(b, i, r)
}
)", /*expect_changed=*/false);
}

TEST(ConstantFoldingTest, DoesNotGrowTheModulePastTheLimit) {
  ConstantFoldingOptions options;
  options.max_growth_elements = 16;
  ConstantFolding pass(options);
  // pad grows 4 elements into 400: not folded; the slice shrinks: folded.
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  a = f32[4] constant({1, 2, 3, 4})
  z = f32[] constant(0)
  p = f32[400] pad(a, z), padding=0_396
  s = f32[2] slice(a), slice={[1:3]}
  ROOT t = (f32[400], f32[2]) tuple(p, s)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(pad,constant)");
}

TEST(ConstantFoldingTest, RespectsTheResultSizeBound) {
  ConstantFoldingOptions options;
  options.max_result_elements = 8;
  ConstantFolding pass(options);
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  a = s32[16] constant({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16})
  ROOT n = s32[16] negate(a)
}
)", /*expect_changed=*/false);
}

TEST(ConstantFoldingTest, FoldsReducesWithCalledComputations) {
  ConstantFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
add {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT s = s32[] add(x, y)
}
ENTRY e {
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = s32[] constant(0)
  ROOT r = s32[2] reduce(a, z), dimensions={1}, to_apply=add
}
)");
  const HloInstruction* root = m->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kConstant);
  EXPECT_EQ(root->literal().GetAsInt64(0), 6);
  EXPECT_EQ(root->literal().GetAsInt64(1), 15);
}

TEST(ConstantFoldingTest, FoldsShortWhileLoopsIntoTuplesOfConstants) {
  ConstantFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  a2 = s32[] add(a, i)
  ROOT t = (s32[], s32[]) tuple(i2, a2)
}
ENTRY e {
  z = s32[] constant(0)
  init = (s32[], s32[]) tuple(z, z)
  w = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=1
}
)");
  // The loop became tuple(5, 10); the get-tuple-element then folds too.
  const HloInstruction* root = m->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kConstant);
  EXPECT_EQ(root->literal().GetAsInt64(0), 10);
}

TEST(ConstantFoldingTest, LeavesLongLoopsAlone) {
  ConstantFoldingOptions options;
  options.max_while_iterations = 10;
  ConstantFolding pass(options);
  RunPassAndCheck(pass, R"(
HloModule m
cond {
  s = (s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[]) tuple(i2)
}
ENTRY e {
  z = s32[] constant(0)
  init = (s32[]) tuple(z)
  ROOT w = (s32[]) while(init), condition=cond, body=body
}
)", /*expect_changed=*/false);
}

TEST(ConstantFoldingTest, SkipsCustomCallsAndSideEffects) {
  // (Not run through the evaluator: it cannot run these custom calls.)
  auto m = testing::ParseOrDie(R"(
HloModule m
ENTRY e {
  a = f32[2] constant({1, 2})
  cc = f32[2] custom-call(a), custom_call_target="foo"
  k = f32[2] custom-call(a), custom_call_target="bar", custom_call_has_side_effect=true
  ROOT t = (f32[2], f32[2]) tuple(cc, k)
}
)");
  ConstantFolding pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(ConstantFoldingTest, EvaluationErrorsMeanNoFold) {
  // A negate whose operand does not match its shape (built by hand: the verifier rejects it)
  // cannot be folded; the pass skips it instead of failing.
  auto m = testing::ParseOrDie(R"(
HloModule m
ENTRY e {
  a = s32[2] constant({1, 2})
  ROOT n = s32[2] negate(a)
}
)");
  HloInstruction* n = m->entry_computation()->root_instruction();
  auto bad = std::make_unique<HloInstruction>(HloOpcode::kConstant, Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {3}));
  bad->set_literal(Literal::FromInt64s(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {3}), {1, 2, 3}));
  HloInstruction* b = m->entry_computation()->AddInstruction(std::move(bad));
  n->ReplaceOperand(0, b);
  ConstantFolding pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_FALSE(*changed);
}

TEST(ConstantFoldingTest, FoldsInsideCalledComputations) {
  ConstantFolding pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  c = f32[] constant(1)
  d = f32[] constant(2)
  cd = f32[] add(c, d)
  s = f32[] add(x, y)
  ROOT r = f32[] multiply(s, cd)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}
)");
  const HloComputation* add = m->GetComputationWithName("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->instruction_count(), 5);  // x, y, constant 3, s, r
}

}  // namespace
}  // namespace kiln
