#include "kiln/passes/scan_dot_hoisting.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::RunPassAndCheck;

// A scan over xs: f32[T,B,I]; state (i, h: f32[B,N], xs, W: f32[I,N]). `step` is the dot of the
// step: it may read `x` (the step's reshaped slice), `ds` (the slice itself, f32[1,B,I]), `w`,
// `h`. `i0`/`bound`: the counter's start and bound.
std::string Scan(std::string_view step, int t = 6, int i0 = 0, int bound = 6, std::string_view w_update = "w") {
  return StrCat(R"(
HloModule scan
cond {
  s = (s32[], f32[3,5], f32[)", t, R"(,3,4], f32[4,5]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant()", bound, R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3,5], f32[)", t, R"(,3,4], f32[4,5]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[3,5] get-tuple-element(s), index=1
  xs = f32[)", t, R"(,3,4] get-tuple-element(s), index=2
  w = f32[4,5] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  zero = s32[] constant(0)
  ds = f32[1,3,4] dynamic-slice(xs, i, zero, zero), dynamic_slice_sizes={1,3,4}
  x = f32[3,4] reshape(ds)
  )", step, R"(
  h2 = f32[3,5] add(h, y)
  w2 = f32[4,5] add()", w_update, R"(, w)
  ROOT t = (s32[], f32[3,5], f32[)", t, R"(,3,4], f32[4,5]) tuple(i2, h2, xs, w2)
}
ENTRY e {
  h0 = f32[3,5] parameter(0)
  xs = f32[)", t, R"(,3,4] parameter(1)
  w = f32[4,5] parameter(2)
  z = s32[] constant()", i0, R"()
  init = (s32[], f32[3,5], f32[)", t, R"(,3,4], f32[4,5]) tuple(z, h0, xs, w)
  l = (s32[], f32[3,5], f32[)", t, R"(,3,4], f32[4,5]) while(init), condition=cond, body=body
  ROOT r = f32[3,5] get-tuple-element(l), index=1
}
)");
}

// The same scan with the weight passed through unchanged (Scan's default updates it).
std::string Invariant(std::string text) {
  const std::string from = "w2 = f32[4,5] add(w, w)";
  text.replace(text.find(from), from.size(), "w2 = f32[4,5] copy(w)");
  const std::string root = "tuple(i2, h2, xs, w2)";
  text.replace(text.find(root), root.size(), "tuple(i2, h2, xs, w)");
  return text;
}

int64_t DotsIn(const HloComputation* c) {
  int64_t n = 0;
  for (const HloInstruction* i : c->instructions()) n += i->opcode() == HloOpcode::kDot;
  return n;
}

const HloInstruction* FindWhile(const HloModule& m) {
  for (const HloInstruction* i : m.entry_computation()->instructions())
    if (i->opcode() == HloOpcode::kWhile) return i;
  return nullptr;
}

TEST(ScanDotHoistingTest, StepProjectionBecomesOneDotBeforeTheLoop) {
  ScanDotHoisting pass;
  auto m = RunPassAndCheck(pass, Invariant(Scan("y = f32[3,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}")));
  ASSERT_TRUE(m);
  EXPECT_EQ(DotsIn(m->entry_computation()), 1);
  const HloInstruction* w = FindWhile(*m);
  ASSERT_TRUE(w);
  EXPECT_EQ(DotsIn(w->while_body()), 0);
  // P: f32[6,3,5] carried as a new state element.
  const Shape& state = w->shape();
  ASSERT_EQ(state.tuple_shapes_size(), 5);
  EXPECT_EQ(state.tuple_shapes(4).dimensions(), (std::vector<int64_t>{6, 3, 5}));
}

TEST(ScanDotHoistingTest, SliceOnTheRightWithoutReshape) {
  // dot(W^T-like f32[5,4], ds f32[1,3,4]) contracting 1 with 2 -> f32[5,1,3]; P is f32[5,6,3]
  // and the step slices it along dimension 1.
  ScanDotHoisting pass;
  auto m = RunPassAndCheck(pass, Invariant(Scan(R"(wt = f32[5,4] transpose(w), dimensions={1,0}
  c = f32[5,4] constant({{1,2,3,4},{0,1,0,1},{2,2,2,2},{-1,0,1,0},{3,1,4,1}})
  y5 = f32[5,1,3] dot(c, ds), lhs_contracting_dims={1}, rhs_contracting_dims={2}
  yr = f32[5,3] reshape(y5)
  y = f32[3,5] transpose(yr), dimensions={1,0})")));
  ASSERT_TRUE(m);
  const HloInstruction* w = FindWhile(*m);
  ASSERT_TRUE(w);
  EXPECT_EQ(DotsIn(w->while_body()), 0);
  EXPECT_EQ(w->shape().tuple_shapes(4).dimensions(), (std::vector<int64_t>{5, 6, 3}));
}

TEST(ScanDotHoistingTest, ClampedIndicesStayExact) {
  // The counter runs 2..7 over 6 rows: the slices at 6 and 7 clamp to row 5, in xs and in P.
  ScanDotHoisting pass;
  RunPassAndCheck(pass,
                  Invariant(Scan("y = f32[3,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}", 6, 2, 8)));
}

TEST(ScanDotHoistingTest, LeavesWhatItMustNot) {
  ScanDotHoisting pass;
  const std::string dot = "y = f32[3,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  // The weight changes every step.
  RunPassAndCheck(pass, Scan(dot), /*expect_changed=*/false);
  // Too few trips for the rows: 2 of 6.
  RunPassAndCheck(pass, Invariant(Scan(dot, 6, 0, 2)), /*expect_changed=*/false);
  // The dot reads the state, not a slice.
  RunPassAndCheck(pass,
                  Invariant(Scan("hw = f32[3,4] slice(h), slice={[0:3],[0:4]}\n  y = f32[3,5] dot(hw, w), "
                                 "lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
                  /*expect_changed=*/false);
  // The unit dimension of the slice is contracted: no row block of a larger product.
  RunPassAndCheck(pass, Invariant(Scan(R"(c = f32[1,5] constant({{1,2,3,4,5}})
  y3 = f32[3,4,5] dot(ds, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ys = f32[3,1,5] slice(y3), slice={[0:3],[0:1],[0:5]}
  y = f32[3,5] reshape(ys))")),
                  /*expect_changed=*/false);
}

}  // namespace
}  // namespace kiln
