#include "kiln/passes/buffer_assignment.h"

#include <gtest/gtest.h>

#include "kiln/passes/buffer_assignment_checker.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/fusion_test_util.h"
#include "kiln/passes/hlo_schedule.h"

namespace kiln {
namespace {

using testing::ParseOrFail;

struct Assigned {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<BufferAssignment> ba;
  const HloInstruction* Find(std::string_view name) const {
    for (const HloComputation* c : module->computations())
      if (const HloInstruction* i = c->GetInstructionWithName(name)) return i;
    ADD_FAILURE() << "no instruction " << name;
    return nullptr;
  }
  BufferSlice Slice(std::string_view name, const ShapeIndex& index = {}) const {
    auto s = ba->GetSlice(*Find(name), index);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : BufferSlice{};
  }
  const BufferAllocation& Allocation(const BufferSlice& s) const { return ba->allocations().at(s.allocation); }
  WhileCopyPlan Plan(std::string_view name) const {
    auto p = ba->GetWhileCopyPlan(*Find(name));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : WhileCopyPlan{};
  }
};

Assigned Assign(std::string_view text, BufferAssignmentOptions options = {}) {
  Assigned a;
  a.module = ParseOrFail(text);
  auto ba = BufferAssignment::Run(*a.module, options);
  EXPECT_TRUE(ba.ok()) << ba.status().ToString();
  if (!ba.ok()) return a;
  a.ba = std::move(ba).value();
  BufferCheckOptions check;
  check.schedule = options.schedule;
  check.alignment = options.alignment;
  Status s = VerifyBufferAssignment(*a.module, *a.ba, check);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << a.ba->ToString();
  return a;
}

TEST(BufferAssignmentTest, ValuesWithDisjointLifetimesShareBytes) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = f32[256] parameter(0)
  a = f32[256] negate(p)
  b = f32[256] exponential(a)
  c = f32[256] negate(b)
  ROOT d = f32[256] exponential(c)
}
)");
  // a dies where b is made, b where c is made: a and c share, b and d share.
  EXPECT_EQ(a.Slice("a"), a.Slice("c"));
  EXPECT_EQ(a.Slice("b"), a.Slice("d"));
  EXPECT_FALSE(a.Slice("a").Overlaps(a.Slice("b")));
  EXPECT_EQ(a.ba->stats().temp_bytes, 2048);
  EXPECT_EQ(a.ba->stats().peak_bytes, 2048);
  EXPECT_EQ(a.ba->temp_allocation(), a.Slice("a").allocation);
  // Without reuse every value has its own bytes.
  BufferAssignmentOptions o;
  o.reuse_buffers = false;
  auto b = Assign(R"(
HloModule m
ENTRY main {
  p = f32[256] parameter(0)
  a = f32[256] negate(p)
  b = f32[256] exponential(a)
  c = f32[256] negate(b)
  ROOT d = f32[256] exponential(c)
}
)", o);
  EXPECT_EQ(b.ba->stats().temp_bytes, 4096);
  EXPECT_EQ(b.ba->stats().peak_bytes, 2048);
}

TEST(BufferAssignmentTest, StatsOfAHandComputedExample) {
  // p0 f32[10] (40 B), p1 s32[3] (12 B); constant f32[10] (40 B); alignment 64.
  //   a = p0 + c        live [a, m]       40 -> 64 B
  //   n = -p1           live [n, end]     12 -> 64 B (output)
  //   m = a * a         live [m, end]     40 -> 64 B (output)
  // a and m overlap (m reads a), n is live with both: arena 192 B, peak 192 B.
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p0 = f32[10] parameter(0)
  p1 = s32[3] parameter(1)
  c = f32[10] constant({0,1,2,3,4,5,6,7,8,9})
  a = f32[10] add(p0, c)
  n = s32[3] negate(p1)
  m = f32[10] multiply(a, a)
  ROOT t = (f32[10], s32[3], f32[10]) tuple(m, n, c)
}
)");
  const MemoryStats& s = a.ba->stats();
  EXPECT_EQ(s.argument_bytes, 52);
  EXPECT_EQ(s.output_bytes, 92);
  EXPECT_EQ(s.constant_bytes, 40);
  EXPECT_EQ(s.temp_bytes, 192);
  EXPECT_EQ(s.peak_bytes, 192);
  EXPECT_EQ(s.aliased_bytes, 0);
  ASSERT_EQ(a.ba->allocations().size(), 4u);  // 2 parameters, 1 constant, the arena
  EXPECT_EQ(a.ba->allocations()[0].kind, BufferAllocation::Kind::kParameter);
  EXPECT_EQ(a.ba->allocations()[1].parameter_number, 1);
  EXPECT_EQ(a.ba->allocations()[2].kind, BufferAllocation::Kind::kConstant);
  EXPECT_TRUE(a.ba->allocations()[2].maybe_live_out);
  EXPECT_TRUE(a.ba->allocations()[3].maybe_live_out);
  // Output leaf 2 is the constant itself.
  ASSERT_EQ(a.ba->output_slices().size(), 3u);
  EXPECT_EQ(a.ba->output_slices()[2].allocation, 2);
  EXPECT_EQ(a.ba->output_slices()[0], a.Slice("m"));
  EXPECT_NE(s.ToString().find("temp 192 B"), std::string::npos) << s.ToString();
}

