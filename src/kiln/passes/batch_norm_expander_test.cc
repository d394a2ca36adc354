// BatchNormExpander (Note [Batch norm expansion]): every form expands to reductions and
// elementwise ops, and the expansion evaluates to what the evaluator's batch-norm kernels give
// on random arguments (per-type tolerance: the expansion rounds differently).
#include "kiln/passes/batch_norm_expander.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::Match;
using testing::RunPassAndCheck;

int Count(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloComputation* c : m.computations())
    for (const HloInstruction* i : c->instructions()) n += i->opcode() == op;
  return n;
}

void ExpectExpanded(const HloModule& m) {
  EXPECT_EQ(Count(m, HloOpcode::kBatchNormTraining), 0);
  EXPECT_EQ(Count(m, HloOpcode::kBatchNormInference), 0);
  EXPECT_EQ(Count(m, HloOpcode::kBatchNormGrad), 0);
  EXPECT_GT(Count(m, HloOpcode::kReduce) + Count(m, HloOpcode::kRsqrt), 0);
}

TEST(BatchNormExpander, TrainingF32FeatureInTheMiddle) {
  BatchNormExpander pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[2,3,4,5] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  ROOT bn = (f32[2,3,4,5], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
}
)", true, Match::kClose);
  ExpectExpanded(*m);
  EXPECT_EQ(Count(*m, HloOpcode::kReduce), 2);  // mean, then the centred variance
}

TEST(BatchNormExpander, TrainingLastFeatureF64AndF16) {
  BatchNormExpander pass;
  ExpectExpanded(*RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f64[8,7] parameter(0)
  s = f64[7] parameter(1)
  o = f64[7] parameter(2)
  ROOT bn = (f64[8,7], f64[7], f64[7]) batch-norm-training(x, s, o), epsilon=1e-5, feature_index=1
}
)", true, Match::kClose));
  ExpectExpanded(*RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f16[4,6,3] parameter(0)
  s = f16[4] parameter(1)
  o = f16[4] parameter(2)
  ROOT bn = (f16[4,6,3], f16[4], f16[4]) batch-norm-training(x, s, o), epsilon=0.01, feature_index=0
}
)", true, Match::kClose));
}

TEST(BatchNormExpander, Inference) {
  BatchNormExpander pass;
  // var must be non-negative: its absolute value plus one (the arguments are random).
  ExpectExpanded(*RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[2,5,3] parameter(0)
  s = f32[5] parameter(1)
  o = f32[5] parameter(2)
  mu = f32[5] parameter(3)
  v0 = f32[5] parameter(4)
  a = f32[5] abs(v0)
  one = f32[] constant(1)
  ones = f32[5] broadcast(one), dimensions={}
  v = f32[5] add(a, ones)
  ROOT bn = f32[2,5,3] batch-norm-inference(x, s, o, mu, v), epsilon=0.001, feature_index=1
}
)", true, Match::kClose));
  ExpectExpanded(*RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = bf16[6,4] parameter(0)
  s = bf16[4] parameter(1)
  o = bf16[4] parameter(2)
  mu = bf16[4] parameter(3)
  v0 = bf16[4] parameter(4)
  v = bf16[4] multiply(v0, v0)
  ROOT bn = bf16[6,4] batch-norm-inference(x, s, o, mu, v), epsilon=0.1, feature_index=1
}
)", true, Match::kClose));
}

TEST(BatchNormExpander, GradAndTrainingTogether) {
  BatchNormExpander pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[3,4,2] parameter(0)
  s = f32[4] parameter(1)
  o = f32[4] parameter(2)
  dy = f32[3,4,2] parameter(3)
  t = (f32[3,4,2], f32[4], f32[4]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
  mean = f32[4] get-tuple-element(t), index=1
  var = f32[4] get-tuple-element(t), index=2
  g = (f32[3,4,2], f32[4], f32[4]) batch-norm-grad(x, s, mean, var, dy), epsilon=0.001, feature_index=1
  y = f32[3,4,2] get-tuple-element(t), index=0
  dx = f32[3,4,2] get-tuple-element(g), index=0
  ds = f32[4] get-tuple-element(g), index=1
  do = f32[4] get-tuple-element(g), index=2
  ROOT r = (f32[3,4,2], f32[3,4,2], f32[4], f32[4]) tuple(y, dx, ds, do)
}
)", true, Match::kClose);
  ExpectExpanded(*m);
  // Both expansions (f32) share one add computation.
  int adds = 0;
  for (const HloComputation* c : m->computations()) adds += c->name().starts_with("batch_norm_add");
  EXPECT_EQ(adds, 1);
}

TEST(BatchNormExpander, InsideALoopBodyAndNothingElse) {
  BatchNormExpander pass;
  // A module without batch norm is left alone.
  RunPassAndCheck(pass, R"(
HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
)", false);
  // Batch norm in a called computation.
  ExpectExpanded(*RunPassAndCheck(pass, R"(
HloModule m
body {
  x = f32[4,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  t = (f32[4,3], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
  ROOT y = f32[4,3] get-tuple-element(t), index=0
}
ENTRY e {
  x = f32[4,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  ROOT c = f32[4,3] call(x, s, o), to_apply=body
}
)", true, Match::kClose));
}

}  // namespace
}  // namespace kiln
