#include "kiln/passes/fusion_passes.h"

#include <gtest/gtest.h>

#include "kiln/passes/cpu_fusion_policy.h"
#include "kiln/passes/fusion_test_util.h"

namespace kiln {
namespace {

using testing::CopyModule;
using testing::CountOp;
using testing::ExpectSameResults;
using testing::FusedOps;
using testing::ParseOrFail;

// Runs instruction fusion then multi-output fusion with the CPU policy; checks semantics.
struct Fused {
  std::unique_ptr<HloModule> module;
  FusionPassStats fusion, mof;
};

Fused RunCpuFusion(std::string_view text, CpuFusionOptions options = CpuFusionPolicy::DefaultOptions(),
                   bool check = true) {
  Fused r;
  r.module = ParseOrFail(text);
  auto before = CopyModule(*r.module);
  CpuFusionPolicy policy(options);
  InstructionFusion fusion(policy);
  auto a = fusion.Run(*r.module);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  MultiOutputFusion mof(policy);
  auto b = mof.Run(*r.module);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  r.fusion = fusion.stats();
  r.mof = mof.stats();
  if (check) ExpectSameResults(*before, *r.module);
  return r;
}

std::vector<const HloInstruction*> Fusions(const HloComputation& c) {
  std::vector<const HloInstruction*> out;
  for (const HloInstruction* i : c.MakeInstructionPostOrder())
    if (i->opcode() == HloOpcode::kFusion) out.push_back(i);
  return out;
}

const HloComputation& Entry(const Fused& f) { return *f.module->entry_computation(); }

TEST(InstructionFusionTest, ElementwiseChainBecomesOneLoopFusion) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[16,32] parameter(0)
  p1 = f32[16,32] parameter(1)
  a = f32[16,32] add(p0, p1)
  n = f32[16,32] negate(a)
  c = f32[] constant(0.5)
  b = f32[16,32] broadcast(c), dimensions={}
  m = f32[16,32] multiply(n, b)
  ROOT x = f32[16,32] maximum(m, p0)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kLoop:add,negate,constant,broadcast,multiply,maximum");
  EXPECT_TRUE(fusions[0]->IsRoot());
  EXPECT_EQ(fusions[0]->operand_count(), 2);
  EXPECT_EQ(Entry(f).instruction_count(), 3);
}

TEST(InstructionFusionTest, ShapeOpsFuseIntoLoops) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  r = f32[2,4] reshape(p0)
  io = s32[2,4] iota(), iota_dimension=1
  cv = f32[2,4] convert(io)
  s = f32[2,4] add(r, cv)
  sl = f32[2,2] slice(s), slice={[0:2], [1:3]}
  z = f32[] constant(0)
  pd = f32[2,6] pad(sl, z), padding=0_0x2_2
  rv = f32[2,6] reverse(pd), dimensions={1}
  cc = f32[2,12] concatenate(rv, pd), dimensions={1}
  ROOT t = f32[2,12] exponential(cc)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(fusions[0]->attrs().fusion_kind, FusionKind::kLoop);
  EXPECT_EQ(fusions[0]->operand_count(), 1);  // only p0 left outside
  EXPECT_EQ(Entry(f).instruction_count(), 2);
}

TEST(InstructionFusionTest, ReductionFusesItsElementwiseProducers) {
  auto f = RunCpuFusion(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,128] parameter(0)
  y = f32[64,128] parameter(1)
  d = f32[64,128] subtract(x, y)
  sq = f32[64,128] multiply(d, d)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(sq, z), dimensions={1}, to_apply=add
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kInput:subtract,multiply,constant,reduce");
  EXPECT_EQ(fusions[0]->operand_count(), 2);
}

TEST(InstructionFusionTest, ReductionsAreNotProducers) {
  auto f = RunCpuFusion(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,128] parameter(0)
  z = f32[] constant(0)
  r = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  ROOT n = f32[64] negate(r)
}
)");
  // The negate reading the reduction stays a plain instruction (its own kernel): a fusion is
  // only made when something fuses.
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kInput:constant,reduce");
  EXPECT_EQ(Entry(f).root_instruction()->opcode(), HloOpcode::kNegate);
}

