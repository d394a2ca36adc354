#include "kiln/cuda/compiler/conv_rewriter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <fstream>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/library_call_expander.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/passes_test_util.h"
#include "kiln/passes/simple_passes.h"
#include "kiln/passes/simplification_pipeline.h"

namespace kiln::cuda {
namespace {

std::unique_ptr<HloModule> Rewrite(std::string_view text, ConvRewriterOptions options = {}) {
  auto m = testing::ParseOrDie(text);
  if (!m) return nullptr;
  HloPassPipeline p("conv-test");
  AddSimplificationPasses(p);
  p.AddPass<ConvRewriter>(options);
  p.AddPass<DeadCodeElimination>();
  auto changed = p.Run(*m);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  Status v = VerifyModule(*m);
  EXPECT_TRUE(v.ok()) << v.ToString() << "\n" << m->ToString();
  return m;
}

std::vector<const HloInstruction*> Convs(const HloModule& m) {
  std::vector<const HloInstruction*> out;
  for (const HloComputation* c : m.computations())
    for (const HloInstruction* i : c->MakeInstructionPostOrder())
      if (IsConvCall(*i)) out.push_back(i);
  return out;
}

// The rewritten module, expanded back to HLO, computes what the original does; returns the
// number of cuDNN calls.
size_t CheckValues(std::string_view text, ConvRewriterOptions options = {}) {
  auto rewritten = Rewrite(text, options);
  if (!rewritten) return 0;
  for (const HloInstruction* c : Convs(*rewritten)) {
    auto cfg = GetConvConfig(*c);
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  }
  auto original = testing::ParseOrDie(text);
  auto expanded = testing::ParseOrDie(rewritten->ToString());
  if (!original || !expanded) return 0;
  Status s = ExpandLibraryCalls(*expanded);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::string diff = testing::CompareModules(*original, *expanded, testing::RandomArguments(*original, 1),
                                             testing::Match::kClose);
  EXPECT_EQ(diff, "") << rewritten->ToString();
  return Convs(*rewritten).size();
}

TEST(ConvRewriterTest, NhwcForwardNeedsOnlyAFilterTranspose) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  ROOT c = f32[2,8,8,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  auto cfg = GetConvConfig(*c[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->channels_last);
  EXPECT_EQ(c[0]->operand(0)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(c[0]->operand(1)->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(m->entry_computation()->root_instruction(), c[0]);
  EXPECT_EQ(CheckValues(text), 1u);
}

TEST(ConvRewriterTest, BiasReluAndResidualFuse) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  w = f32[3,3,4,4] parameter(1)
  b = f32[4] parameter(2)
  c = f32[2,8,8,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  bb = f32[2,8,8,4] broadcast(b), dimensions={3}
  a = f32[2,8,8,4] add(c, bb)
  r = f32[2,8,8,4] add(a, x)
  z = f32[] constant(0)
  zb = f32[2,8,8,4] broadcast(z), dimensions={}
  ROOT y = f32[2,8,8,4] maximum(r, zb)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  auto cfg = GetConvConfig(*c[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->has_bias);
  EXPECT_EQ(cfg->side_input_scale, 1.0);
  EXPECT_TRUE(cfg->relu);
  EXPECT_EQ(m->entry_computation()->root_instruction(), c[0]) << m->ToString();
  EXPECT_EQ(CheckValues(text), 1u);
}

TEST(ConvRewriterTest, PerFeatureScaleFoldsIntoTheFilter) {
  // The residual block's conv * s + b -> relu: one fused cuDNN call on a scaled filter.
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  w = f32[3,3,4,4] parameter(1)
  s = f32[4] parameter(2)
  b = f32[4] parameter(3)
  c = f32[2,8,8,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  sb = f32[2,8,8,4] broadcast(s), dimensions={3}
  m = f32[2,8,8,4] multiply(c, sb)
  bb = f32[2,8,8,4] broadcast(b), dimensions={3}
  a = f32[2,8,8,4] add(m, bb)
  z = f32[] constant(0)
  zb = f32[2,8,8,4] broadcast(z), dimensions={}
  ROOT y = f32[2,8,8,4] maximum(a, zb)
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  auto cfg = GetConvConfig(*c[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->has_bias && cfg->relu);
  EXPECT_EQ(c[0]->operand(1)->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(m->entry_computation()->root_instruction(), c[0]) << m->ToString();
  EXPECT_EQ(CheckValues(text), 1u);
}

TEST(ConvRewriterTest, NchwStaysChannelsFirst) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,4,9,9] parameter(0)
  w = f32[6,4,3,3] parameter(1)
  ROOT c = f32[2,6,4,4] convolution(x, w), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(GetConvConfig(*c[0])->channels_last);
  EXPECT_EQ(testing::EntryOps(*m), "parameter,parameter,custom-call");
  EXPECT_EQ(CheckValues(text), 1u);
}

TEST(ConvRewriterTest, IntegerConvolutionsStay) {
  const char* text = R"(HloModule m
ENTRY e {
  x = s32[1,5,5,2] parameter(0)
  w = s32[3,3,2,2] parameter(1)
  ROOT c = s32[1,3,3,2] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f
})";
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  EXPECT_TRUE(Convs(*m).empty());
}

// ---- The gradient forms (backward data / backward filter) ----

// Rewrites `text` (one convolution), checks the values against the original, and returns the
// kind of the single cuDNN call ("" when there is none or several).
std::string KindOf(std::string_view text, ConvRewriterOptions options = {}) {
  EXPECT_EQ(CheckValues(text, options), 1u);
  auto m = Rewrite(text, options);
  if (!m) return "";
  auto c = Convs(*m);
  if (c.size() != 1) return "";
  auto cfg = GetConvConfig(*c[0]);
  if (!cfg.ok()) return "";
  return std::string(ConvCallKindName(cfg->kind));
}

// Forward x[2,8,8,4] (NHWC), w[3,3,4,6] (HWIO), stride 2, SAME (pad 0_1): JAX's input gradient.
constexpr const char* kBackwardDataNhwcStride2Same = R"(HloModule m
ENTRY e {
  dy = f32[2,4,4,6] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  r = f32[3,3,4,6] reverse(w), dimensions={0,1}
  ROOT dx = f32[2,8,8,4] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f
})";

TEST(ConvRewriterTest, BackwardDataStride2Same) {
  EXPECT_EQ(KindOf(kBackwardDataNhwcStride2Same), "backward_data");
  auto m = Rewrite(kBackwardDataNhwcStride2Same);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  // No interior padding: dy goes in as it is; the filter loses its reverse.
  EXPECT_EQ(c[0]->operand(0)->opcode(), HloOpcode::kParameter);
  for (const HloComputation* comp : m->computations())
    for (const HloInstruction* i : comp->instructions()) {
      EXPECT_NE(i->opcode(), HloOpcode::kPad);
      EXPECT_NE(i->opcode(), HloOpcode::kReverse);
    }
  auto cfg = GetConvConfig(*c[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(cfg->output_spatial, (std::vector<int64_t>{4, 4}));
  // Off: the same form runs forward over interior-padded dy.
  ConvRewriterOptions off;
  off.backward_convolutions = false;
  EXPECT_EQ(KindOf(kBackwardDataNhwcStride2Same, off), "forward");
}

TEST(ConvRewriterTest, BackwardDataStride2ValidNchwNeedsNoSlice) {
  const char* text = R"(HloModule m
ENTRY e {
  dy = f32[2,6,4,4] parameter(0)
  w = f32[6,4,3,3] parameter(1)
  r = f32[6,4,3,3] reverse(w), dimensions={2,3}
  ROOT dx = f32[2,4,9,9] convolution(dy, r), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=bf01_io01->bf01
})";
  EXPECT_EQ(KindOf(text), "backward_data");
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(GetConvConfig(*c[0])->channels_last);
  EXPECT_EQ(testing::EntryOps(*m), "parameter,parameter,custom-call");
}

TEST(ConvRewriterTest, BackwardDataStride1DilatedReversed1D) {
  // Forward x[2,10,3] (NWC), w[3,3,5] (WIO), rhs_dilation 2, SAME (2_2): stride 1, so only the
  // reversed filter says it is a gradient.
  const char* text = R"(HloModule m
ENTRY e {
  dy = f32[2,10,5] parameter(0)
  w = f32[3,3,5] parameter(1)
  r = f32[3,3,5] reverse(w), dimensions={0}
  ROOT dx = f32[2,10,3] convolution(dy, r), window={size=3 pad=2_2 rhs_dilate=2}, dim_labels=b0f_0oi->b0f
})";
  EXPECT_EQ(KindOf(text), "backward_data");
}

TEST(ConvRewriterTest, BackwardDataWindowReversalAndUnreversedFilters) {
  // Window reversal instead of a reverse op; and an lhs-dilated convolution of a plain filter
  // (a reverse is added for the forward filter).
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[1,3,3,2] parameter(0)
  w = f32[2,2,3,2] parameter(1)
  ROOT dx = f32[1,6,6,3] convolution(dy, w), window={size=2x2 pad=1_1x1_1 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f
})"), "backward_data");
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[1,3,3,2] parameter(0)
  w = f32[3,3,3,2] parameter(1)
  ROOT dx = f32[1,7,7,3] convolution(dy, w), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f
})"), "backward_data");
}

TEST(ConvRewriterTest, BackwardDataFeatureGroups) {
  // Forward G=2: x[1,6,6,4], w[3,3,2,6]; the gradient's filter w'[3,3,4,3] ([.., C, K/G]).
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[1,3,3,6] parameter(0)
  w = f32[3,3,4,3] parameter(1)
  r = f32[3,3,4,3] reverse(w), dimensions={0,1}
  ROOT dx = f32[1,6,6,4] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, feature_group_count=2
})"), "backward_data");
  // NCHW too.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[2,6,3,3] parameter(0)
  w = f32[4,3,3,3] parameter(1)
  r = f32[4,3,3,3] reverse(w), dimensions={2,3}
  ROOT dx = f32[2,4,7,7] convolution(dy, r), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, feature_group_count=2
})"), "backward_data");
}

