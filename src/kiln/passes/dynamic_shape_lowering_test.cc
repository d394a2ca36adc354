#include "kiln/passes/dynamic_shape_lowering.h"

#include <gtest/gtest.h>

#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/printer.h"
#include "kiln/hlo/verifier.h"

namespace kiln {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> v) {
  Literal l(Shape(PrimitiveType::kS32, std::move(dims)));
  for (size_t i = 0; i < v.size(); ++i) l.SetFromInt64(static_cast<int64_t>(i), v[i]);
  return l;
}

std::string Leftovers(const HloModule& m) {
  std::string s;
  for (HloInstruction* i : m.entry_computation()->MakeInstructionPostOrder())
    if (i->opcode() == HloOpcode::kCustomCall || i->opcode() == HloOpcode::kGetDimensionSize ||
        i->opcode() == HloOpcode::kSetDimensionSize)
      s += i->name() + " ";
  return s;
}

// The lowered module computes what the evaluator computes on the original (its own rules).
void ExpectSameValues(std::string_view text, const std::vector<Literal>& args) {
  auto original = Parse(text);
  auto lowered = Parse(text);
  ASSERT_TRUE(original && lowered);
  DynamicShapeLowering pass;
  auto changed = pass.Run(*lowered);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(Leftovers(*lowered), "");
  EXPECT_TRUE(VerifyModule(*lowered).ok()) << VerifyModule(*lowered).ToString();
  auto want = EvaluateModule(*original, args);
  auto got = EvaluateModule(*lowered, args);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->BitwiseEquals(*want)) << PrintLiteralValue(*got) << " vs " << PrintLiteralValue(*want);
}

TEST(DynamicShapeLoweringTest, SliceToDynamicSetBoundPadToStatic) {
  const char* text = R"(HloModule m
ENTRY e {
  p = s32[2,3] parameter(0)
  n = s32[] parameter(1)
  three = s32[] constant(3)
  d = s32[<=2,<=3] custom-call(p, n, three), custom_call_target="SliceToDynamic"
  b = s32[<=2,<=3] custom-call(d), custom_call_target="SetBound"
  x = s32[<=2,<=3] add(b, b)
  g = s32[] get-dimension-size(x), dimensions={0}
  pad = (s32[2,3], s32[], s32[]) custom-call(x), custom_call_target="PadToStatic"
  ROOT t = ((s32[2,3], s32[], s32[]), s32[]) tuple(pad, g)
})";
  for (int32_t n : {0, 1, 2, 5, -3}) ExpectSameValues(text, {S32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({}, {n})});
}

TEST(DynamicShapeLoweringTest, SetDimensionSizeAndStaticDimensions) {
  const char* text = R"(HloModule m
ENTRY e {
  p = s32[4,2] parameter(0)
  n = s8[] constant(3)
  s = s32[<=4,2] set-dimension-size(p, n), dimensions={0}
  g0 = s32[] get-dimension-size(s), dimensions={0}
  g1 = s32[] get-dimension-size(s), dimensions={1}
  pad = (s32[4,2], s32[], s32[]) custom-call(s), custom_call_target="PadToStatic"
  ROOT t = ((s32[4,2], s32[], s32[]), s32[], s32[]) tuple(pad, g0, g1)
})";
  ExpectSameValues(text, {S32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
}

TEST(DynamicShapeLoweringTest, UnknownSizeIsUnimplemented) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  n = s32[] constant(2)
  d = s32[<=4] custom-call(p, n), custom_call_target="SliceToDynamic"
  v = s32[<=4] reverse(d), dimensions={0}
  ROOT g = s32[] get-dimension-size(v), dimensions={0}
})");
  ASSERT_TRUE(m);
  DynamicShapeLowering pass;
  auto r = pass.Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("the dynamic size of %v (reverse at line 6"), std::string::npos)
      << r.status().message();
}

TEST(DynamicShapeLoweringTest, StaticDynamicConvolutionForwardBecomesAConvolution) {
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[1,5,2] parameter(0)
  w = f32[3,2,2] parameter(1)
  ROOT d = f32[1,5,2] custom-call(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f, custom_call_target="DynamicConvolutionForward"
})";
  Literal x(Shape(PrimitiveType::kF32, {1, 5, 2}));
  Literal w(Shape(PrimitiveType::kF32, {3, 2, 2}));
  for (int64_t i = 0; i < x.element_count(); ++i) x.SetFromDouble(i, static_cast<double>(i % 7) - 3);
  for (int64_t i = 0; i < w.element_count(); ++i) w.SetFromDouble(i, static_cast<double>(i % 5) - 2);
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(w));
  ExpectSameValues(text, args);
  auto m = Parse(text);
  ASSERT_TRUE(m);
  ASSERT_TRUE(DynamicShapeLowering().Run(*m).ok());
  EXPECT_EQ(m->entry_computation()->root_instruction()->opcode(), HloOpcode::kConvolution);
}

TEST(DynamicShapeLoweringTest, NothingToDo) {
  auto m = Parse("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n");
  ASSERT_TRUE(m);
  DynamicShapeLowering pass;
  auto r = pass.Run(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

}  // namespace
}  // namespace kiln
