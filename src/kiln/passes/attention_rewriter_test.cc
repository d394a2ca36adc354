// The attention matcher on the HLO JAX writes (tests/data/attn_*, tools/kiln_cases/attention.py):
// after the neutral simplification the GPU compiler runs, each case matches exactly as often as
// it should -- once for every attention form (layouts, masks, scales, lengths 1/7/500, head dims
// 64/128, a fused qkv buffer, jax.nn.dot_product_attention), never for the refusals (softmax
// over the wrong axis, a mask that is not a mask, probabilities used elsewhere). For every
// match, the config's meaning (EvaluateAttention) agrees with the outlined computation on fresh
// random operands, and the rewritten module with the original.
#include "kiln/passes/attention_rewriter.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/tolerance.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/layout_normalization.h"
#include "kiln/passes/passes_test_util.h"
#include "kiln/passes/simplification_pipeline.h"

namespace kiln {
namespace {

using testing::CompareModules;
using testing::ParseOrDie;
using testing::RandomArguments;

std::string DataDir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data";
}

std::string ReadCase(const std::string& name) {
  std::ifstream f(DataDir() + "/" + name + "/module.hlo");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<HloInstruction*> AttentionCalls(const HloModule& m) {
  std::vector<HloInstruction*> out;
  for (HloComputation* c : m.computations())
    for (HloInstruction* i : c->instructions())
      if (IsAttentionCall(*i)) out.push_back(i);
  return out;
}

// The GPU compiler's neutral prefix, then the matcher.
std::unique_ptr<HloModule> Rewrite(const std::string& text, int* matches) {
  std::unique_ptr<HloModule> m = ParseOrDie(text);
  if (!m) return nullptr;
  HloPassPipeline p("test");
  p.AddPass<LayoutNormalization>();
  AddSimplificationPasses(p);
  p.AddPass<AttentionRewriter>();
  StatusOr<bool> r = p.Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  *matches = static_cast<int>(AttentionCalls(*m).size());
  return m;
}

struct Expect {
  std::string name;
  int matches = 1;
  AttentionMask mask = AttentionMask::kNone;
  int64_t causal_offset = 0;
  int64_t q_len = 0;
  bool bias = false, data_mask = false;  // Note [Attention bias and masks]
};
std::ostream& operator<<(std::ostream& os, const Expect& e) { return os << e.name; }

class AttentionCaseTest : public ::testing::TestWithParam<Expect> {};

TEST_P(AttentionCaseTest, MatchesAsJaxWroteIt) {
  const Expect& e = GetParam();
  const std::string text = ReadCase(e.name);
  if (text.empty()) GTEST_SKIP() << "no tests/data/" << e.name;
  int matches = 0;
  std::unique_ptr<HloModule> m = Rewrite(text, &matches);
  ASSERT_TRUE(m);
  EXPECT_EQ(matches, e.matches) << m->ToString();
  // The rewritten module computes what the original does.
  std::unique_ptr<HloModule> original = ParseOrDie(text);
  const std::string diff = CompareModules(*original, *m, RandomArguments(*original, 7), testing::Match::kClose);
  EXPECT_TRUE(diff.empty() || diff.rfind("skip", 0) == 0) << diff;
  for (HloInstruction* call : AttentionCalls(*m)) {
    StatusOr<AttentionConfig> c = AttentionConfigOf(*call);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->mask, e.mask) << c->ToString();
    EXPECT_EQ(c->causal_offset, e.causal_offset) << c->ToString();
    if (e.q_len) {
      EXPECT_EQ(c->q_len, e.q_len) << c->ToString();
    }
    EXPECT_EQ(c->has_bias, e.bias) << c->ToString();
    EXPECT_EQ(c->has_mask, e.data_mask) << c->ToString();
    // The config's meaning against the outlined computation, on random operands (masks: random
    // keys dropped, some rows entirely).
    std::vector<Literal> args;
    for (int64_t i = 0; i < call->operand_count(); ++i) {
      Literal l(call->operand(i)->shape());
      std::mt19937_64 rng(100 + i);
      std::uniform_real_distribution<double> u(-1, 1);
      const bool pred = l.shape().element_type() == PrimitiveType::kPred;
      for (int64_t j = 0; j < l.element_count(); ++j) l.SetFromDouble(j, pred ? (u(rng) < -0.3 ? 0.0 : 1.0) : u(rng));
      // The leading rows of a [.., q, kv] mask lose every key (they average v, Note [Attention
      // bias and masks]).
      if (pred)
        for (int64_t j = 0; j < std::min<int64_t>(l.element_count() / 2, 256); ++j) l.SetFromDouble(j, 0.0);
      args.push_back(std::move(l));
    }
    std::vector<const Literal*> ptrs;
    for (const Literal& l : args) ptrs.push_back(&l);
    Evaluator ev;
    StatusOr<Literal> body = ev.Evaluate(*call->called_computations()[0], ptrs);
    ASSERT_TRUE(body.ok()) << body.status().ToString();
    StatusOr<Literal> direct = EvaluateAttention(*c, ptrs, call->shape());
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    ArrayComparison cmp = CompareArrays(*direct, *body, DefaultTolerance(call->shape().element_type()), "attention");
    EXPECT_TRUE(cmp.ok()) << cmp.ToString() << "\n" << c->ToString() << "\n" << call->ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jax, AttentionCaseTest,
    ::testing::Values(Expect{"attn_bhqd_causal_bf16", 1, AttentionMask::kCausal, 0, 128},
                      Expect{"attn_bhqd_nomask_bf16", 1, AttentionMask::kNone, 0, 64},
                      Expect{"attn_bshd_causal_bf16", 1, AttentionMask::kCausal, 0, 96},
                      Expect{"attn_dpa_causal_bf16", 1, AttentionMask::kCausal, 0, 80},
                      Expect{"attn_dpa_nomask_bf16", 1, AttentionMask::kNone, 0, 48},
                      Expect{"attn_bshd_nomask_f16", 1, AttentionMask::kNone, 0, 48},
                      Expect{"attn_flax_scaled_q_bf16", 1, AttentionMask::kCausal, 0, 64},
                      Expect{"attn_decoder_q16_kv96_bf16", 1, AttentionMask::kCausal, 80, 16},
                      Expect{"attn_q1_kv100_bf16", 1, AttentionMask::kNone, 0, 1},
                      Expect{"attn_s7_causal_bf16", 1, AttentionMask::kCausal, 0, 7},
                      Expect{"attn_s500_causal_bf16", 1, AttentionMask::kCausal, 0, 500},
                      Expect{"attn_d128_causal_bf16", 1, AttentionMask::kCausal, 0, 72},
                      Expect{"attn_fused_qkv_bf16", 1, AttentionMask::kCausal, 0, 32},
                      Expect{"attn_causal_f32", 1, AttentionMask::kCausal, 0, 32},
                      Expect{"attn_gqa_dpa_causal_bf16", 1, AttentionMask::kCausal, 0, 64},
                      Expect{"attn_decoder_q8_kv40_f32", 1, AttentionMask::kCausal, 32, 8},
                      Expect{"attn_bshd_causal_f32", 1, AttentionMask::kCausal, 0, 70},
                      Expect{"attn_nomask_q70_kv300_f32", 1, AttentionMask::kNone, 0, 70},
                      Expect{"attn_gqa_causal_f32", 1, AttentionMask::kCausal, 0, 33},
                      Expect{"attn_mqa_dpa_bf16", 1, AttentionMask::kNone, 0, 40},
                      Expect{"nn_attention_causal_f32", 1, AttentionMask::kCausal, 0, 0},
                      Expect{"nn_attention_noncausal_f32", 1, AttentionMask::kNone, 0, 0},
                      Expect{"nn_transformer_block_f32", 1, AttentionMask::kCausal, 0, 0},
                      Expect{"attn_data_mask_bf16", 1, AttentionMask::kNone, 0, 32, false, true},
                      Expect{"attn_dpa_bias_bf16", 1, AttentionMask::kNone, 0, 40, true, false},
                      Expect{"attn_dpa_mask_causal_bf16", 1, AttentionMask::kCausal, 0, 48, false, true},
                      Expect{"attn_dpa_kv_lengths_bf16", 1, AttentionMask::kNone, 0, 40, false, true},
                      Expect{"attn_dpa_bias_mask_f32", 1, AttentionMask::kNone, 0, 100, true, true},
                      Expect{"attn_alibi_padding_f32", 1, AttentionMask::kNone, 0, 70, true, true},
                      Expect{"attn_data_mask_causal_f32", 1, AttentionMask::kCausal, 0, 130, false, true},
                      Expect{"attn_mask_empty_rows_causal_f32", 1, AttentionMask::kCausal, 110, 40, false, true},
                      Expect{"attn_refuse_wrong_axis_bf16", 0}, Expect{"attn_refuse_fill_zero_bf16", 0},
                      Expect{"attn_refuse_bias_after_mask_f32", 0},
                      Expect{"attn_refuse_probs_used_bf16", 0}, Expect{"nn_softmax_f32", 0},
                      // Backward graphs reuse the forward probabilities: without the backward
                      // matcher (AttentionBackwardTest) the forward does not match either.
                      Expect{"attn_grad_causal_f32", 0}, Expect{"attn_grad_causal_bf16", 0}),
    [](const ::testing::TestParamInfo<Expect>& i) { return i.param.name; });

// ---- backward (Note [Attention backward]) ----

std::vector<HloInstruction*> BackwardCalls(const HloModule& m) {
  std::vector<HloInstruction*> out;
  for (HloComputation* c : m.computations())
    for (HloInstruction* i : c->instructions())
      if (IsAttentionBackwardCall(*i)) out.push_back(i);
  return out;
}

std::unique_ptr<HloModule> RewriteWithBackward(const std::string& text) {
  std::unique_ptr<HloModule> m = ParseOrDie(text);
  if (!m) return nullptr;
  HloPassPipeline p("test");
  p.AddPass<LayoutNormalization>();
  AddSimplificationPasses(p);
  AttentionRewriterOptions o;
  o.backward = true;
  p.AddPass<AttentionRewriter>(o);
  StatusOr<bool> r = p.Run(*m);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return m;
}

struct ExpectBackward {
  std::string name;
  int backward = 1;  // backward calls (and as many forward calls)
  AttentionMask mask = AttentionMask::kNone;
  int forward = -1;  // forward calls (-1: as many as backward ones)
  bool packed = false;  // the gradients written into their concatenate (Note [Packed gradients])
};
std::ostream& operator<<(std::ostream& os, const ExpectBackward& e) { return os << e.name; }

class AttentionBackwardTest : public ::testing::TestWithParam<ExpectBackward> {};

// Random values in [-1, 1] for each operand of `call`.
std::vector<Literal> RandomOperands(const HloInstruction* call) {
  std::vector<Literal> args;
  for (int64_t i = 0; i < call->operand_count(); ++i) {
    Literal l(call->operand(i)->shape());
    std::mt19937_64 rng(300 + i);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t j = 0; j < l.element_count(); ++j) l.SetFromDouble(j, u(rng));
    args.push_back(std::move(l));
  }
  return args;
}

// The call's outlined computation and `direct` (its config's meaning) on the same random
// operands; nullopt (with the failure recorded) where either fails.
std::optional<std::pair<Literal, Literal>> BodyAndDirect(
    const HloInstruction* call, const std::function<StatusOr<Literal>(std::span<const Literal* const>)>& direct) {
  std::vector<Literal> args = RandomOperands(call);
  std::vector<const Literal*> ptrs;
  for (const Literal& l : args) ptrs.push_back(&l);
  Evaluator ev;
  StatusOr<Literal> body = ev.Evaluate(*call->called_computations()[0], ptrs);
  StatusOr<Literal> d = direct(ptrs);
  if (!body.ok() || !d.ok()) {
    ADD_FAILURE() << (body.ok() ? d.status() : body.status()).ToString();
    return std::nullopt;
  }
  return std::make_pair(std::move(*body), std::move(*d));
}

TEST_P(AttentionBackwardTest, GradientsMatchAsJaxWroteThem) {
  const ExpectBackward& e = GetParam();
  const std::string text = ReadCase(e.name);
  if (text.empty()) GTEST_SKIP() << "no tests/data/" << e.name;
  std::unique_ptr<HloModule> m = RewriteWithBackward(text);
  ASSERT_TRUE(m);
  const std::vector<HloInstruction*> calls = BackwardCalls(*m);
  ASSERT_EQ(static_cast<int>(calls.size()), e.backward) << m->ToString();
  // Once the backward took its dots, the forward matches too.
  EXPECT_EQ(static_cast<int>(AttentionCalls(*m).size()), e.forward < 0 ? e.backward : e.forward) << m->ToString();
  std::unique_ptr<HloModule> original = ParseOrDie(text);
  const std::string diff = CompareModules(*original, *m, RandomArguments(*original, 11), testing::Match::kClose);
  EXPECT_TRUE(diff.empty() || diff.rfind("skip", 0) == 0) << diff;
  // Each forward paired with its backward returns (out, lse) (Note [Attention statistics]), its
  // config's meaning checked against its outlined computation, both results.
  for (HloInstruction* call : AttentionCalls(*m)) {
    StatusOr<AttentionConfig> c = AttentionConfigOf(*call);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->stats, e.backward > 0) << c->ToJson();
    if (!c->stats) continue;
    ASSERT_TRUE(call->shape().IsTuple()) << call->ToString();
    auto both = BodyAndDirect(call, [&](auto ptrs) { return EvaluateAttention(*c, ptrs, call->shape()); });
    ASSERT_TRUE(both);
    const Literal* body = &both->first;
    const Literal* direct = &both->second;
    const bool narrow = PrimitiveByteWidth(c->input_type) == 2;
    for (int64_t t = 0; t < 2; ++t) {
      Tolerance tol = DefaultTolerance(narrow ? c->input_type : PrimitiveType::kF32);
      ArrayComparison cmp = CompareArrays(direct->tuple_element(t), body->tuple_element(t), tol,
                                          t == 0 ? "forward output" : "forward lse");
      EXPECT_TRUE(cmp.ok()) << cmp.ToString() << "\n" << c->ToJson();
    }
  }
  for (HloInstruction* call : calls) {
    StatusOr<AttentionConfig> c = AttentionConfigOf(*call);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(c->backward);
    EXPECT_EQ(c->mask, e.mask) << c->ToString();
    EXPECT_NEAR(c->dq_scale, c->scale, 1e-6 * c->scale) << c->ToJson();
    EXPECT_NEAR(c->dk_scale, c->scale, 1e-6 * c->scale) << c->ToJson();
    StatusOr<AttentionConfig> back = AttentionConfig::FromJson(c->ToJson());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, *c);
    // Given the forward's output and statistics: two operands more, which its computation
    // (and so its value) ignores.
    EXPECT_TRUE(c->stats) << c->ToJson();
    if (c->stats) {
      const int64_t n = call->operand_count();
      ASSERT_GE(n, 3);
      ASSERT_EQ(c->o.operand, n - 2);
      ASSERT_EQ(c->lse.operand, n - 1);
      const HloInstruction* fwd = call->operand(n - 2)->operand(0);
      EXPECT_TRUE(IsAttentionCall(*fwd)) << call->ToString();
      EXPECT_EQ(call->operand(n - 1)->operand(0), fwd) << call->ToString();
      EXPECT_EQ(call->called_computations()[0]->num_parameters(), n);
    }
    // The config's meaning against the outlined computation, on random operands.
    auto both = BodyAndDirect(call, [&](auto ptrs) { return EvaluateAttentionBackward(*c, ptrs, call->shape()); });
    ASSERT_TRUE(both);
    const Literal* body = &both->first;
    const Literal* direct = &both->second;
    // (dQ, dK, dV), or one array holding all three (Note [Packed gradients]).
    const bool packed = !call->shape().IsTuple();
    EXPECT_EQ(packed, e.packed) << call->ToString();
    for (int64_t t = 0; t < (packed ? 1 : 3); ++t) {
      const Shape& s = packed ? call->shape() : call->shape().tuple_shapes(t);
      // Gradients of 16-bit inputs (also f32 ones) sum products of rounded p, dP and dS: twice
      // the 16-bit tolerance.
      const bool narrow = PrimitiveByteWidth(c->input_type) == 2;
      Tolerance tol = DefaultTolerance(narrow ? c->input_type : s.element_type());
      if (narrow) {
        tol.atol *= 2;
        tol.rtol *= 2;
      }
      ArrayComparison cmp = CompareArrays(packed ? *direct : direct->tuple_element(t),
                                          packed ? *body : body->tuple_element(t), tol, StrCat("gradient ", t));
      EXPECT_TRUE(cmp.ok()) << cmp.ToString() << "\n" << c->ToJson();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jax, AttentionBackwardTest,
    ::testing::Values(ExpectBackward{"attn_grad_causal_f32", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_causal_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_bshd_nomask_bf16", 1, AttentionMask::kNone},
                      ExpectBackward{"attn_grad_dpa_causal_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_flax_scaled_q_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_s7_causal_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_d128_causal_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_custom_jvp_f32", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_fused_qkv_bf16", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_block_f32", 1, AttentionMask::kCausal},
                      ExpectBackward{"attn_grad_split_qkv_bf16", 1, AttentionMask::kCausal, -1, true},
                      // Not matched backward: grouped-query heads (dK, dV sum over the group).
                      ExpectBackward{"attn_grad_gqa_dpa_bf16", 0},
                      // Forward graphs have no backward.
                      ExpectBackward{"attn_bhqd_causal_bf16", 0, AttentionMask::kCausal, 1},
                      ExpectBackward{"attn_refuse_probs_used_bf16", 0}),
    [](const ::testing::TestParamInfo<ExpectBackward>& i) { return i.param.name; });

// The suite's training step (bench/gpu/train_attention: a transformer block's SGD step, bf16,
// B8 S1024 16 heads): its attention matches forward and backward, on views of the fused qkv
// projection, and the backward config is one the GPU takes.
TEST(AttentionBackwardTest, TrainingStepOfTheBenchmark) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  std::ifstream f(std::string(src ? src : ".") + "/bench/gpu/train_attention/train_attention_bf16.hlo");
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().empty()) GTEST_SKIP() << "no bench/gpu/train_attention/train_attention_bf16.hlo";
  std::unique_ptr<HloModule> m = RewriteWithBackward(ss.str());
  ASSERT_TRUE(m);
  ASSERT_EQ(BackwardCalls(*m).size(), 1u);
  EXPECT_EQ(AttentionCalls(*m).size(), 1u);
  StatusOr<AttentionConfig> c = AttentionConfigOf(*BackwardCalls(*m)[0]);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->batch, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(c->q_len, 1024);
  EXPECT_EQ(c->mask, AttentionMask::kCausal);
  EXPECT_EQ(c->dq_type, PrimitiveType::kBF16) << c->ToJson();
  EXPECT_EQ(c->dk_type, PrimitiveType::kBF16) << c->ToJson();
  EXPECT_EQ(c->dv_type, PrimitiveType::kBF16) << c->ToJson();
  EXPECT_NEAR(c->dq_scale, c->scale, 1e-6) << c->ToJson();
  EXPECT_NEAR(c->dk_scale, c->scale, 1e-6) << c->ToJson();
  EXPECT_EQ(c->d_out.element, 1) << c->ToJson();
  // The forward hands its output and statistics to the backward.
  EXPECT_TRUE(c->stats) << c->ToJson();
  StatusOr<AttentionConfig> fc = AttentionConfigOf(*AttentionCalls(*m)[0]);
  ASSERT_TRUE(fc.ok()) << fc.status().ToString();
  EXPECT_TRUE(fc->stats) << fc->ToJson();
  EXPECT_EQ(fc->lse.row, 1) << fc->ToJson();
  EXPECT_EQ(fc->lse.batch, (std::vector<int64_t>{16 * 1024, 1024})) << fc->ToJson();
  // dQ, dK and dV go straight into the [8, 1024, 3072] concatenate the qkv projection's
  // gradients read: heads of 64 at 64-element steps, rows 3072 apart, k and v 1024 and 2048 in.
  const HloInstruction* call = BackwardCalls(*m)[0];
  EXPECT_FALSE(call->shape().IsTuple()) << call->ToString();
  EXPECT_EQ(call->shape().dimensions(), (std::vector<int64_t>{8, 1024, 3072}));
  const AttentionView* views[3] = {&c->dq, &c->dk, &c->dv};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(views[i]->operand, 0) << c->ToJson();
    EXPECT_EQ(views[i]->offset, 1024 * i) << c->ToJson();
    EXPECT_EQ(views[i]->element, 1) << c->ToJson();
    EXPECT_EQ(views[i]->row, 3072) << c->ToJson();
    EXPECT_EQ(views[i]->batch, (std::vector<int64_t>{1024 * 3072, 64})) << c->ToJson();
  }
  std::cerr << c->ToJson() << "\n";
}