TEST(BufferAssignmentTest, TupleOutputsAndOutputsThatAreParametersOrConstants) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = (f32[4], s32[2]) parameter(0)
  x = f32[4] get-tuple-element(p), index=0
  c = f32[2] constant({1, 2})
  ROOT t = ((f32[4], s32[2]), f32[2], f32[4]) tuple(p, c, x)
}
)");
  ASSERT_EQ(a.ba->output_slices().size(), 4u);
  EXPECT_EQ(a.Allocation(a.ba->output_slices()[0]).kind, BufferAllocation::Kind::kParameter);
  EXPECT_EQ(a.Allocation(a.ba->output_slices()[1]).parameter_index, (ShapeIndex{1}));
  EXPECT_EQ(a.Allocation(a.ba->output_slices()[2]).kind, BufferAllocation::Kind::kConstant);
  EXPECT_EQ(a.ba->output_slices()[3], a.ba->output_slices()[0]);
  EXPECT_EQ(a.ba->temp_allocation(), -1);  // nothing computed
  EXPECT_EQ(a.Slice("t", {0, 1}), a.Slice("p", {1}));
}

TEST(BufferAssignmentTest, ViewsShareTheirOperandsSlice) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = f32[2,8] parameter(0)
  n = f32[2,8] negate(p)
  r = f32[16] reshape(n)
  b = f32[4,4] bitcast(n)
  t = (f32[16], f32[4,4]) tuple(r, b)
  g = f32[4,4] get-tuple-element(t), index=1
  e = f32[4,4] exponential(g)
  ROOT o = (f32[16], f32[4,4]) tuple(r, e)
}
)");
  EXPECT_EQ(a.Slice("r"), a.Slice("n"));
  EXPECT_EQ(a.Slice("b"), a.Slice("n"));
  EXPECT_EQ(a.Slice("g"), a.Slice("n"));
  EXPECT_EQ(a.Slice("t", {0}), a.Slice("n"));
  EXPECT_FALSE(a.Slice("e").Overlaps(a.Slice("n")));  // n is an output
}

TEST(BufferAssignmentTest, SizeZeroArrays) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = f32[0,3] parameter(0)
  n = f32[0,3] negate(p)
  q = f32[4] parameter(1)
  e = f32[4] exponential(q)
  ROOT t = (f32[0,3], f32[4]) tuple(n, e)
}
)");
  EXPECT_EQ(a.Slice("n").size, 0);
  EXPECT_TRUE(a.Slice("n").valid());
  EXPECT_EQ(a.ba->stats().temp_bytes, 64);
  EXPECT_EQ(a.ba->stats().argument_bytes, 16);
}

TEST(BufferAssignmentTest, DynamicUpdateSliceInPlace) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  n = f32[64] negate(p)
  d = f32[64] dynamic-update-slice(n, u, i)
  ROOT e = f32[64] exponential(d)
}
)");
  EXPECT_EQ(a.Slice("d"), a.Slice("n"));
  EXPECT_EQ(a.ba->stats().aliased_bytes, 256);
  // Not in place: the operand is read later, or is an undonated parameter.
  auto b = Assign(R"(
HloModule m
ENTRY main {
  p = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  n = f32[64] negate(p)
  d = f32[64] dynamic-update-slice(n, u, i)
  d2 = f32[64] dynamic-update-slice(p, u, i)
  ROOT t = (f32[64], f32[64], f32[64]) tuple(d, n, d2)
}
)");
  EXPECT_FALSE(b.Slice("d").Overlaps(b.Slice("n")));
  EXPECT_EQ(b.Allocation(b.Slice("d2")).kind, BufferAllocation::Kind::kTemp);
}

