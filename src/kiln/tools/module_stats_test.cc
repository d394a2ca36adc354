#include "kiln/tools/module_stats.h"

#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(ModuleStatsTest, DotElementwiseTranscendentalReduce) {
  auto m = Parse(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,16] parameter(0)
  w = f32[16,4] parameter(1)
  d = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[8,4] tanh(d)
  m = f32[8,4] multiply(t, t)
  c = bf16[8,4] convert(m)
  z = f32[] constant(0)
  r = f32[8] reduce(m, z), dimensions={1}, to_apply=add
  ROOT out = (bf16[8,4], f32[8]) tuple(c, r)
}
)");
  ASSERT_NE(m, nullptr);
  ModuleStats s = ComputeModuleStats(*m);
  // dot 2*8*4*16 = 1024; multiply 32; reduce 32 applications of a 1-flop add.
  EXPECT_EQ(s.flops, 1024 + 32 + 32);
  EXPECT_EQ(s.transcendentals, 32);
  EXPECT_EQ(s.parameter_bytes, 8 * 16 * 4 + 16 * 4 * 4);
  EXPECT_EQ(s.output_bytes, 8 * 4 * 2 + 8 * 4);
  EXPECT_EQ(s.computations, 2);
  EXPECT_EQ(s.instructions, 12);
  ASSERT_FALSE(s.op_histogram.empty());
  EXPECT_EQ(s.op_histogram[0].first, "parameter");  // 4 of them
  EXPECT_EQ(s.op_histogram[0].second, 4);
}

TEST(ModuleStatsTest, ConvolutionFusionWhile) {
  auto m = Parse(R"(
HloModule m
fused {
  p0 = f32[1,8,8,4] parameter(0)
  p1 = f32[3,3,4,16] parameter(1)
  ROOT conv = f32[1,8,8,16] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
cond {
  c = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(c, ten), direction=LT
}
body {
  b = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT inc = s32[] add(b, one)
}
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,16] parameter(1)
  f = f32[1,8,8,16] fusion(x, k), kind=kOutput, calls=fused
  i = s32[] constant(0)
  w = s32[] while(i), condition=cond, body=body
  ROOT t = (f32[1,8,8,16], s32[]) tuple(f, w)
}
)");
  ASSERT_NE(m, nullptr);
  ModuleStats s = ComputeModuleStats(*m);
  // conv: 2 * (8*8*16 outputs) * (3*3*4 MACs each) = 73728; the loop body and condition once: 2.
  EXPECT_EQ(s.flops, 73728 + 2);
  EXPECT_EQ(s.while_loops, 1);
}

}  // namespace
}  // namespace kiln
