#include "kiln/cuda/compiler/conv_rewriter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
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
  }
  std::cout << cases << " cases, " << rewritten << " rewritten\n";
  EXPECT_GT(cases, 30);
  EXPECT_GT(rewritten, cases / 2);
}

}  // namespace
}  // namespace kiln::cuda