TEST(BufferAssignmentTest, FusionRootedAtDynamicUpdateSliceOfAParameterIsInPlace) {
  auto a = Assign(R"(
HloModule m
fused {
  b = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  e = f32[4] exponential(u)
  ROOT d = f32[64] dynamic-update-slice(b, e, i)
}
ENTRY main {
  p = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  n = f32[64] negate(p)
  f = f32[64] fusion(n, u, i), kind=kLoop, calls=fused
  ROOT r = f32[64] exponential(f)
}
)");
  EXPECT_EQ(a.Slice("f"), a.Slice("n"));
}

TEST(BufferAssignmentTest, DonatedParametersAreUpdatedInPlaceAndHoldOutputs) {
  // input_output_alias: the update happens in the parameter's buffer.
  auto a = Assign(R"(
HloModule m, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[64] dynamic-update-slice(p, u, i)
}
)");
  EXPECT_EQ(a.Allocation(a.Slice("d")).kind, BufferAllocation::Kind::kParameter);
  EXPECT_TRUE(a.Allocation(a.Slice("d")).written);
  EXPECT_EQ(a.ba->stats().temp_bytes, 0);
  // An output computed after the parameter's last read is placed in it.
  auto b = Assign(R"(
HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }
ENTRY main {
  p0 = f32[64] parameter(0)
  p1 = f32[64] parameter(1)
  n = f32[64] negate(p0)
  s = f32[64] add(n, p1)
  ROOT t = (f32[64], f32[64]) tuple(n, s)
}
)");
  EXPECT_EQ(b.Allocation(b.Slice("s")).kind, BufferAllocation::Kind::kParameter);
  EXPECT_EQ(b.Allocation(b.Slice("s")).parameter_number, 0);
  EXPECT_EQ(b.ba->stats().aliased_bytes, 256);
  // Not when the output is made while the parameter is still read (add reads p0).
  auto c = Assign(R"(
HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p0 = f32[64] parameter(0)
  p1 = f32[64] parameter(1)
  ROOT s = f32[64] add(p0, p1)
}
)");
  EXPECT_EQ(c.Allocation(c.Slice("s")).kind, BufferAllocation::Kind::kTemp);
  // buffer_donor: any output may land there; without use_donated_parameters nothing does.
  constexpr std::string_view kDonor = R"(
HloModule m, buffer_donor={ (1, {}) }
ENTRY main {
  p0 = f32[64] parameter(0)
  p1 = f32[64] parameter(1)
  n = f32[64] negate(p1)
  ROOT s = f32[64] multiply(n, p0)
}
)";
  auto d = Assign(kDonor);
  EXPECT_EQ(d.Allocation(d.Slice("s")).parameter_number, 1);
  BufferAssignmentOptions off;
  off.use_donated_parameters = false;
  auto e = Assign(kDonor, off);
  EXPECT_EQ(e.Allocation(e.Slice("s")).kind, BufferAllocation::Kind::kTemp);
}

TEST(BufferAssignmentTest, MustAliasConflictingWithAnInPlaceChainIsRetried) {
  // p0 is donated for output {1}, but the in-place update of p0 produces output {0}: the
  // assignment drops the in-place update so p0's buffer can receive output {1} by a copy.
  auto a = Assign(R"(
HloModule m, input_output_alias={ {1}: (0, {}, must-alias) }
ENTRY main {
  p0 = f32[64] parameter(0)
  u = f32[4] parameter(1)
  i = s32[] parameter(2)
  d = f32[64] dynamic-update-slice(p0, u, i)
  n = f32[64] negate(p0)
  ROOT t = (f32[64], f32[64]) tuple(d, n)
}
)");
  EXPECT_NE(a.Allocation(a.Slice("d")).kind, BufferAllocation::Kind::kParameter);
}

constexpr std::string_view kLoop = R"(
HloModule m
cond {
  s = (s32[], f32[64], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(4)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[64], f32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[64] get-tuple-element(s), index=1
  x = f32[64] get-tuple-element(s), index=2
  buf = f32[64] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  e = f32[64] exponential(acc)
  acc1 = f32[64] add(e, x)
  u = f32[1] slice(acc1), slice={[0:1]}
  buf1 = f32[64] dynamic-update-slice(buf, u, i)
  ROOT t = (s32[], f32[64], f32[64], f32[64]) tuple(i1, acc1, x, buf1)
}
ENTRY main {
  x = f32[64] parameter(0)
  z = s32[] constant(0)
  n = f32[64] negate(x)
  zf = f32[] constant(0)
  b = f32[64] broadcast(zf), dimensions={}
  init = (s32[], f32[64], f32[64], f32[64]) tuple(z, n, x, b)
  w = (s32[], f32[64], f32[64], f32[64]) while(init), condition=cond, body=body
  ROOT r = f32[64] get-tuple-element(w), index=3
}
)";

