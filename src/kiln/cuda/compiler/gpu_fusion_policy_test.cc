#include "kiln/cuda/compiler/gpu_fusion_policy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_test_util.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/passes/simplification_pipeline.h"

namespace kiln::cuda {
namespace {

std::unique_ptr<HloModule> Fuse(std::string_view text, GpuFusionOptions options = GpuFusionPolicy::DefaultOptions()) {
  auto m = testing::ParseOrFail(text);
  if (!m) return nullptr;
  GpuFusionPolicy policy(options);
  HloPassPipeline p("fusion-test");
  SimplificationOptions so;
  so.canonicalize_dots = true;
  AddSimplificationPasses(p, so);
  p.AddPass<InstructionFusion>(policy);
  p.AddPass<MultiOutputFusion>(policy);
  p.AddPass<DeadCodeElimination>();
  auto r = p.Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return m;
}

std::vector<const HloInstruction*> EntryKernels(const HloModule& m) {
  std::vector<const HloInstruction*> out;
  for (const HloInstruction* i : m.entry_computation()->MakeInstructionPostOrder())
    if (i->opcode() != HloOpcode::kParameter && i->opcode() != HloOpcode::kConstant &&
        i->opcode() != HloOpcode::kTuple && i->opcode() != HloOpcode::kGetTupleElement &&
        i->opcode() != HloOpcode::kBitcast)
      out.push_back(i);
  return out;
}

int64_t FusedReduces(const HloInstruction& f) {
  int64_t n = 0;
  for (const HloInstruction* i : f.fused_computation()->instructions()) n += i->opcode() == HloOpcode::kReduce;
  return n;
}

std::string ReadShared(const std::string& rel) {
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) return "";
  std::ifstream in(std::string(shared) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kSoftmax = R"(HloModule softmax
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,128] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  bm = f32[64,128] broadcast(mx), dimensions={0}
  sub = f32[64,128] subtract(x, bm)
  ex = f32[64,128] exponential(sub)
  zero = f32[] constant(0)
  sm = f32[64] reduce(ex, zero), dimensions={1}, to_apply=add_f32
  bs = f32[64,128] broadcast(sm), dimensions={0}
  ROOT out = f32[64,128] divide(ex, bs)
})";

TEST(GpuFusionPolicyTest, SoftmaxIsOneKernel) {
  auto before = testing::ParseOrFail(kSoftmax);
  auto m = Fuse(kSoftmax);
  ASSERT_TRUE(m);
  auto k = EntryKernels(*m);
  ASSERT_EQ(k.size(), 1u) << m->ToString();
  EXPECT_EQ(k[0]->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(k[0]->attrs().fusion_kind, FusionKind::kInput);
  EXPECT_EQ(FusedReduces(*k[0]), 2);
  testing::ExpectSameResults(*before, *m);
}

TEST(GpuFusionPolicyTest, WithoutNormalizationFusionSoftmaxIsSeveralKernels) {
  GpuFusionOptions o = GpuFusionPolicy::DefaultOptions();
  o.normalization_fusion = false;
  auto m = Fuse(kSoftmax, o);
  ASSERT_TRUE(m);
  EXPECT_GE(EntryKernels(*m).size(), 2u) << m->ToString();
}

TEST(GpuFusionPolicyTest, ColumnReductionIsNotFusedIntoItsConsumer) {
  const char* text = R"(HloModule colnorm
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,128] parameter(0)
  zero = f32[] constant(0)
  s = f32[128] reduce(x, zero), dimensions={0}, to_apply=add_f32
  b = f32[64,128] broadcast(s), dimensions={1}
  ROOT out = f32[64,128] divide(x, b)
})";
  auto before = testing::ParseOrFail(text);
  auto m = Fuse(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(EntryKernels(*m).size(), 2u) << m->ToString();
  testing::ExpectSameResults(*before, *m);
}

TEST(GpuFusionPolicyTest, BenchLayernormAndSoftmaxAreOneKernelEach) {
  for (const char* name : {"layernorm_f32", "softmax_f32"}) {
    std::string text = ReadShared(std::string("bench/suite/") + name + "/module.hlo");
    if (text.empty()) GTEST_SKIP() << "no KILN_SHARED_DIR/bench/suite";
    auto m = Fuse(text);
    ASSERT_TRUE(m);
    auto k = EntryKernels(*m);
    ASSERT_EQ(k.size(), 1u) << name << "\n" << m->ToString();
    EXPECT_EQ(FusedReduces(*k[0]), 2) << name;
  }
  std::string small = ReadShared("bench/suite/layernorm_f32_small/module.hlo");
  auto before = testing::ParseOrFail(small);
  auto m = Fuse(small);
  ASSERT_TRUE(before && m);
  testing::ExpectSameResults(*before, *m);
}

TEST(GpuFusionPolicyTest, GemmsAreNotFused) {
  const char* text = R"(HloModule g
ENTRY e {
  x = f32[8,8] parameter(0)
  g = f32[8,8] custom-call(x, x), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":8,"n":8,"k":8}
  ROOT n = f32[8,8] negate(g)
})";
  auto m = Fuse(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(EntryKernels(*m).size(), 2u) << m->ToString();
}