TEST(InstructionFusionTest, NothingFusesIntoDotOrConvolutionButEpiloguesReadThem) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  a = f32[16,32] parameter(0)
  b = f32[32,8] parameter(1)
  bias = f32[8] parameter(2)
  na = f32[16,32] negate(a)
  d = f32[16,8] dot(na, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,8] broadcast(bias), dimensions={1}
  s = f32[16,8] add(d, bb)
  z = f32[] constant(0)
  zb = f32[16,8] broadcast(z), dimensions={}
  ROOT relu = f32[16,8] maximum(s, zb)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kLoop:broadcast,add,constant,broadcast,maximum");
  EXPECT_EQ(fusions[0]->operand(0)->opcode(), HloOpcode::kDot);
  const HloInstruction* dot = fusions[0]->operand(0);
  EXPECT_EQ(dot->operand(0)->opcode(), HloOpcode::kNegate);  // not fused into the dot
}

TEST(InstructionFusionTest, CheapProducersAreDuplicatedExpensiveOnesAreNot) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  x = f32[32,32] parameter(0)
  c = f32[] constant(3)
  b = f32[32,32] broadcast(c), dimensions={}
  e = f32[32,32] exponential(x)
  m1 = f32[32,32] multiply(e, b)
  t = f32[32,32] transpose(e), dimensions={1,0}
  s = f32[32,32] sort(t), dimensions={1}, to_apply=lt
  a2 = f32[32,32] add(s, b)
  ROOT r = (f32[32,32], f32[32,32]) tuple(m1, a2)
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
)");
  // The broadcast is fused into both of its users (and disappears); exp has two users
  // (multiply and the transpose) and is not duplicated.
  EXPECT_EQ(CountOp(Entry(f), HloOpcode::kBroadcast), 0);
  int with_exp = 0;
  for (const HloInstruction* fu : Fusions(Entry(f)))
    for (const HloInstruction* i : fu->fused_computation()->instructions())
      with_exp += i->opcode() == HloOpcode::kExp;
  EXPECT_LE(with_exp, 1);
  EXPECT_EQ(CountOp(Entry(f), HloOpcode::kExp) + with_exp, 1);
  EXPECT_EQ(CountOp(Entry(f), HloOpcode::kConstant), 0);
  // The broadcast (and its constant) were duplicated into the first consumer and moved into
  // the second.
  EXPECT_EQ(f.fusion.duplicated, 2);
}

TEST(InstructionFusionTest, ExpensiveProducerIsNotRecomputedThroughBroadcast) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  v = f32[256] parameter(0)
  x = f32[256,256] parameter(1)
  e = f32[256] exponential(v)
  b = f32[256,256] broadcast(e), dimensions={0}
  ROOT m = f32[256,256] multiply(x, b)
}
)");
  // exp stays in its own kernel: fusing it would compute 65536 exponentials instead of 256.
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kLoop:broadcast,multiply");
  EXPECT_EQ(fusions[0]->operand(1)->opcode(), HloOpcode::kExp);
  // A small one is recomputed (a few hundred extra exponentials beat a kernel).
  auto g = RunCpuFusion(R"(
HloModule m
ENTRY main {
  v = f32[8] parameter(0)
  x = f32[8,40] parameter(1)
  e = f32[8] exponential(v)
  b = f32[8,40] broadcast(e), dimensions={0}
  ROOT m = f32[8,40] multiply(x, b)
}
)");
  ASSERT_EQ(Fusions(Entry(g)).size(), 1u);
}