TEST(BufferAssignmentTest, WhileLoopCopyPlan) {
  auto a = Assign(kLoop);
  WhileCopyPlan p = a.Plan("w");
  ASSERT_EQ(p.leaves.size(), 4u);
  // Leaf 0: the counter comes from a constant (copied in); i+1 reads i: copied back.
  EXPECT_TRUE(p.copy_init[0]);
  EXPECT_TRUE(p.copy_body_result[0]);
  // Leaf 1: the state takes over n (dead after the loop); acc1 is computed after the last read
  // of acc (exp), so it is written straight into the state.
  EXPECT_FALSE(p.copy_init[1]);
  EXPECT_EQ(p.state[1], a.Slice("n"));
  EXPECT_FALSE(p.copy_body_result[1]);
  // Leaf 2: x is an entry parameter passed through unchanged: the state is x itself.
  EXPECT_FALSE(p.copy_init[2]);
  EXPECT_FALSE(p.copy_body_result[2]);
  EXPECT_EQ(p.state[2], a.Slice("x"));
  // Leaf 3: the broadcast buffer is taken over and updated in place.
  EXPECT_FALSE(p.copy_init[3]);
  EXPECT_FALSE(p.copy_body_result[3]);
  EXPECT_EQ(a.Slice("buf1"), p.state[3]);
  for (size_t j = 0; j < 4; ++j) EXPECT_FALSE(p.staging[j].valid());
  EXPECT_EQ(a.Slice("w", {3}), a.Slice("r"));
  // Body temporaries never overlap the state.
  for (size_t j = 0; j < 4; ++j) EXPECT_FALSE(a.Slice("e").Overlaps(p.state[j]));
  // With elementwise state updates (the GPU's) i+1 would be computed over i, but the
  // dynamic-update-slice reads i after it: still copied.
  BufferAssignmentOptions ew;
  ew.elementwise_state_updates = true;
  EXPECT_TRUE(Assign(kLoop, ew).Plan("w").copy_body_result[0]);
  // With in-place updates off, every leaf is copied both ways.
  BufferAssignmentOptions o;
  o.in_place = false;
  auto b = Assign(kLoop, o);
  WhileCopyPlan q = b.Plan("w");
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(q.copy_init[j]);
    EXPECT_EQ(q.copy_body_result[j], j != 2) << j;
  }
}

