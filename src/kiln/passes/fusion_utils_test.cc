#include "kiln/passes/fusion_utils.h"

#include <gtest/gtest.h>

#include "kiln/passes/fusion_test_util.h"

namespace kiln {
namespace {

using testing::CopyModule;
using testing::CountOp;
using testing::ExpectSameResults;
using testing::FusedOps;
using testing::ParseOrFail;

HloInstruction* Find(const HloModule& m, std::string_view name) {
  HloInstruction* i = m.entry_computation()->GetInstructionWithName(name);
  EXPECT_NE(i, nullptr) << name;
  return i;
}

TEST(FusionUtilsTest, CreateFusionWrapsOneInstruction) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  ROOT n = f32[4] negate(a)
}
)");
  auto before = CopyModule(*m);
  auto f = CreateFusion(Find(*m, "a"), FusionKind::kLoop);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  HloInstruction* fusion = *f;
  EXPECT_EQ(fusion->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(FusedOps(*fusion), "kLoop:add");
  EXPECT_EQ(fusion->operand_count(), 2);
  EXPECT_EQ(fusion->fused_computation()->num_parameters(), 2);
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(0), fusion);
  EXPECT_EQ(m->entry_computation()->GetInstructionWithName("a"), nullptr);
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, FuseProducerWithOneUserMovesIt) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  n = f32[4] negate(p0)
  e = f32[4] exponential(p1)
  ROOT a = f32[4] add(n, e)
}
)");
  auto before = CopyModule(*m);
  HloInstruction* fusion = CreateFusion(Find(*m, "a"), FusionKind::kLoop).value();
  auto r = FuseInstructionIntoFusion(Find(*m, "n"), fusion);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, fusion);  // keeps its identity
  r = FuseInstructionIntoFusion(Find(*m, "e"), fusion);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(FusedOps(*fusion), "kLoop:negate,exponential,add");
  // Operands are the producers' operands, deduplicated and in first-use order.
  ASSERT_EQ(fusion->operand_count(), 2);
  EXPECT_EQ(fusion->operand(0)->name(), "p0");
  EXPECT_EQ(fusion->operand(1)->name(), "p1");
  EXPECT_EQ(m->entry_computation()->instruction_count(), 3);
  EXPECT_TRUE(fusion->IsRoot());
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, FuseProducerWithOtherUsersDuplicatesIt) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  two = f32[] constant(2)
  b = f32[4] broadcast(two), dimensions={}
  m1 = f32[4] multiply(p0, b)
  ROOT t = (f32[4], f32[4]) tuple(m1, b)
}
)");
  auto before = CopyModule(*m);
  HloInstruction* fusion = CreateFusion(Find(*m, "m1"), FusionKind::kLoop).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "b"), fusion).ok());
  // b stays for the tuple; the fusion recomputes it.
  EXPECT_NE(m->entry_computation()->GetInstructionWithName("b"), nullptr);
  EXPECT_EQ(FusedOps(*fusion), "kLoop:broadcast,multiply");
  EXPECT_EQ(fusion->operand_count(), 2);  // p0 and the constant
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, MergeFusionIntoFusion) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[2,3] parameter(0)
  p1 = f32[3] parameter(1)
  b = f32[2,3] broadcast(p1), dimensions={1}
  s = f32[2,3] subtract(p0, b)
  ROOT r = f32[2,3] multiply(s, p0)
}
)");
  auto before = CopyModule(*m);
  HloInstruction* producer = CreateFusion(Find(*m, "s"), FusionKind::kLoop).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "b"), producer).ok());
  HloInstruction* consumer = CreateFusion(Find(*m, "r"), FusionKind::kLoop).value();
  auto merged = FuseInstructionIntoFusion(producer, consumer);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(FusedOps(**merged), "kLoop:broadcast,subtract,multiply");
  EXPECT_EQ((*merged)->operand_count(), 2);
  EXPECT_EQ(m->entry_computation()->instruction_count(), 3);
  ExpectSameResults(*before, *m);
}