TEST(AttentionRewriterTest, ScaleAndViewsOfTheFusedQkvBuffer) {
  int matches = 0;
  std::unique_ptr<HloModule> m = Rewrite(ReadCase("attn_fused_qkv_bf16"), &matches);
  if (!m) GTEST_SKIP();
  ASSERT_EQ(matches, 1);
  const HloInstruction* call = AttentionCalls(*m)[0];
  StatusOr<AttentionConfig> c = AttentionConfigOf(*call);
  ASSERT_TRUE(c.ok());
  // One buffer [1, 32, 3, 2, 64]: q, k and v are its thirds, heads 64 elements apart.
  EXPECT_EQ(call->operand_count(), 1);
  EXPECT_EQ(c->q.operand, 0);
  EXPECT_EQ(c->k.operand, 0);
  EXPECT_EQ(c->v.operand, 0);
  EXPECT_EQ(c->q.offset, 0);
  EXPECT_EQ(c->k.offset, 128);
  EXPECT_EQ(c->v.offset, 256);
  EXPECT_EQ(c->q.row, 384);
  EXPECT_EQ(c->q.batch, std::vector<int64_t>{64});
  EXPECT_EQ(c->q.element, 1);
  EXPECT_DOUBLE_EQ(c->scale, 0.125);
  // The output is written straight into [1, 32, 128] (heads interleaved): no transpose after.
  EXPECT_EQ(call->shape().dimensions(), (std::vector<int64_t>{1, 32, 128}));
  EXPECT_EQ(c->out.row, 128);
  EXPECT_EQ(c->out.batch, std::vector<int64_t>{64});
}

