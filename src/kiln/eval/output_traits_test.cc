#include "kiln/eval/output_traits.h"

#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

std::vector<OutputTraits> Analyze(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? AnalyzeOutputs(**m) : std::vector<OutputTraits>{};
}

TEST(OutputTraitsTest, ConvertsAndDataMovementOfInputsAreExact) {
  auto t = Analyze(R"(
HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  c = bf16[4] convert(p)
  b = u32[4] bitcast-convert(p)
  f = f32[4] bitcast-convert(b)
  r = bf16[2,2] reshape(c)
  cp = bf16[2,2] copy(r)
  s = f32[4] add(p, p)
  cs = bf16[4] convert(s)
  k = f32[4] constant({1, 2, 3, 4})
  ck = f8e4m3fn[4] convert(k)
  t = (bf16[2,2], f32[4]) tuple(cp, f)
  g0 = bf16[2,2] get-tuple-element(t), index=0
  cmp = pred[4] compare(s, p), direction=GT
  ROOT out = (bf16[2,2], (bf16[2,2], f32[4]), f32[4], bf16[4], f8e4m3fn[4], u32[4], pred[4]) tuple(g0, t, s, cs, ck, b, cmp)
})");
  ASSERT_EQ(t.size(), 8u);
  EXPECT_TRUE(t[0].exact);   // convert -> reshape -> copy -> tuple -> gte
  EXPECT_TRUE(t[1].exact);
  EXPECT_TRUE(t[2].exact);   // bitcast-convert there and back
  EXPECT_FALSE(t[3].exact);  // arithmetic
  EXPECT_FALSE(t[4].exact);  // a convert of a sum may round either way
  EXPECT_TRUE(t[5].exact);   // a convert of a constant
  EXPECT_TRUE(t[6].exact);   // integers
  EXPECT_TRUE(t[7].exact);   // pred
  for (const OutputTraits& o : t) EXPECT_FALSE(o.uses_f32_products);
}

TEST(OutputTraitsTest, CallsAndFusionsAreLookedInto) {
  auto t = Analyze(R"(
HloModule m
fused {
  a = f32[4] parameter(0)
  ROOT c = bf16[4] convert(a)
}
called {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  n = f32[4] negate(y)
  ROOT t = (f32[4], f32[4]) tuple(x, n)
}
ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  f = bf16[4] fusion(p), kind=kLoop, calls=fused
  c = (f32[4], f32[4]) call(p, q), to_apply=called
  c0 = f32[4] get-tuple-element(c), index=0
  c1 = f32[4] get-tuple-element(c), index=1
  ROOT out = (bf16[4], f32[4], f32[4]) tuple(f, c0, c1)
})");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(t[0].exact);
  EXPECT_TRUE(t[1].exact);
  EXPECT_FALSE(t[2].exact);
}

TEST(OutputTraitsTest, OnlyOutputsOfF32ProductsUseThem) {
  auto t = Analyze(R"(
HloModule m
body {
  s = (f32[2,2], s32[]) parameter(0)
  x = f32[2,2] get-tuple-element(s), index=0
  i = s32[] get-tuple-element(s), index=1
  d = f32[2,2] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT r = (f32[2,2], s32[]) tuple(d, j)
}
cond {
  s = (f32[2,2], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=1
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  a = f32[2,2] parameter(0)
  b = bf16[2,2] parameter(1)
  d = f32[2,2] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[2,2] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  bd = bf16[2,2] dot(b, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[2,2] exponential(d)
  s = f32[2,2] add(a, a)
  zero = s32[] constant(0)
  init = (f32[2,2], s32[]) tuple(a, zero)
  w = (f32[2,2], s32[]) while(init), condition=cond, body=body
  w0 = f32[2,2] get-tuple-element(w), index=0
  ROOT out = (f32[2,2], f32[2,2], bf16[2,2], f32[2,2], f32[2,2], f32[2,2]) tuple(d, h, bd, e, s, w0)
})");
  ASSERT_EQ(t.size(), 6u);
  EXPECT_TRUE(t[0].uses_f32_products);
  EXPECT_FALSE(t[1].uses_f32_products);  // HIGHEST precision
  EXPECT_FALSE(t[2].uses_f32_products);  // bf16 operands
  EXPECT_TRUE(t[3].uses_f32_products);   // downstream of the dot
  EXPECT_FALSE(t[4].uses_f32_products);
  EXPECT_TRUE(t[5].uses_f32_products);   // a loop whose body has one
  for (const OutputTraits& o : t) EXPECT_FALSE(o.exact);
}

}  // namespace
}  // namespace kiln