TEST(ConvRewriterTest, DepthwiseBackwardDataStaysForward) {
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[1,3,3,4] parameter(0)
  w = f32[3,3,4,1] parameter(1)
  r = f32[3,3,4,1] reverse(w), dimensions={0,1}
  ROOT dx = f32[1,6,6,4] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, feature_group_count=4
})"), "forward");
}

TEST(ConvRewriterTest, BackwardData3D) {
  // Forward x[1,5,5,5,2] (NDHWC), 2x2x2 window, stride 2, VALID.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  dy = f32[1,2,2,2,3] parameter(0)
  w = f32[2,2,2,2,3] parameter(1)
  r = f32[2,2,2,2,3] reverse(w), dimensions={0,1,2}
  ROOT dx = f32[1,5,5,5,2] convolution(dy, r), window={size=2x2x2 pad=1_2x1_2x1_2 lhs_dilate=2x2x2}, dim_labels=b012f_012oi->b012f
})"), "backward_data");
}

// Forward x[2,8,8,4] (NHWC), w[3,3,4,6], stride 2, SAME (0_1): JAX's filter gradient.
TEST(ConvRewriterTest, BackwardFilterStride2Same) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  dy = f32[2,4,4,6] parameter(1)
  ROOT dw = f32[3,3,4,6] convolution(x, dy), window={size=4x4 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf
})";
  EXPECT_EQ(KindOf(text), "backward_filter");
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  auto c = Convs(*m);
  ASSERT_EQ(c.size(), 1u);
  auto cfg = GetConvConfig(*c[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->channels_last);
  EXPECT_EQ(cfg->filter_spatial, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(cfg->strides, (std::vector<int64_t>{2, 2}));
  // x needs no transpose in NHWC (the forward way transposes it to put C outermost).
  EXPECT_EQ(c[0]->operand(1)->opcode(), HloOpcode::kParameter);
}

TEST(ConvRewriterTest, BackwardFilterValidSymmetricPadding) {
  // Stride 2, pad 1_1 where (1, 1) gives the forward size: no explicit pad.
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[2,7,7,3] parameter(0)
  dy = f32[2,4,4,5] parameter(1)
  ROOT dw = f32[3,3,3,5] convolution(x, dy), window={size=4x4 pad=1_1x1_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf
})";
  EXPECT_EQ(KindOf(text), "backward_filter");
  auto m = Rewrite(text);
  ASSERT_TRUE(m);
  for (const HloInstruction* i : m->entry_computation()->instructions()) EXPECT_NE(i->opcode(), HloOpcode::kPad);
}