TEST(AttentionRewriterTest, GroupedQueryHeadsBroadcastKeysAndValues) {
  int matches = 0;
  std::unique_ptr<HloModule> m = Rewrite(ReadCase("attn_gqa_dpa_causal_bf16"), &matches);
  if (!m) GTEST_SKIP();
  ASSERT_EQ(matches, 1);
  StatusOr<AttentionConfig> c = AttentionConfigOf(*AttentionCalls(*m)[0]);
  ASSERT_TRUE(c.ok());
  // Batch dims: the 2 k/v heads, then the group of 2 query heads each (k and v stride 0).
  EXPECT_EQ(c->batch, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c->k.batch[1], 0);
  EXPECT_EQ(c->v.batch[1], 0);
  EXPECT_EQ(c->q.batch[1], 64);
  EXPECT_EQ(c->q.batch[0], 128);
}

TEST(AttentionRewriterTest, FlaxScaledQueryFoldsIntoTheScale) {
  int matches = 0;
  std::unique_ptr<HloModule> m = Rewrite(ReadCase("attn_flax_scaled_q_bf16"), &matches);
  if (!m) GTEST_SKIP();
  ASSERT_EQ(matches, 1);
  StatusOr<AttentionConfig> c = AttentionConfigOf(*AttentionCalls(*m)[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->scale, 0.125);
}

TEST(AttentionRewriterTest, SupportPredicateDecides) {
  HloPassPipeline p("test");
  p.AddPass<LayoutNormalization>();
  AddSimplificationPasses(p);
  AttentionRewriterOptions o;
  o.supported = [](const AttentionConfig& c) { return c.input_type != PrimitiveType::kF32; };
  p.AddPass<AttentionRewriter>(o);
  for (const char* name : {"attn_causal_f32", "attn_bhqd_causal_bf16"}) {
    std::unique_ptr<HloModule> m = ParseOrDie(ReadCase(name));
    if (!m) GTEST_SKIP();
    ASSERT_TRUE(p.Run(*m).ok());
    EXPECT_EQ(AttentionCalls(*m).size(), std::string(name).find("f32") == std::string::npos ? 1u : 0u) << name;
  }
}

TEST(AttentionRewriterTest, ConfigJsonRoundTrips) {
  AttentionConfig c;
  c.batch = {4, 16};
  c.q_len = c.kv_len = 4096;
  c.head_dim = c.v_head_dim = 64;
  c.scale = 0.125;
  c.mask = AttentionMask::kCausal;
  c.causal_offset = 3;
  c.input_type = c.score_type = c.probs_type = c.output_type = PrimitiveType::kBF16;
  c.softmax_type = PrimitiveType::kF32;
  c.q = {0, 0, {4096 * 64 * 16, 4096 * 64}, 64, 1};
  c.k = {1, 8, {1, 2}, 3, 1};
  c.v = {2, 0, {5, 6}, 7, 1};
  c.out = {0, 0, {9, 10}, 11, 1};
  StatusOr<AttentionConfig> back = AttentionConfig::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(AttentionConfig::FromJson("{}").ok());
  EXPECT_FALSE(AttentionConfig::FromJson("{\"attention\": {\"q_len\": 1}}").ok());
  EXPECT_FALSE(AttentionConfig::FromJson("not json").ok());
}

}  // namespace
}  // namespace kiln
