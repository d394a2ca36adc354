#include "kiln/passes/loop_invariant_code_motion.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::RunPassAndCheck;

// A counted loop with state (i, h: f32[4,8], w: f32[8,8] passed through, b: f32[8] passed
// through, s: f32[] passed through). `step` defines `h2` from i, h, w, b, s; `bound` trips.
std::string Loop(std::string_view step, int bound = 5, std::string_view root = "ROOT r = f32[4,8] get-tuple-element(l), index=1") {
  return StrCat(R"(
HloModule licm
cond {
  p = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant()", bound, R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[4,8] get-tuple-element(p), index=1
  w = f32[8,8] get-tuple-element(p), index=2
  b = f32[8] get-tuple-element(p), index=3
  s = f32[] get-tuple-element(p), index=4
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  )", step, R"(
  ROOT t = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) tuple(i2, h2, w, b, s)
}
ENTRY e {
  h0 = f32[4,8] parameter(0)
  w0 = f32[8,8] parameter(1)
  b0 = f32[8] parameter(2)
  s0 = f32[] parameter(3)
  z = s32[] constant(0)
  init = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) tuple(z, h0, w0, b0, s0)
  l = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) while(init), condition=cond, body=body
  )", root, R"(
}
)");
}

const HloComputation* Body(const HloModule& m) {
  for (const HloComputation* c : m.computations())
    if (c->name() == "body") return c;
  return nullptr;
}

int Count(const HloComputation* c, HloOpcode op) {
  int n = 0;
  for (const HloInstruction* i : c->instructions()) n += i->opcode() == op;
  return n;
}

int64_t StateSize(const HloModule& m) {
  return Body(m)->parameter_instruction(0)->shape().tuple_shapes_size();
}