// Note [In-place update spaces]: a scan step's gates, its new carry and the carry's write into
// the stacked output are one kernel.
TEST(GpuFusionPolicyTest, ScanStepIsOneKernel) {
  const char* text = R"(HloModule s
ENTRY e {
  h = f32[8,64] parameter(0)
  x = f32[8,64] parameter(1)
  ys = f32[16,8,64] parameter(2)
  i = s32[] parameter(3)
  a = f32[8,64] add(h, x)
  n = f32[8,64] tanh(a)
  u = f32[1,8,64] reshape(n)
  z = s32[] constant(0)
  d = f32[16,8,64] dynamic-update-slice(ys, u, i, z, z)
  ROOT t = (f32[8,64], f32[16,8,64]) tuple(n, d)
})";
  auto m = Fuse(text);
  ASSERT_TRUE(m);
  std::vector<const HloInstruction*> k = EntryKernels(*m);
  ASSERT_EQ(k.size(), 1u) << m->ToString();
  EXPECT_TRUE(IsMultiOutputFusion(*k[0])) << m->ToString();
  GpuFusionPolicy policy;
  IterationSpace sp = policy.GetIterationSpace(*k[0]);
  EXPECT_TRUE(sp.valid && sp.in_place) << sp.ToString();
  EXPECT_EQ(sp.dims, (std::vector<int64_t>{8, 64}));
  // Without the option (the neutral default), the update keeps a kernel of its own.
  GpuFusionOptions off = GpuFusionPolicy::DefaultOptions();
  off.cost.in_place_update_spaces = false;
  auto m2 = Fuse(text, off);
  ASSERT_TRUE(m2);
  EXPECT_EQ(EntryKernels(*m2).size(), 2u) << m2->ToString();
}

// An LSTM step (as JAX writes it, after the input projection is hoisted out of the scan): the
// step's slice of the projection, the recurrent GEMM's output and the bias summed, split into
// four gates, the new cell and hidden state, and the hidden state's write into the stacked
// output -- one kernel (the slices read a quarter each: Note [Fusion cost model]; the gates'
// two outputs and the update merge: ShouldMergeIntoMultiOutputProducer).
TEST(GpuFusionPolicyTest, LstmStepIsOneKernel) {
  const char* text = R"(HloModule s
ENTRY e {
  xp = f32[16,8,256] parameter(0)
  g0 = f32[8,256] parameter(1)
  b = f32[256] parameter(2)
  c = f32[8,64] parameter(3)
  ys = f32[16,8,64] parameter(4)
  i = s32[] parameter(5)
  z = s32[] constant(0)
  ds = f32[1,8,256] dynamic-slice(xp, i, z, z), dynamic_slice_sizes={1,8,256}
  x = f32[8,256] reshape(ds)
  a = f32[8,256] add(x, g0)
  bb = f32[8,256] broadcast(b), dimensions={1}
  g = f32[8,256] add(a, bb)
  gi = f32[8,64] slice(g), slice={[0:8], [0:64]}
  gf = f32[8,64] slice(g), slice={[0:8], [64:128]}
  gg = f32[8,64] slice(g), slice={[0:8], [128:192]}
  go = f32[8,64] slice(g), slice={[0:8], [192:256]}
  si = f32[8,64] logistic(gi)
  sf = f32[8,64] logistic(gf)
  so = f32[8,64] logistic(go)
  tg = f32[8,64] tanh(gg)
  fc = f32[8,64] multiply(sf, c)
  it = f32[8,64] multiply(si, tg)
  c1 = f32[8,64] add(fc, it)
  tc = f32[8,64] tanh(c1)
  h1 = f32[8,64] multiply(so, tc)
  u = f32[1,8,64] reshape(h1)
  ys1 = f32[16,8,64] dynamic-update-slice(ys, u, i, z, z)
  ROOT t = (f32[8,64], f32[8,64], f32[16,8,64]) tuple(h1, c1, ys1)
})";
  auto m = Fuse(text);
  ASSERT_TRUE(m);
  std::vector<const HloInstruction*> k = EntryKernels(*m);
  ASSERT_EQ(k.size(), 1u) << m->ToString();
  int64_t transcendentals = 0;
  for (const HloInstruction* i : k[0]->fused_computation()->instructions())
    transcendentals += i->opcode() == HloOpcode::kLogistic || i->opcode() == HloOpcode::kTanh;
  EXPECT_EQ(transcendentals, 5) << "each gate computed once\n" << m->ToString();
}

// Two in-place updates never share a kernel, nor does an update and a reduction.
TEST(GpuFusionPolicyTest, InPlaceUpdatesShareKernelsOnlyWithLoops) {
  const char* text = R"(HloModule s
add_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  h = f32[8,64] parameter(0)
  ys = f32[16,8,64] parameter(1)
  zs = f32[16,8,64] parameter(2)
  i = s32[] parameter(3)
  n = f32[8,64] tanh(h)
  u = f32[1,8,64] reshape(n)
  z = s32[] constant(0)
  d1 = f32[16,8,64] dynamic-update-slice(ys, u, i, z, z)
  d2 = f32[16,8,64] dynamic-update-slice(zs, u, i, z, z)
  c = f32[] constant(0)
  r = f32[8] reduce(n, c), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[16,8,64], f32[16,8,64], f32[8]) tuple(d1, d2, r)
})";
  auto m = Fuse(text);
  ASSERT_TRUE(m);
  for (const HloInstruction* k : EntryKernels(*m)) {
    if (!IsFusion(*k)) continue;
    int64_t updates = 0, reduces = 0;
    for (const HloInstruction* i : k->fused_computation()->instructions()) {
      updates += i->opcode() == HloOpcode::kDynamicUpdateSlice;
      reduces += i->opcode() == HloOpcode::kReduce;
    }
    EXPECT_LE(updates, 1) << m->ToString();
    EXPECT_TRUE(updates == 0 || reduces == 0) << m->ToString();
  }
}

}  // namespace
}  // namespace kiln::cuda