TEST(ConvRewriterTest, BackwardFilterStride1NchwBigWindow) {
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[2,3,7,7] parameter(0)
  dy = f32[2,5,5,5] parameter(1)
  ROOT dw = f32[5,3,3,3] convolution(x, dy), window={size=5x5}, dim_labels=fb01_io01->fb01
})"), "backward_filter");
}

TEST(ConvRewriterTest, BackwardFilterDepthwiseBatchGroups) {
  // Depthwise forward (G = C = 4), SAME: batch_group_count 4, as JAX writes it.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[2,6,6,4] parameter(0)
  dy = f32[2,6,6,4] parameter(1)
  ROOT dw = f32[3,3,1,4] convolution(x, dy), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=4
})"), "backward_filter");
  // Two groups of two channels, eight outputs.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[2,6,6,4] parameter(0)
  dy = f32[2,3,3,8] parameter(1)
  ROOT dw = f32[3,3,2,8] convolution(x, dy), window={size=3x3 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, batch_group_count=2
})"), "backward_filter");
}

TEST(ConvRewriterTest, BackwardFilterDilatedFilter1D) {
  // Forward filter dilation 2 (the form's stride), VALID.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[1,9,3] parameter(0)
  dy = f32[1,5,2] parameter(1)
  ROOT dw = f32[3,3,2] convolution(x, dy), window={size=5 stride=2}, dim_labels=f0b_i0o->0bf
})"), "backward_filter");
}