TEST(LoopInvariantCodeMotion, MovesAWeightCastEachStep) {
  // A mixed-precision step: the f32 weight rounded to bf16 every trip.
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, Loop(R"(
  wb = bf16[8,8] convert(w)
  hb = bf16[4,8] convert(h)
  d = bf16[4,8] dot(hb, wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[4,8] convert(d))"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(StateSize(*m), 6);
  EXPECT_EQ(Count(Body(*m), HloOpcode::kConvert), 2);  // h's and the result's
  EXPECT_EQ(Count(m->entry_computation(), HloOpcode::kConvert), 1);
}

TEST(LoopInvariantCodeMotion, MovesATransposeAndTheValuesBuiltOnIt) {
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, Loop(R"(
  wt = f32[8,8] transpose(w), dimensions={1,0}
  ww = f32[8,8] add(wt, w)
  d = f32[4,8] dot(h, ww), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[4,8] tanh(d))"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(StateSize(*m), 6);  // one element: ww (wt only feeds it)
  EXPECT_EQ(Count(Body(*m), HloOpcode::kTranspose), 0);
  EXPECT_EQ(Count(Body(*m), HloOpcode::kDot), 1);
}

TEST(LoopInvariantCodeMotion, LeavesBroadcastsInTheBody) {
  // The broadcast bias fuses into its user for free; carrying it would cost memory.
  LoopInvariantCodeMotion pass;
  RunPassAndCheck(pass, Loop(R"(
  bb = f32[4,8] broadcast(b), dimensions={1}
  h2 = f32[4,8] add(h, bb))"), /*expect_changed=*/false);
}

TEST(LoopInvariantCodeMotion, LeavesValuesLargerThanTheirSources) {
  // An elementwise op of broadcasts is invariant but larger than what it is computed from.
  LoopInvariantCodeMotion pass;
  RunPassAndCheck(pass, Loop(R"(
  sb = f32[4,8] broadcast(s), dimensions={}
  c = f32[] constant(3)
  cb = f32[4,8] broadcast(c), dimensions={}
  k = f32[4,8] multiply(sb, cb)
  h2 = f32[4,8] add(h, k))"), /*expect_changed=*/false);
}

TEST(LoopInvariantCodeMotion, MovesTheScalarUnderABroadcast) {
  // exp(s) is invariant and small: it moves, its broadcast stays.
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, Loop(R"(
  e = f32[] exponential(s)
  eb = f32[4,8] broadcast(e), dimensions={}
  h2 = f32[4,8] multiply(h, eb))"));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Count(Body(*m), HloOpcode::kExp), 0);
  EXPECT_EQ(Count(Body(*m), HloOpcode::kBroadcast), 1);
}

TEST(LoopInvariantCodeMotion, LeavesValuesOfTheChangingState) {
  LoopInvariantCodeMotion pass;
  RunPassAndCheck(pass, Loop(R"(
  ht = f32[4,8] tanh(h)
  fi = f32[] convert(i)
  fb = f32[4,8] broadcast(fi), dimensions={}
  h2 = f32[4,8] add(ht, fb))"), /*expect_changed=*/false);
}

TEST(LoopInvariantCodeMotion, LeavesSideEffectsAndControlDependencies) {
  LoopInvariantCodeMotion pass;
  RunPassAndCheck(pass, Loop(R"(
  e = f32[] exponential(s), control-predecessors={i2}
  eb = f32[4,8] broadcast(e), dimensions={}
  h2 = f32[4,8] multiply(h, eb))"), /*expect_changed=*/false);
}

TEST(LoopInvariantCodeMotion, ZeroTripLoopKeepsItsValues) {
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, Loop(R"(
  wt = f32[8,8] transpose(w), dimensions={1,0}
  d = f32[4,8] dot(h, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[4,8] tanh(d))", /*bound=*/0));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(StateSize(*m), 6);
}

TEST(LoopInvariantCodeMotion, LoopWhoseWholeStateIsUsedIsLeftAlone) {
  LoopInvariantCodeMotion pass;
  RunPassAndCheck(pass, Loop(R"(
  wt = f32[8,8] transpose(w), dimensions={1,0}
  d = f32[4,8] dot(h, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[4,8] tanh(d))", 5, "ROOT r = (s32[], f32[4,8], f32[8,8], f32[8], f32[]) copy(l)"),
                  /*expect_changed=*/false);
}

TEST(LoopInvariantCodeMotion, MovesAVariadicReduceThroughItsElements) {
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule licm
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GE
  v = f32[] select(gt, a, b)
  vi = s32[] select(gt, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, vi)
}
cond {
  p = (s32[], f32[8], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[8] get-tuple-element(p), index=1
  x = f32[16] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  io = s32[16] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  am = (f32[], s32[]) reduce(x, io, ninf, zero), dimensions={0}, to_apply=argmax
  m = f32[] get-tuple-element(am), index=0
  mb = f32[8] broadcast(m), dimensions={}
  h2 = f32[8] add(h, mb)
  ROOT t = (s32[], f32[8], f32[16]) tuple(i2, h2, x)
}
ENTRY e {
  h0 = f32[8] parameter(0)
  x0 = f32[16] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[8], f32[16]) tuple(z, h0, x0)
  l = (s32[], f32[8], f32[16]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(l), index=1
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Count(Body(*m), HloOpcode::kReduce), 0);
}

TEST(LoopInvariantCodeMotion, NestedLoopsMoveOutOfBoth) {
  LoopInvariantCodeMotion pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule licm
icond {
  p = (s32[], f32[4,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ibody {
  p = (s32[], f32[4,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[4,8] get-tuple-element(p), index=1
  w = f32[8,8] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  wt = f32[8,8] transpose(w), dimensions={1,0}
  d = f32[4,8] dot(h, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[4,8] tanh(d)
  ROOT t = (s32[], f32[4,8], f32[8,8]) tuple(i2, h2, w)
}
ocond {
  p = (s32[], f32[4,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
obody {
  p = (s32[], f32[4,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[4,8] get-tuple-element(p), index=1
  w = f32[8,8] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  z = s32[] constant(0)
  init = (s32[], f32[4,8], f32[8,8]) tuple(z, h, w)
  l = (s32[], f32[4,8], f32[8,8]) while(init), condition=icond, body=ibody
  h2 = f32[4,8] get-tuple-element(l), index=1
  ROOT t = (s32[], f32[4,8], f32[8,8]) tuple(i2, h2, w)
}
ENTRY e {
  h0 = f32[4,8] parameter(0)
  w0 = f32[8,8] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[4,8], f32[8,8]) tuple(z, h0, w0)
  l = (s32[], f32[4,8], f32[8,8]) while(init), condition=ocond, body=obody
  ROOT r = f32[4,8] get-tuple-element(l), index=1
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Count(m->entry_computation(), HloOpcode::kTranspose), 1);
  for (const HloComputation* c : m->computations())
    if (c != m->entry_computation()) {
      EXPECT_EQ(Count(c, HloOpcode::kTranspose), 0) << c->name();
    }
}

}  // namespace
}  // namespace kiln
