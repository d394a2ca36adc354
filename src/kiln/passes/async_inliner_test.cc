#include "kiln/passes/async_inliner.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;
using testing::RunPassAndCheck;

int Count(const HloComputation* c, HloOpcode op) {
  int n = 0;
  for (const HloInstruction* i : c->instructions()) n += i->opcode() == op;
  return n;
}

// XLA's GPU dumps: a fusion wrapped in fusion-start / fusion-done, ordered by control edges.
constexpr char kFusionStart[] = R"(
HloModule m
fused {
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  m = f32[8] multiply(a, b)
  ROOT e = f32[8] exponential(m)
}
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  before = f32[8] negate(x)
  fs = ((f32[8], f32[8]), f32[8], u32[]) fusion-start(x, y), kind=kLoop, calls=fused, control-predecessors={before}
  mid = f32[8] sine(y), control-predecessors={fs}
  fd = f32[8] fusion-done(fs), control-predecessors={mid}
  after = f32[8] add(fd, before), control-predecessors={fd}
  ROOT r = f32[8] add(after, mid)
}
)";

TEST(AsyncInliner, FusionStartBecomesTheFusion) {
  AsyncInliner pass;
  auto m = RunPassAndCheck(pass, kFusionStart);
  ASSERT_NE(m, nullptr);
  const HloComputation* e = m->entry_computation();
  EXPECT_EQ(Count(e, HloOpcode::kAsyncStart), 0);
  EXPECT_EQ(Count(e, HloOpcode::kAsyncDone), 0);
  EXPECT_EQ(Count(e, HloOpcode::kFusion), 1);
  for (const HloInstruction* i : e->instructions()) {
    if (i->opcode() == HloOpcode::kFusion) {
      // before -> fusion -> after stay; `mid` (between start and done) loses both edges.
      ASSERT_EQ(i->control_predecessors().size(), 1u);
      EXPECT_EQ(i->control_predecessors()[0]->name(), "before");
      ASSERT_EQ(i->control_successors().size(), 1u);
      EXPECT_EQ(i->control_successors()[0]->name(), "after");
    }
    if (i->name() == "mid") {
      EXPECT_TRUE(i->control_predecessors().empty());
      EXPECT_TRUE(i->control_successors().empty());
    }
  }
}

TEST(AsyncInliner, CallWrapperWithUpdateBecomesItsBody) {
  AsyncInliner pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
wrapped {
  a = f32[4,4] parameter(0)
  t = f32[4,4] transpose(a), dimensions={1,0}
  ROOT d = f32[4,4] dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY e {
  x = f32[4,4] parameter(0)
  s = ((f32[4,4]), f32[4,4], s32[]) async-start(x), calls=wrapped
  u = ((f32[4,4]), f32[4,4], s32[]) async-update(s)
  ROOT d = f32[4,4] async-done(u)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,transpose,dot");
}

constexpr char kAllReduceWrapper[] = R"(
HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
wrapped {
  p = f32[8] parameter(0)
  ROOT ar = f32[8] all-reduce(p), replica_groups={}, to_apply=sum
}
ENTRY e {
  x = f32[8] parameter(0)
  s = ((f32[8]), f32[8]) async-start(x), calls=wrapped
  ROOT d = f32[8] async-done(s)
}
)";

TEST(AsyncInliner, CollectivesKeepTheirWrapperUnlessAsked) {
  AsyncInliner keep;
  RunPassAndCheck(keep, kAllReduceWrapper, /*expect_changed=*/false);
  AsyncInliner all(/*collectives=*/true);
  auto m = RunPassAndCheck(all, kAllReduceWrapper);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,all-reduce");
}

}  // namespace
}  // namespace kiln