// Leaves the body returns unchanged share their init buffer read-only (no copies), whatever
// holds it: an undonated parameter, a constant, an arena value read after the loop.
constexpr std::string_view kPassThroughLoop = R"(
HloModule m
cond {
  s = (s32[], f32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  wt = f32[4] get-tuple-element(s), index=1
  c = f32[4] get-tuple-element(s), index=2
  e = f32[4] get-tuple-element(s), index=3
  wt2 = f32[4] get-tuple-element(s), index=4
  acc = f32[4] get-tuple-element(s), index=5
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  m = f32[4] multiply(acc, wt)
  m2 = f32[4] multiply(m, wt2)
  a1 = f32[4] add(m2, c)
  acc1 = f32[4] add(a1, e)
  ROOT t = (s32[], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(i1, wt, c, e, wt2, acc1)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  c = f32[4] constant({1, 2, 3, 4})
  e = f32[4] exponential(x)
  zf = f32[] constant(0)
  acc = f32[4] broadcast(zf), dimensions={}
  init = (s32[], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(z, x, c, e, x, acc)
  w = (s32[], f32[4], f32[4], f32[4], f32[4], f32[4]) while(init), condition=cond, body=body
  r = f32[4] get-tuple-element(w), index=5
  we = f32[4] get-tuple-element(w), index=3
  i2 = s32[] constant(1)
  u = f32[1] slice(r), slice={[0:1]}
  upd = f32[4] dynamic-update-slice(we, u, i2)
  after = f32[4] add(upd, e)
  wx = f32[4] get-tuple-element(w), index=1
  ROOT out = (f32[4], f32[4], f32[4]) tuple(after, upd, wx)
}
)";

TEST(BufferAssignmentTest, WhileLoopPassThroughLeavesShareTheirInitBuffers) {
  auto a = Assign(kPassThroughLoop);
  WhileCopyPlan p = a.Plan("w");
  ASSERT_EQ(p.leaves.size(), 6u);
  // Leaf 1: the undonated parameter x itself; leaf 2: the constant; leaf 3: e, read again
  // after the loop (it cannot be taken over, but it can be shared).
  EXPECT_EQ(p.state[1], a.Slice("x"));
  EXPECT_EQ(p.state[2], a.Slice("c"));
  EXPECT_EQ(p.state[3], a.Slice("e"));
  for (int j : {1, 2, 3}) {
    EXPECT_FALSE(p.copy_init[j]) << j;
    EXPECT_FALSE(p.copy_body_result[j]) << j;
  }
  // Leaf 4 is x again: one state leaf per buffer, so this one is copied in.
  EXPECT_TRUE(p.copy_init[4]);
  EXPECT_NE(p.state[4], a.Slice("x"));
  // The update after the loop may not write e's buffer (e is read later, by `after`): it gets
  // bytes of its own. The checker (in Assign) replays all of it.
  EXPECT_NE(a.Slice("upd"), a.Slice("e"));
  EXPECT_EQ(a.Slice("wx"), a.Slice("x"));
}

TEST(BufferAssignmentTest, ElementwiseStateUpdatesNeedNoCopies) {
  // i1 = i + 1 reads i only to compute i1: with elementwise_state_updates it is computed over
  // i (the checker accepts the overlap); without, it is copied back every iteration.
  BufferAssignmentOptions ew;
  ew.elementwise_state_updates = true;
  auto a = Assign(kPassThroughLoop, ew);
  WhileCopyPlan p = a.Plan("w");
  EXPECT_FALSE(p.copy_body_result[0]);
  EXPECT_EQ(a.Slice("i1"), p.state[0]);
  EXPECT_TRUE(Assign(kPassThroughLoop).Plan("w").copy_body_result[0]);
  // A fusion that reads the state through a broadcast or a slice is not elementwise in it.
  auto m = ParseOrFail(R"(
HloModule f
fused {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  r = f32[4] reverse(p0), dimensions={0}
  ROOT a = f32[4] add(r, p1)
}
fused2 {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  n = f32[4] negate(p0)
  ROOT a = f32[4] multiply(n, p1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  f1 = f32[4] fusion(x, y), kind=kLoop, calls=fused
  ROOT f2 = f32[4] fusion(f1, y), kind=kLoop, calls=fused2
}
)");
  const HloInstruction* f2 = m->entry_computation()->root_instruction();
  const HloInstruction* f1 = f2->operand(0);
  EXPECT_FALSE(ReadsOperandElementwise(*f1, 0));
  EXPECT_TRUE(ReadsOperandElementwise(*f1, 1));
  EXPECT_TRUE(ReadsOperandElementwise(*f2, 0));
  EXPECT_TRUE(ReadsOperandElementwise(*f2, 1));
}

TEST(BufferAssignmentTest, SunkCounterUpdatesNeedNoCopies) {
  // Note [Sinking loop state updates]: i1 = i + 1 moved after the dynamic-update-slice that
  // reads i is computed over i (elementwise state updates), so no leaf is copied per trip.
  auto m = ParseOrFail(kLoop);
  ASSERT_TRUE(m);
  HloSchedule schedule = PostOrderSchedule(*m);
  SinkLoopStateUpdates(*m, schedule);
  Status verified = schedule.Verify(*m);
  ASSERT_TRUE(verified.ok()) << verified.ToString();
  const HloComputation* body = nullptr;
  for (const HloComputation* c : m->computations())
    if (c->name() == "body") body = c;
  ASSERT_NE(body, nullptr);
  const auto& seq = schedule.sequence(body);
  auto pos = [&](std::string_view n) {
    return std::find(seq.begin(), seq.end(), body->GetInstructionWithName(n)) - seq.begin();
  };
  EXPECT_GT(pos("i1"), pos("buf1"));
  EXPECT_EQ(pos("i1") + 1, pos("t"));
  BufferAssignmentOptions ew;
  ew.elementwise_state_updates = true;
  ew.schedule = &schedule;
  Assigned a;
  a.module = std::move(m);
  auto ba = BufferAssignment::Run(*a.module, ew);
  ASSERT_TRUE(ba.ok()) << ba.status().ToString();
  a.ba = std::move(ba).value();
  BufferCheckOptions check;
  check.schedule = &schedule;
  Status checked = VerifyBufferAssignment(*a.module, *a.ba, check);
  EXPECT_TRUE(checked.ok()) << checked.ToString();
  WhileCopyPlan p = a.Plan("w");
  for (size_t j = 0; j < p.leaves.size(); ++j) EXPECT_FALSE(p.copy_body_result[j]) << j;
  EXPECT_EQ(a.Slice("i1"), p.state[0]);
}

TEST(BufferAssignmentTest, InPlaceUpdateFusionReadsItsWindowElementwise) {
  // Note [In-place update spaces]: the kernel iterates over the 8x64 window, so the carry it
  // reads at each window element (p0) may be overwritten by the new carry (output 0); the
  // stacked array (p2) is the in-place target, not read elementwise.
  auto m = ParseOrFail(R"(
HloModule f
fused {
  p0 = f32[8,64] parameter(0)
  p1 = f32[8,64] parameter(1)
  p2 = f32[16,8,64] parameter(2)
  p3 = s32[] parameter(3)
  a = f32[8,64] add(p0, p1)
  h = f32[8,64] tanh(a)
  u = f32[1,8,64] reshape(h)
  z = s32[] constant(0)
  d = f32[16,8,64] dynamic-update-slice(p2, u, p3, z, z)
  ROOT t = (f32[8,64], f32[16,8,64]) tuple(h, d)
}
fused2 {
  p0 = f32[8,64] parameter(0)
  p1 = f32[16,8,64] parameter(1)
  p2 = s32[] parameter(2)
  r = f32[64,8] transpose(p0), dimensions={1,0}
  b = f32[8,64] reshape(r)
  u = f32[1,8,64] reshape(b)
  z = s32[] constant(0)
  d = f32[16,8,64] dynamic-update-slice(p1, u, p2, z, z)
  ROOT t = (f32[8,64], f32[16,8,64]) tuple(b, d)
}
ENTRY e {
  x = f32[8,64] parameter(0)
  y = f32[8,64] parameter(1)
  ys = f32[16,8,64] parameter(2)
  i = s32[] parameter(3)
  f = (f32[8,64], f32[16,8,64]) fusion(x, y, ys, i), kind=kLoop, calls=fused
  g = f32[8,64] get-tuple-element(f), index=0
  ys1 = f32[16,8,64] get-tuple-element(f), index=1
  ROOT f2 = (f32[8,64], f32[16,8,64]) fusion(g, ys1, i), kind=kLoop, calls=fused2
}
)");
  ASSERT_TRUE(m);
  const HloInstruction* f2 = m->entry_computation()->root_instruction();
  const HloInstruction* f = f2->operand(0)->operand(0);
  EXPECT_TRUE(ReadsOperandElementwise(*f, 0));
  EXPECT_TRUE(ReadsOperandElementwise(*f, 1));
  EXPECT_FALSE(ReadsOperandElementwise(*f, 2));
  EXPECT_FALSE(ReadsOperandElementwise(*f2, 0)) << "a transpose reads other elements";
}

TEST(BufferAssignmentTest, WhileLoopSwappingStateElementsStagesTheCopies) {
  auto a = Assign(R"(
HloModule m
cond {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8] get-tuple-element(s), index=1
  b = f32[8] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[8], f32[8]) tuple(i1, b, a)
}
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[8], f32[8]) tuple(z, x, y)
  ROOT w = (s32[], f32[8], f32[8]) while(init), condition=cond, body=body
}
)");
  WhileCopyPlan p = a.Plan("w");
  EXPECT_TRUE(p.copy_body_result[1]);
  EXPECT_TRUE(p.copy_body_result[2]);
  EXPECT_EQ(p.body_result[1], p.state[2]);
  EXPECT_EQ(p.body_result[2], p.state[1]);
  EXPECT_TRUE(p.staging[1].valid());
  EXPECT_TRUE(p.staging[2].valid());
  EXPECT_FALSE(p.staging[1].Overlaps(p.staging[2]));
  EXPECT_FALSE(p.staging[0].valid());
}

