// Layout normalization: text in, checks on the printed module out, values checked by the
// evaluator before and after.
#include "kiln/passes/layout_normalization.h"

#include <gtest/gtest.h>

#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/printer.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/verifier.h"

namespace kiln {
namespace {

// Runs the pass; checks the module verifies, has no non-default layout left, and evaluates
// bitwise as before. Returns the printed result (no metadata).
std::string Normalize(const std::string& hlo, bool expect_changed = true) {
  auto module = ParseHloModule(hlo);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return "";
  std::vector<Shape> shapes;
  for (const HloInstruction* p : (*module)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, 3);
  auto before = EvaluateModule(**module, args);
  EXPECT_TRUE(before.ok()) << before.status().ToString();
  LayoutNormalization pass;
  auto changed = pass.Run(**module);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  if (changed.ok()) {
    EXPECT_EQ(*changed, expect_changed);
  }
  EXPECT_TRUE(VerifyModule(**module).ok()) << VerifyModule(**module).ToString();
  for (const HloComputation* c : (*module)->computations()) {
    for (const HloInstruction* i : c->instructions()) {
      if (!i->shape().IsArray()) continue;
      EXPECT_TRUE(i->shape().has_layout() && i->shape().layout().IsDefaultFor(i->shape().rank()))
          << i->ToString();
    }
  }
  auto after = EvaluateModule(**module, args);
  EXPECT_TRUE(after.ok()) << after.status().ToString();
  if (before.ok() && after.ok()) {
    EXPECT_TRUE(after->BitwiseEquals(*before)) << PrintModule(**module);
  }
  PrintOptions po;
  po.print_metadata = false;
  return PrintModule(**module, po);
}

TEST(LayoutNormalizationTest, TransposingBitcastBecomesTranspose) {
  std::string out = Normalize(R"(
HloModule m
ENTRY e {
  a = f32[2,3]{0,1} parameter(0)
  ROOT b = f32[3,2]{1,0} bitcast(a)
})");
  EXPECT_NE(out.find("transpose("), std::string::npos) << out;
  EXPECT_EQ(out.find("bitcast("), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, DefaultLayoutBitcastBecomesReshape) {
  std::string out = Normalize(R"(
HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT b = f32[6]{0} bitcast(a)
})",
                              /*expect_changed=*/true);
  EXPECT_NE(out.find("f32[6]{0} reshape("), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, BitcastBetweenTwoNonDefaultLayouts) {
  // Physical order of a: dims (2,0,1); of the result: (1,0).
  std::string out = Normalize(R"(
HloModule m
ENTRY e {
  a = f32[2,3,4]{1,0,2} parameter(0)
  ROOT b = f32[6,4]{0,1} bitcast(a)
})");
  EXPECT_EQ(out.find("bitcast("), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, SameWidthTypeChangeBecomesBitcastConvert) {
  std::string out = Normalize(R"(
HloModule m
ENTRY e {
  a = f32[4,2]{0,1} parameter(0)
  ROOT b = s32[4,2]{1,0} bitcast(a)
})");
  EXPECT_NE(out.find("bitcast-convert("), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, SubByteBitcastAcrossWidthsBecomesBitcastConvert) {
  // XLA's constant folding test: s4[16]{0:E(4)} -> s8[8] (was a reshape s4[16] -> s4[8]: s4
  // and s8 have the same byte width in a Literal, not the same bit width).
  std::string out = Normalize(R"(
HloModule m
ENTRY e {
  c4 = s4[16]{0:E(4)} constant({0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1})
  ROOT b = s8[8]{0} bitcast(c4)
})");
  EXPECT_NE(out.find("s4[8,2]{1,0} reshape("), std::string::npos) << out;
  EXPECT_NE(out.find("s8[8]{0} bitcast-convert("), std::string::npos) << out;
  EXPECT_EQ(out.find(" bitcast("), std::string::npos) << out;
  // The other way, to a 2-d result.
  out = Normalize(R"(
HloModule m
ENTRY e {
  a = s8[2,4]{1,0} parameter(0)
  ROOT b = u4[2,8]{1,0:E(4)} bitcast(a)
})");
  EXPECT_NE(out.find("u4[8,2]{1,0} bitcast-convert("), std::string::npos) << out;
  EXPECT_NE(out.find("u4[2,8]{1,0} reshape("), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, BitcastInsideFusionAndEntryLayoutsAreNormalized) {
  const char* hlo = R"(
HloModule m, entry_computation_layout={(f32[4,8]{0,1})->f32[8,4]{1,0}}
fused {
  p = f32[4,8]{0,1} parameter(0)
  ROOT b = f32[8,4]{1,0} bitcast(p)
}
ENTRY e {
  a = f32[4,8]{0,1} parameter(0)
  ROOT f = f32[8,4]{1,0} fusion(a), kind=kLoop, calls=fused
})";
  auto module = ParseHloModule(hlo);
  ASSERT_TRUE(module.ok());
  EntryLayouts layouts = GetEntryLayouts(**module);
  ASSERT_EQ(layouts.parameters.size(), 1u);
  EXPECT_EQ(layouts.parameters[0][0].minor_to_major(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(layouts.result[0].minor_to_major(), (std::vector<int64_t>{1, 0}));
  std::string out = Normalize(hlo);
  EXPECT_NE(out.find("entry_computation_layout={(f32[4,8]{1,0})->f32[8,4]{1,0}}"), std::string::npos) << out;
}

TEST(LayoutNormalizationTest, DefaultModuleIsUnchanged) {
  Normalize(R"(
HloModule m
ENTRY e {
  a = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(a)
})",
            /*expect_changed=*/false);
}

TEST(LayoutNormalizationTest, MajorToMinor) {
  EXPECT_EQ(MajorToMinor(Layout({0, 1}), 2), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(MajorToMinor(Layout({1, 0, 2}), 3), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(MajorToMinor(Layout(std::vector<int64_t>{}), 2), (std::vector<int64_t>{0, 1}));  // invalid: default
  EXPECT_TRUE(IsDefaultOrder(Layout({2, 1, 0}), 3));
  EXPECT_FALSE(IsDefaultOrder(Layout({0, 1}), 2));
}

}  // namespace
}  // namespace kiln