TEST(InstructionFusionTest, LargeTransposesKeepTheirOwnKernel) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  x = f32[512,512] parameter(0)
  t = f32[512,512] transpose(x), dimensions={1,0}
  ROOT n = f32[512,512] negate(t)
}
)");
  EXPECT_EQ(CountOp(Entry(f), HloOpcode::kTranspose), 1);
  auto g = RunCpuFusion(R"(
HloModule m
ENTRY main {
  x = f32[16,8] parameter(0)
  t = f32[8,16] transpose(x), dimensions={1,0}
  y = f32[1,512,512] parameter(1)
  u = f32[512,1,512] transpose(y), dimensions={1,0,2}
  n = f32[8,16] negate(t)
  m = f32[512,1,512] negate(u)
  ROOT r = (f32[8,16], f32[512,1,512]) tuple(n, m)
}
)");
  // Small transposes and trivial ones (moving a size-1 dimension) fuse.
  EXPECT_EQ(CountOp(Entry(g), HloOpcode::kTranspose), 0);
  EXPECT_EQ(Fusions(Entry(g)).size(), 2u);
}

TEST(InstructionFusionTest, DynamicUpdateSliceRootsAnInPlaceFusion) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  buf = f32[64,16] parameter(0)
  u = f32[4,16] parameter(1)
  i = s32[] parameter(2)
  nb = f32[64,16] negate(buf)
  eu = f32[4,16] add(u, u)
  z = s32[] constant(0)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT d = f32[64,16] dynamic-update-slice(nb, eu, i1, z)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  // negate(buf) is not fused into the buffer operand of the in-place update.
  EXPECT_EQ(fusions[0]->operand(0)->opcode(), HloOpcode::kNegate);
  const HloInstruction* root = FusedRoot(*fusions[0]);
  EXPECT_EQ(root->opcode(), HloOpcode::kDynamicUpdateSlice);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kAdd);
}

TEST(InstructionFusionTest, LargeConstantsStayBuffers) {
  std::string big = "{";
  for (int i = 0; i < 512; ++i) big += (i ? "," : "") + std::to_string(i);
  big += "}";
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  x = f32[512] parameter(0)
  c = f32[512] constant()" + big + R"()
  s = f32[] constant(2)
  sb = f32[512] broadcast(s), dimensions={}
  a = f32[512] add(x, c)
  ROOT m = f32[512] multiply(a, sb)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(FusedOps(*fusions[0]), "kLoop:add,constant,broadcast,multiply");
  EXPECT_EQ(CountOp(Entry(f), HloOpcode::kConstant), 1);
}

TEST(InstructionFusionTest, RespectsOperandLimit) {
  CpuFusionOptions o = CpuFusionPolicy::DefaultOptions();
  o.cost.max_operands = 3;
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  p2 = f32[8] parameter(2)
  p3 = f32[8] parameter(3)
  a = f32[8] add(p0, p1)
  b = f32[8] add(p2, p3)
  ROOT c = f32[8] multiply(a, b)
}
)", o);
  // c = a * b would need p0..p3: it fuses one of the adds only.
  for (const HloInstruction* fu : Fusions(Entry(f))) EXPECT_LE(fu->operand_count(), 3);
  ASSERT_EQ(Fusions(Entry(f)).size(), 1u);
  EXPECT_EQ(Entry(f).instruction_count(), 6);
}

TEST(InstructionFusionTest, FusesInsideWhileBodiesNotInReducers) {
  auto f = RunCpuFusion(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  n = f32[] negate(b)
  ROOT s = f32[] add(a, n)
}
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[8] broadcast(h), dimensions={}
  m = f32[8] multiply(v, hb)
  v1 = f32[8] add(m, v)
  ROOT t = (s32[], f32[8]) tuple(i1, v1)
}
ENTRY main {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(t), condition=cond, body=body
  v = f32[8] get-tuple-element(w), index=1
  zf = f32[] constant(0)
  ROOT r = f32[] reduce(v, zf), dimensions={0}, to_apply=add
}
)");
  const HloComputation* body = f.module->GetComputationWithName("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(CountOp(*body, HloOpcode::kFusion), 2);  // i+1, and the f32[8] chain
  const HloComputation* add = f.module->GetComputationWithName("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(CountOp(*add, HloOpcode::kFusion), 0);
}

constexpr std::string_view kSoftmax = R"(
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[64,256] broadcast(mx), dimensions={0}
  s = f32[64,256] subtract(x, mb)
  e = f32[64,256] exponential(s)
  z = f32[] constant(0)
  sum = f32[64] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[64,256] broadcast(sum), dimensions={0}
  ROOT d = f32[64,256] divide(e, sb)
}
)";