TEST(BufferAssignmentTest, NestedLoopsAndLoopTemporariesReuseBytes) {
  auto a = Assign(R"(
HloModule m
icond {
  s = (s32[], f32[32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(2)
  ROOT lt = pred[] compare(i, k), direction=LT
}
ibody {
  s = (s32[], f32[32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[32] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  t1 = f32[32] exponential(v)
  t2 = f32[32] negate(t1)
  ROOT t = (s32[], f32[32]) tuple(i1, t2)
}
ocond {
  s = (s32[], f32[32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
obody {
  s = (s32[], f32[32]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[32] get-tuple-element(s), index=1
  z = s32[] constant(0)
  it = (s32[], f32[32]) tuple(z, v)
  iw = (s32[], f32[32]) while(it), condition=icond, body=ibody
  v2 = f32[32] get-tuple-element(iw), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[32]) tuple(i1, v2)
}
ENTRY main {
  x = f32[32] parameter(0)
  z = s32[] constant(0)
  n = f32[32] negate(x)
  init = (s32[], f32[32]) tuple(z, n)
  w = (s32[], f32[32]) while(init), condition=ocond, body=obody
  ROOT r = f32[32] get-tuple-element(w), index=1
}
)");
  // The inner loop's state takes over the outer state's vector (dead after the inner loop),
  // and its result flows back as the outer body's result without copies.
  WhileCopyPlan inner = a.Plan("iw");
  WhileCopyPlan outer = a.Plan("w");
  EXPECT_FALSE(inner.copy_init[1]);
  EXPECT_EQ(inner.state[1], outer.state[1]);
  EXPECT_FALSE(outer.copy_body_result[1]);
  EXPECT_FALSE(inner.copy_body_result[1]);  // t2 is computed after t1 read v
}

TEST(BufferAssignmentTest, ConditionalResults) {
  auto a = Assign(R"(
HloModule m
on_true {
  p = f32[16] parameter(0)
  ROOT e = f32[16] exponential(p)
}
on_false {
  ROOT q = f32[16] parameter(0)
}
ENTRY main {
  pr = pred[] parameter(0)
  x = f32[16] parameter(1)
  y = f32[16] parameter(2)
  n = f32[16] negate(y)
  c = f32[16] conditional(pr, x, n), true_computation=on_true, false_computation=on_false
  ROOT r = f32[16] add(c, n)
}
)");
  // The true branch computes straight into the result; the false branch returns its
  // parameter, which the runtime copies.
  EXPECT_EQ(a.Slice("e"), a.Slice("c"));
  EXPECT_NE(a.Slice("q"), a.Slice("c"));
  EXPECT_EQ(a.Slice("q"), a.Slice("n"));
  EXPECT_FALSE(a.Slice("c").Overlaps(a.Slice("n")));
}

TEST(BufferAssignmentTest, CheckerCatchesAScheduleThatBreaksReuse) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  p = f32[64] parameter(0)
  a = f32[64] negate(p)
  sa = f32[64] exponential(a)
  b = f32[64] negate(p)
  sb = f32[64] exponential(b)
  ROOT o = f32[64] add(sa, sb)
}
)";
  auto m = ParseOrFail(kText);
  auto find = [&](const char* n) -> const HloInstruction* { return m->entry_computation()->GetInstructionWithName(n); };
  HloSchedule s1, s2;
  s1.set_sequence(m->entry_computation(), {find("p"), find("a"), find("sa"), find("b"), find("sb"), find("o")});
  s2.set_sequence(m->entry_computation(), {find("p"), find("a"), find("b"), find("sa"), find("sb"), find("o")});
  ASSERT_TRUE(s1.Verify(*m).ok());
  BufferAssignmentOptions o;
  o.schedule = &s1;
  auto ba = BufferAssignment::Run(*m, o);
  ASSERT_TRUE(ba.ok());
  EXPECT_EQ((*ba)->GetSlice(*find("a")).value(), (*ba)->GetSlice(*find("b")).value());
  BufferCheckOptions c1;
  c1.schedule = &s1;
  EXPECT_TRUE(VerifyBufferAssignment(*m, **ba, c1).ok());
  BufferCheckOptions c2;
  c2.schedule = &s2;
  Status bad = VerifyBufferAssignment(*m, **ba, c2);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("overwritten"), std::string::npos) << bad.ToString();
  // A schedule that misses instructions is refused.
  HloSchedule s3;
  s3.set_sequence(m->entry_computation(), {find("p"), find("a")});
  o.schedule = &s3;
  EXPECT_FALSE(BufferAssignment::Run(*m, o).ok());
}

TEST(BufferAssignmentTest, MemoryAwareScheduleLowersPeak) {
  // Four independent branches each make a 4 KiB temporary reduced to a scalar; post order
  // keeps every temporary until the end, the list scheduler reduces each as soon as it can.
  auto m = ParseOrFail(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[1024] parameter(0)
  z = f32[] constant(0)
  e0 = f32[1024] exponential(p)
  e1 = f32[1024] negate(p)
  e2 = f32[1024] sine(p)
  e3 = f32[1024] cosine(p)
  s0 = f32[] reduce(e0, z), dimensions={0}, to_apply=add
  s1 = f32[] reduce(e1, z), dimensions={0}, to_apply=add
  s2 = f32[] reduce(e2, z), dimensions={0}, to_apply=add
  s3 = f32[] reduce(e3, z), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[], f32[], f32[]) tuple(s0, s1, s2, s3)
}
)");
  HloSchedule post = PostOrderSchedule(*m);
  HloSchedule mem = MemoryAwareSchedule(*m);
  ASSERT_TRUE(mem.Verify(*m).ok());
  BufferAssignmentOptions o;
  o.schedule = &mem;
  auto ba = BufferAssignment::Run(*m, o);
  ASSERT_TRUE(ba.ok());
  BufferCheckOptions c;
  c.schedule = &mem;
  EXPECT_TRUE(VerifyBufferAssignment(*m, **ba, c).ok());
  auto ba_post = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba_post.ok());
  EXPECT_LT((*ba)->stats().peak_bytes, (*ba_post)->stats().peak_bytes)
      << mem.ToString(*m) << post.ToString(*m);
  EXPECT_LE((*ba)->stats().peak_bytes, 4096 + 4 * 64);
}