constexpr std::string_view kSoftmaxRow = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  e = f32[4,8] exponential(x)
  zero = f32[] constant(0)
  sum = f32[4] reduce(e, zero), dimensions={1}, to_apply=add
  bs = f32[4,8] broadcast(sum), dimensions={0}
  ROOT d = f32[4,8] divide(e, bs)
}
)";

TEST(FusionUtilsTest, MultiOutputProducerConsumer) {
  auto m = ParseOrFail(kSoftmaxRow);
  auto before = CopyModule(*m);
  HloInstruction* red = CreateFusion(Find(*m, "sum"), FusionKind::kInput).value();
  auto r = FuseInstructionIntoMultiOutputFusion(Find(*m, "e"), red);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(IsMultiOutputFusion(*red));
  EXPECT_EQ(FusedOps(*red), "kInput:exponential,reduce,tuple");
  ASSERT_TRUE(red->shape().IsTuple());
  EXPECT_EQ(red->shape().tuple_shapes_size(), 2);
  // Every user of the fusion is a get-tuple-element.
  for (HloInstruction* u : red->users()) EXPECT_EQ(u->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(CountOp(*m->entry_computation(), HloOpcode::kGetTupleElement), 2);
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, MultiOutputRefusesCycles) {
  // e feeds the reduce directly and through n; fusing e into the reduce's fusion as an output
  // would make n read the fusion and the fusion read n.
  auto m = ParseOrFail(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  e = f32[4,8] exponential(x)
  n = f32[4,8] sort(e), dimensions={1}, to_apply=lt
  a = f32[4,8] add(e, n)
  zero = f32[] constant(0)
  ROOT sum = f32[4] reduce(a, zero), dimensions={1}, to_apply=add
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
)");
  HloInstruction* red = CreateFusion(Find(*m, "sum"), FusionKind::kInput).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "a"), red).ok());
  std::vector<HloInstruction*> members = {Find(*m, "e"), red};
  EXPECT_TRUE(FusionWouldCreateCycle(members));
  auto r = FuseInstructionIntoMultiOutputFusion(Find(*m, "e"), red);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(VerifyModule(*m).ok());
}

TEST(FusionUtilsTest, MergeSiblingReductions) {
  auto m = ParseOrFail(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  zero = f32[] constant(0)
  sum = f32[4] reduce(x, zero), dimensions={1}, to_apply=add
  sq = f32[4,8] multiply(x, x)
  sumsq = f32[4] reduce(sq, zero), dimensions={1}, to_apply=add
  ROOT r = f32[4] subtract(sumsq, sum)
}
)");
  auto before = CopyModule(*m);
  HloInstruction* a = CreateFusion(Find(*m, "sum"), FusionKind::kInput).value();
  HloInstruction* b = CreateFusion(Find(*m, "sumsq"), FusionKind::kInput).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "sq"), b).ok());
  auto merged = MergeSiblingFusions(a, b);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(*merged, a);
  EXPECT_EQ(FusedOps(*a), "kInput:reduce,multiply,reduce,tuple");
  EXPECT_EQ(a->operand_count(), 2);  // x and zero, each once
  HloInstruction* root = m->entry_computation()->root_instruction();
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(root->operand(0)->attrs().tuple_index, 1);
  EXPECT_EQ(root->operand(1)->attrs().tuple_index, 0);
  ExpectSameResults(*before, *m);
  // Merging dependent fusions is refused.
  auto m2 = ParseOrFail(kSoftmaxRow);
  HloInstruction* s2 = CreateFusion(Find(*m2, "sum"), FusionKind::kInput).value();
  HloInstruction* d2 = CreateFusion(Find(*m2, "d"), FusionKind::kLoop).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m2, "bs"), d2).ok());
  EXPECT_FALSE(MergeSiblingFusions(s2, d2).ok());
}