TEST(ConvRewriterTest, BackwardFilter3DStride2) {
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[1,5,5,5,2] parameter(0)
  dy = f32[1,2,2,2,3] parameter(1)
  ROOT dw = f32[3,3,3,2,3] convolution(x, dy), window={size=2x2x2 rhs_dilate=2x2x2}, dim_labels=f012b_i012o->012bf
})"), "backward_filter");
}

TEST(ConvRewriterTest, SmallWindowsStayForward) {
  // A forward convolution whose filter is smaller than its output is not a filter gradient.
  EXPECT_EQ(KindOf(R"(HloModule m
ENTRY e {
  x = f32[2,8,8,4] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  ROOT c = f32[2,6,6,6] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f
})"), "forward");
}

// Every convolution case of tests/data: rewritten (where cuDNN can take it) and still computing
// the same values.
TEST(ConvRewriterTest, ConformanceCases) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) GTEST_SKIP() << "no KILN_SOURCE_DIR";
  namespace fs = std::filesystem;
  int cases = 0, rewritten = 0;
  for (const auto& e : fs::directory_iterator(fs::path(src) / "tests" / "data")) {
    std::string name = e.path().filename().string();
    if (!StartsWith(name, "conv_") && !StartsWith(name, "nn_")) continue;
    std::ifstream in(e.path() / "module.hlo");
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("convolution(") == std::string::npos) continue;
    SCOPED_TRACE(name);
    ++cases;
    rewritten += CheckValues(text.str()) > 0;
    // JAX's gradient cases map onto cuDNN's backward calls (depthwise input gradients and
    // stride-1 input gradients of unreversed filters stay forward).
    const std::map<std::string, std::string> want = {
        {"conv_grad_input_1d_f32", "backward_data"},       {"conv_grad_input_strided_f32", "backward_data"},
        {"conv_grad_input_grouped_f32", "backward_data"},  {"conv_grad_input_depthwise_f32", "forward"},
        {"conv_grad_kernel_1d_f32", "backward_filter"},    {"conv_grad_kernel_depthwise_f32", "backward_filter"},
        {"conv_grad_kernel_dilated_f32", "backward_filter"}, {"conv_grad_kernel_grouped_f32", "backward_filter"},
        {"conv_grad_kernel_same_nhwc_f32", "backward_filter"}, {"conv_grad_kernel_strided_f32", "backward_filter"},
        {"conv_grad_input_same_nhwc_f32", "backward_data"}, {"conv_grad_input_dilated_f32", "backward_data"},
        {"conv_transpose_2d_f32", "backward_data"}};
    if (auto it = want.find(name); it != want.end()) {
      auto m = Rewrite(text.str());
      ASSERT_TRUE(m);
      std::string kinds;
      for (const HloInstruction* c : Convs(*m)) {
        auto cfg = GetConvConfig(*c);
        ASSERT_TRUE(cfg.ok());
        kinds += std::string(kinds.empty() ? "" : ",") + std::string(ConvCallKindName(cfg->kind));
      }
      EXPECT_EQ(kinds, it->second);
    }
  }
  std::cout << cases << " cases, " << rewritten << " rewritten\n";
  EXPECT_GT(cases, 30);
  EXPECT_GT(rewritten, cases / 2);
}

}  // namespace
}  // namespace kiln::cuda