TEST(BufferAssignmentTest, CalledComputationsNeedOneCallSite) {
  auto m = ParseOrFail(R"(
HloModule m
relu {
  a = f32[8] parameter(0)
  z = f32[] constant(0)
  zb = f32[8] broadcast(z), dimensions={}
  ROOT r = f32[8] maximum(a, zb)
}
ENTRY main {
  p = f32[8] parameter(0)
  c1 = f32[8] call(p), to_apply=relu
  n = f32[8] negate(c1)
  ROOT c2 = f32[8] call(n), to_apply=relu
}
)");
  auto refused = BufferAssignment::Run(*m);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("FlattenCallGraph"), std::string::npos);
  FlattenCallGraph flatten;
  ASSERT_TRUE(flatten.Run(*m).value());
  EXPECT_NE(m->GetComputationWithName("relu.clone"), nullptr);
  EXPECT_FALSE(flatten.Run(*m).value());
  auto ba = BufferAssignment::Run(*m);
  ASSERT_TRUE(ba.ok()) << ba.status().ToString();
  EXPECT_TRUE(VerifyBufferAssignment(*m, **ba).ok());
  // A call's value is its callee's root; the callee's parameter is the call's operand.
  const HloInstruction* c1 = m->entry_computation()->GetInstructionWithName("c1");
  EXPECT_EQ((*ba)->GetSlice(*c1).value(), (*ba)->GetSlice(*c1->to_apply()->root_instruction()).value());
  EXPECT_EQ((*ba)->GetSlice(*c1->to_apply()->parameter_instruction(0)).value().allocation, 0);
}

TEST(BufferAssignmentTest, AsyncAndCopyStartPairsGetBuffers) {
  auto a = Assign(R"(
HloModule m
wrapped {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
ENTRY main {
  v = f32[4] parameter(0)
  st = ((f32[4]), f32[4], s32[]) async-start(v), calls=wrapped
  up = ((f32[4]), f32[4], s32[]) async-update(st), calls=wrapped
  dn = f32[4] async-done(up), calls=wrapped
  cs = (f32[4], f32[4], u32[]) copy-start(dn)
  cd = f32[4] copy-done(cs)
  ROOT e = f32[4] exponential(cd)
}
)");
  // The wrapped computation runs inside the async op: no slices of its own.
  EXPECT_FALSE(a.ba->HasSlice(*a.Find("n")));
  EXPECT_TRUE(a.ba->HasSlice(*a.Find("dn")));
}

TEST(BufferAssignmentTest, DumpNamesEveryValue) {
  auto a = Assign(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
)");
  std::string s = a.ba->ToString();
  EXPECT_NE(s.find("%n a1[0:16) live"), std::string::npos) << s;
  EXPECT_NE(s.find("a0 parameter 0 {} 16 bytes"), std::string::npos) << s;
}

}  // namespace
}  // namespace kiln