TEST(FusionUtilsTest, UnfuseRestoresTheComputation) {
  auto m = ParseOrFail(kSoftmaxRow);
  auto before = CopyModule(*m);
  HloInstruction* red = CreateFusion(Find(*m, "sum"), FusionKind::kInput).value();
  ASSERT_TRUE(FuseInstructionIntoMultiOutputFusion(Find(*m, "e"), red).ok());
  HloInstruction* d = CreateFusion(Find(*m, "d"), FusionKind::kLoop).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "bs"), d).ok());
  ASSERT_TRUE(Unfuse(red).ok());
  ASSERT_TRUE(Unfuse(d).ok());
  EXPECT_EQ(CountOp(*m->entry_computation(), HloOpcode::kFusion), 0);
  EXPECT_EQ(CountOp(*m->entry_computation(), HloOpcode::kGetTupleElement), 0);
  EXPECT_EQ(CountOp(*m->entry_computation(), HloOpcode::kTuple), 0);
  EXPECT_EQ(m->entry_computation()->instruction_count(), 6);
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, UnfuseKeepsControlDependencies) {
  // XLA's scheduled modules order loop bodies with control-predecessors: unfusing carries the
  // fusion's edges over to every instruction it held.
  auto m = ParseOrFail(R"(
HloModule m
fused {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  ROOT e = f32[4] exponential(n)
}
ENTRY main {
  x = f32[4] parameter(0)
  a = f32[4] abs(x)
  f = f32[4] fusion(x), kind=kLoop, calls=fused, control-predecessors={a}
  ROOT s = f32[4] sqrt(x), control-predecessors={f}
}
)");
  auto before = CopyModule(*m);
  HloInstruction* a = Find(*m, "a");
  HloInstruction* s = Find(*m, "s");
  ASSERT_TRUE(Unfuse(Find(*m, "f")).ok());
  EXPECT_EQ(a->control_successors().size(), 2u);
  EXPECT_EQ(s->control_predecessors().size(), 2u);
  for (const HloInstruction* x : a->control_successors()) {
    EXPECT_TRUE(x->opcode() == HloOpcode::kNegate || x->opcode() == HloOpcode::kExp) << x->name();
    EXPECT_EQ(x->control_successors().size(), 1u);
  }
  ExpectSameResults(*before, *m);
}

TEST(FusionUtilsTest, RefusesParametersAndNonOperands) {
  auto m = ParseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  n = f32[4] negate(p0)
  ROOT a = f32[4] add(n, p0)
}
)");
  HloInstruction* f = CreateFusion(Find(*m, "a"), FusionKind::kLoop).value();
  EXPECT_FALSE(FuseInstructionIntoFusion(Find(*m, "p0"), f).ok());
  EXPECT_FALSE(CreateFusion(Find(*m, "p0"), FusionKind::kLoop).ok());
  EXPECT_TRUE(FuseInstructionIntoFusion(Find(*m, "n"), f).ok());
  EXPECT_EQ(FusedOps(*f), "kLoop:negate,add");
  EXPECT_EQ(f->operand_count(), 1);
}

TEST(FusionUtilsTest, FusedRootMayBeATupleShapedReduce) {
  auto m = ParseOrFail(R"(
HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GE
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[3,5] parameter(0)
  n = f32[3,5] negate(x)
  io = s32[3,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  r = (f32[3], s32[3]) reduce(n, io, ninf, z), dimensions={1}, to_apply=argmax
  ROOT i = s32[3] get-tuple-element(r), index=1
}
)");
  auto before = CopyModule(*m);
  HloInstruction* f = CreateFusion(Find(*m, "r"), FusionKind::kInput).value();
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "n"), f).ok());
  ASSERT_TRUE(FuseInstructionIntoFusion(Find(*m, "io"), f).ok());
  EXPECT_FALSE(IsMultiOutputFusion(*f));
  EXPECT_TRUE(f->shape().IsTuple());
  ExpectSameResults(*before, *m);
}

}  // namespace
}  // namespace kiln
