#include "kiln/cuda/compiler/gemm_rewriter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/library_call_expander.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/passes_test_util.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/passes/simplification_pipeline.h"

namespace kiln::cuda {
namespace {

// Simplification with canonical dots, then the rewriter and DCE.
std::unique_ptr<HloModule> Rewrite(std::string_view text, GemmRewriterOptions options = {}) {
  auto m = testing::ParseOrDie(text);
  if (!m) return nullptr;
  HloPassPipeline p("gemm-test");
  SimplificationOptions so;
  so.canonicalize_dots = true;
  AddSimplificationPasses(p, so);
  p.AddPass<GemmRewriter>(options);
  p.AddPass<DeadCodeElimination>();
  auto changed = p.Run(*m);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  Status v = VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.ToString() << "\n" << m->ToString();
  return m;
}

std::vector<const HloInstruction*> Gemms(const HloModule& m) {
  std::vector<const HloInstruction*> out;
  for (const HloComputation* c : m.computations())
    for (const HloInstruction* i : c->MakeInstructionPostOrder())
      if (IsGemmCall(*i)) out.push_back(i);
  return out;
}

// Checks that `rewritten` (expanded back to HLO) computes what `text` does.
void CheckValues(std::string_view text, const HloModule& rewritten) {
  auto original = testing::ParseOrDie(text);
  auto expanded = testing::ParseOrDie(rewritten.ToString());
  ASSERT_TRUE(original && expanded);
  Status s = ExpandLibraryCalls(*expanded);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint64_t seed : {1, 2}) {
    std::string diff = testing::CompareModules(*original, *expanded, testing::RandomArguments(*original, seed),
                                               testing::Match::kClose);
    EXPECT_EQ(diff, "") << expanded->ToString();
  }
}

TEST(GemmRewriterTest, PlainMatmul) {
  const char* text = R"(HloModule m
ENTRY e {
  a = f32[4,5] parameter(0)
  b = f32[5,6] parameter(1)
  ROOT d = f32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->m, 4);
  EXPECT_EQ(c->n, 6);
  EXPECT_EQ(c->k, 5);
  EXPECT_FALSE(c->lhs_transposed || c->rhs_transposed);
  EXPECT_EQ(testing::EntryOps(*m), "parameter,parameter,custom-call");
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, TransposedOperandsAreFolded) {
  // x @ w.T and x.T @ w: no transpose survives.
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[8,5] parameter(0)
  w = f32[6,5] parameter(1)
  d1 = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  y = f32[5,8] parameter(2)
  v = f32[5,6] parameter(3)
  d2 = f32[8,6] dot(y, v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[8,6], f32[8,6]) tuple(d1, d2)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 2u);
  for (const HloInstruction* i : g) {
    auto c = GetGemmConfig(*i);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(i->operand(0)->opcode(), HloOpcode::kParameter);
    EXPECT_EQ(i->operand(1)->opcode(), HloOpcode::kParameter);
    EXPECT_NE(c->lhs_transposed, c->rhs_transposed) << i->ToString();
  }
  EXPECT_EQ(testing::EntryOps(*m).find("transpose"), std::string::npos) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, BatchedAttentionScores) {
  // q [B,H,S,D] . k [B,H,S,D] contracting D: k is read transposed, the result keeps its shape.
  const char* text = R"(HloModule m
ENTRY e {
  q = f32[2,3,4,8] parameter(0)
  k = f32[2,3,5,8] parameter(1)
  ROOT s = f32[2,3,4,5] dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->batch, 6);
  EXPECT_TRUE(c->rhs_transposed);
  EXPECT_FALSE(c->lhs_transposed);
  EXPECT_EQ(m->entry_computation()->root_instruction(), g[0]) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, BiasReluAndScale) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[16,32] parameter(0)
  w = f32[32,24] parameter(1)
  b = f32[24] parameter(2)
  d = f32[16,24] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c2 = f32[] constant(0.5)
  s = f32[16,24] broadcast(c2), dimensions={}
  ds = f32[16,24] multiply(d, s)
  bb = f32[16,24] broadcast(b), dimensions={1}
  a = f32[16,24] add(ds, bb)
  z = f32[] constant(0)
  zb = f32[16,24] broadcast(z), dimensions={}
  ROOT r = f32[16,24] maximum(a, zb)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->alpha, 0.5);
  EXPECT_TRUE(c->has_bias);
  EXPECT_EQ(c->activation, GemmActivation::kRelu);
  EXPECT_EQ(m->entry_computation()->root_instruction(), g[0]) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, ResidualAddThroughReshape) {
  // [2,8,16] x [16,12]: one GEMM of m=16 producing the 3-D shape, residual as c.
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,8,16] parameter(0)
  w = f32[16,12] parameter(1)
  r = f32[2,8,12] parameter(2)
  d = f32[2,8,12] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT a = f32[2,8,12] add(r, d)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->m, 16);
  EXPECT_EQ(c->beta, 1.0);
  EXPECT_EQ(m->entry_computation()->root_instruction(), g[0]) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, ResidualComputedFromTheDotIsNotFused) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[4,4] parameter(0)
  d = f32[4,4] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[4,4] negate(d)
  e = f32[4,4] exponential(n)
  ROOT a = f32[4,4] add(d, e)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->beta, 0.0);
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, ADynamicSliceAddendStaysOutsideTheGemm) {
  // A scan step's slice of its stacked input projection: as C it would need a kernel to exist
  // as a buffer; left to the add, the step's gate kernel reads it in place.
  const char* text = R"(HloModule m
ENTRY e {
  h = f32[8,16] parameter(0)
  w = f32[16,12] parameter(1)
  xs = f32[5,8,12] parameter(2)
  i = s32[] parameter(3)
  z = s32[] constant(0)
  s = f32[1,8,12] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,8,12}
  r = f32[8,12] reshape(s)
  d = f32[8,12] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT a = f32[8,12] add(r, d)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->beta, 0.0) << m->ToString();
  EXPECT_EQ(m->entry_computation()->root_instruction()->opcode(), HloOpcode::kAdd) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, OutputTransposeSwapsTheOperands) {
  // (x^T . dy)^T, as a weight gradient feeding an update: no transpose kernel is left.
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[16,8] parameter(0)
  dy = f32[16,12] parameter(1)
  w = f32[12,8] parameter(2)
  d = f32[8,12] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[12,8] transpose(d), dimensions={1,0}
  ROOT u = f32[12,8] subtract(w, t)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto c = GetGemmConfig(*g[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->m, 12);
  EXPECT_EQ(c->n, 8);
  EXPECT_EQ(testing::EntryOps(*m).find("transpose"), std::string::npos) << m->ToString();
  // w - t: the update is the GEMM's c with alpha -1.
  EXPECT_EQ(c->beta, 1.0);
  EXPECT_EQ(c->alpha, -1.0);
  EXPECT_EQ(m->entry_computation()->root_instruction(), g[0]) << m->ToString();
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, UnsupportedTypesStayDots) {
  const char* text = R"(HloModule m
ENTRY e {
  a = s32[4,5] parameter(0)
  b = s32[5,6] parameter(1)
  ROOT d = s32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  EXPECT_TRUE(Gemms(*m).empty());
}

// s8 x s8 -> s32 (JAX's preferred_element_type=int32) goes to cuBLASLt's integer GEMM; an
// integer scale stays an (integral) alpha, a residual add beta*C; no bias/activation epilogue.
TEST(GemmRewriterTest, Int8GemmAccumulatesInS32) {
  const char* text = R"(HloModule m
ENTRY e {
  a = s8[16,32] parameter(0)
  b = s8[32,8] parameter(1)
  c = s32[16,8] parameter(2)
  d = s32[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  two = s32[] constant(2)
  tb = s32[16,8] broadcast(two), dimensions={}
  m = s32[16,8] multiply(d, tb)
  ROOT r = s32[16,8] add(m, c)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  auto cfg = GetGemmConfig(*g[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->alpha, 2);
  EXPECT_EQ(cfg->beta, 1);
  EXPECT_FALSE(cfg->has_bias);
  // k contiguous in both operands: the rhs [k,n] is transposed once.
  EXPECT_FALSE(cfg->lhs_transposed);
  EXPECT_TRUE(cfg->rhs_transposed);
  EXPECT_EQ(g[0]->operand(1)->opcode(), HloOpcode::kTranspose);
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, Complex128DotBecomesAGemm) {
  const char* text = R"(HloModule m
ENTRY e {
  a = c128[2,4,5] parameter(0)
  b = c128[2,5,3] parameter(1)
  ROOT d = c128[2,4,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(Gemms(*m).size(), 1u);
  CheckValues(text, *m);
}

// Mixed floating-point operands are widened to the result type and multiplied at full
// precision; mixed integer dots stay dots.
TEST(GemmRewriterTest, MixedFloatOperandsAreWidened) {
  const char* text = R"(HloModule m
ENTRY e {
  a = bf16[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0]->operand(0)->opcode(), HloOpcode::kConvert);
  EXPECT_EQ(g[0]->operand(0)->shape().element_type(), PrimitiveType::kF32);
  EXPECT_EQ(g[0]->operand(1)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(GetGemmConfig(*g[0])->precision, Precision::kHighest);
  CheckValues(text, *m);
  const char* f64 = R"(HloModule m
ENTRY e {
  a = f16[2,8,16] parameter(0)
  b = f32[2,16,4] parameter(1)
  ROOT d = f64[2,8,4] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})";
  auto m64 = Rewrite(f64);
  ASSERT_TRUE(m64);
  EXPECT_EQ(Gemms(*m64).size(), 1u);
  CheckValues(f64, *m64);
  auto ints = Rewrite(R"(HloModule m
ENTRY e {
  a = s8[4,5] parameter(0)
  b = s32[5,6] parameter(1)
  ROOT d = s32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(ints);
  EXPECT_TRUE(Gemms(*ints).empty());
}

TEST(GemmRewriterTest, HighestPrecisionIsRecorded) {
  const char* text = R"(HloModule m
ENTRY e {
  a = f32[4,5] parameter(0)
  b = f32[5,6] parameter(1)
  ROOT d = f32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(GetGemmConfig(*g[0])->precision, Precision::kHighest);
}

std::string ReadShared(const std::string& rel) {
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) return "";
  std::ifstream in(std::string(shared) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GemmRewriterTest, MlpBf16GetsBiasGeluAndBiasWhenAskedTo) {
  std::string text = ReadShared("bench/suite/mlp_bf16/module.hlo");
  if (text.empty()) GTEST_SKIP() << "no KILN_SHARED_DIR/bench/suite/mlp_bf16";
  GemmRewriterOptions o;
  o.fuse_low_precision_bias = true;
  auto m = Rewrite(text, o);
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 2u) << m->ToString();
  auto c1 = GetGemmConfig(*g[0]);
  auto c2 = GetGemmConfig(*g[1]);
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_TRUE(c1->has_bias);
  EXPECT_EQ(c1->activation, GemmActivation::kGelu);
  EXPECT_TRUE(c2->has_bias);
  EXPECT_EQ(c2->activation, GemmActivation::kNone);
  // Nothing but parameters and the two GEMMs is left.
  EXPECT_EQ(testing::EntryOps(*m), "parameter,parameter,parameter,parameter,parameter,custom-call,custom-call")
      << m->ToString();
}

// By default a bf16 bias add stays outside the GEMM: the HLO rounds the product before adding
// (nn_mlp_silu_bf16 was one element 0.012 off with the bias inside); a bias added in f32 fuses.
TEST(GemmRewriterTest, Bf16BiasStaysOutsideTheGemm) {
  auto m = Rewrite(R"(HloModule m
ENTRY e {
  x = bf16[8,32] parameter(0)
  w = bf16[32,64] parameter(1)
  b = bf16[64] parameter(2)
  d = bf16[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = bf16[8,64] broadcast(b), dimensions={1}
  ROOT a = bf16[8,64] add(d, bb)
})");
  ASSERT_TRUE(m);
  auto g = Gemms(*m);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_FALSE(GetGemmConfig(*g[0])->has_bias);
  EXPECT_EQ(m->entry_computation()->root_instruction()->opcode(), HloOpcode::kAdd);
  auto f = Rewrite(R"(HloModule m
ENTRY e {
  x = bf16[8,32] parameter(0)
  w = bf16[32,64] parameter(1)
  b = f32[64] parameter(2)
  d = f32[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,64] broadcast(b), dimensions={1}
  a = f32[8,64] add(d, bb)
  ROOT c = bf16[8,64] convert(a)
})");
  ASSERT_TRUE(f);
  auto gf = Gemms(*f);
  ASSERT_EQ(gf.size(), 1u);
  EXPECT_TRUE(GetGemmConfig(*gf[0])->has_bias);
}

TEST(GemmRewriterTest, MlpSmallValues) {
  std::string text = ReadShared("bench/suite/mlp_f32_small/module.hlo");
  if (text.empty()) GTEST_SKIP() << "no KILN_SHARED_DIR/bench/suite/mlp_f32_small";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(Gemms(*m).size(), 2u);
  CheckValues(text, *m);
}

TEST(GemmRewriterTest, ConfigJsonRoundTrips) {
  GemmConfig c;
  c.batch = 3;
  c.m = 4;
  c.n = 5;
  c.k = 6;
  c.rhs_transposed = true;
  c.alpha = 0.25;
  c.beta = 1;
  c.has_bias = true;
  c.activation = GemmActivation::kGelu;
  c.precision = Precision::kHighest;
  auto back = GemmConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(GemmConfig::FromJson("{").ok());
  EXPECT_FALSE(GemmConfig::FromJson("{\"batch\":1}").ok());
}

}  // namespace
}  // namespace kiln::cuda