TEST(MultiOutputFusionTest, SoftmaxIsThreeKernels) {
  auto f = RunCpuFusion(kSoftmax);
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 3u) << f.module->ToString();
  EXPECT_EQ(FusedOps(*fusions[0]), "kInput:constant,reduce");
  // exp is computed once, by the sum's kernel, which also writes it for the division.
  EXPECT_EQ(FusedOps(*fusions[1]),
            "kInput:broadcast,subtract,exponential,constant,reduce,tuple");
  EXPECT_TRUE(IsMultiOutputFusion(*fusions[1]));
  EXPECT_EQ(FusedOps(*fusions[2]), "kLoop:broadcast,divide");
  EXPECT_EQ(f.mof.multi_output_merges, 1);
}

TEST(MultiOutputFusionTest, SiblingReductionsShareOnePass) {
  auto f = RunCpuFusion(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  z = f32[] constant(0)
  sum = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  sq = f32[64,256] multiply(x, x)
  sumsq = f32[64] reduce(sq, z), dimensions={1}, to_apply=add
  n = f32[] constant(256)
  nb = f32[64] broadcast(n), dimensions={}
  mean = f32[64] divide(sum, nb)
  meansq = f32[64] divide(sumsq, nb)
  m2 = f32[64] multiply(mean, mean)
  ROOT var = f32[64] subtract(meansq, m2)
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 2u) << f.module->ToString();
  EXPECT_TRUE(IsMultiOutputFusion(*fusions[0]));
  EXPECT_EQ(fusions[0]->attrs().fusion_kind, FusionKind::kInput);
  EXPECT_EQ(fusions[0]->operand_count(), 1);  // x, read once
  EXPECT_EQ(FusedOps(*fusions[1]).substr(0, 6), "kLoop:");
}

TEST(MultiOutputFusionTest, SiblingsNeedCompatibleShapesAndEnoughSharedBytes) {
  auto f = RunCpuFusion(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  z = f32[] constant(0)
  rows = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  cols = f32[256] reduce(x, z), dimensions={0}, to_apply=add
  y = f32[4,4] parameter(1)
  a = f32[4] reduce(y, z), dimensions={1}, to_apply=add
  sy = f32[4,4] multiply(y, y)
  b = f32[4] reduce(sy, z), dimensions={1}, to_apply=add
  ROOT t = (f32[64], f32[256], f32[4], f32[4]) tuple(rows, cols, a, b)
}
)");
  // Different reduced dimensions; and a 64-byte shared operand is not worth it.
  EXPECT_EQ(Fusions(Entry(f)).size(), 4u);
  EXPECT_EQ(f.mof.multi_output_merges, 0);
}

TEST(MultiOutputFusionTest, LoopSiblingsReadingOneInput) {
  auto f = RunCpuFusion(R"(
HloModule m
ENTRY main {
  x = f32[128,128] parameter(0)
  e = f32[128,128] exponential(x)
  l = f32[128,128] log(x)
  s1 = f32[128,128] sort(e), dimensions={1}, to_apply=lt
  s2 = f32[128,128] sort(l), dimensions={1}, to_apply=lt
  ROOT t = (f32[128,128], f32[128,128]) tuple(s1, s2)
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
)");
  auto fusions = Fusions(Entry(f));
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_TRUE(IsMultiOutputFusion(*fusions[0]));
  EXPECT_EQ(fusions[0]->operand_count(), 1);
}

}  // namespace
}  // namespace kiln
