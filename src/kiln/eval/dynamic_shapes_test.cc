// Bounded dynamic arrays: SliceToDynamic, PadToStatic, SetBound, get/set-dimension-size
// (Note [Dynamic sizes] in dynamic_shapes.h).
#include <gtest/gtest.h>

#include "kiln/eval/eval_test_util.h"

namespace kiln {
namespace {

using testing::Doubles;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> v) {
  Literal l(Shape(PrimitiveType::kS32, std::move(dims)));
  for (size_t i = 0; i < v.size(); ++i) l.SetFromInt64(static_cast<int64_t>(i), v[i]);
  return l;
}

constexpr const char* kSliceAddPad = R"(HloModule m
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

TEST(DynamicShapesTest, SliceToDynamicThenPadToStatic) {
  Literal out = MustRun(kSliceAddPad, {S32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({}, {1})});
  ASSERT_TRUE(out.shape().IsTuple());
  const Literal& pad = out.tuple_element(0);
  // Inside the sizes (1, 3) the values, zeros outside.
  EXPECT_EQ(Ints(pad.tuple_element(0)), (std::vector<int64_t>{2, 4, 6, 0, 0, 0}));
  EXPECT_EQ(Ints(pad.tuple_element(1)), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(pad.tuple_element(2)), (std::vector<int64_t>{3}));
  EXPECT_EQ(Ints(out.tuple_element(1)), (std::vector<int64_t>{1}));
  // A size past the bound is the bound; a negative one is 0.
  Literal big = MustRun(kSliceAddPad, {S32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({}, {7})});
  EXPECT_EQ(Ints(big.tuple_element(0).tuple_element(0)), (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(Ints(big.tuple_element(1)), (std::vector<int64_t>{2}));
  Literal neg = MustRun(kSliceAddPad, {S32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({}, {-1})});
  EXPECT_EQ(Ints(neg.tuple_element(0).tuple_element(0)), (std::vector<int64_t>{0, 0, 0, 0, 0, 0}));
}

TEST(DynamicShapesTest, SetDimensionSizeIsReadBack) {
  Literal out = MustRun(R"(HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  n = s32[] constant(3)
  s = s32[<=4] set-dimension-size(p, n), dimensions={0}
  ROOT g = s32[] get-dimension-size(s), dimensions={0}
})", {S32({4}, {1, 2, 3, 4})});
  EXPECT_EQ(Ints(out), (std::vector<int64_t>{3}));
  // An entry parameter's dynamic dimension is at its bound (callers pass arrays at the bound).
  Shape dyn(PrimitiveType::kS32, {4});
  dyn.set_dynamic_dimension(0, true);
  Literal p(dyn);
  EXPECT_EQ(Ints(MustRun(R"(HloModule m
ENTRY e {
  p = s32[<=4] parameter(0)
  ROOT g = s32[] get-dimension-size(p), dimensions={0}
})", {std::move(p)})), (std::vector<int64_t>{4}));
}

TEST(DynamicShapesTest, UnknownSizesAreRefusedNotGuessed) {
  // reverse's result size is not followed: reading it says so, naming the instruction.
  StatusOr<Literal> r = RunHlo(R"(HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  n = s32[] constant(2)
  d = s32[<=4] custom-call(p, n), custom_call_target="SliceToDynamic"
  v = s32[<=4] reverse(d), dimensions={0}
  ROOT pad = (s32[4], s32[]) custom-call(v), custom_call_target="PadToStatic"
})", {S32({4}, {1, 2, 3, 4})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("unsupported: reverse at line 6 (%v): the dynamic size"), std::string::npos)
      << r.status().message();
}

TEST(DynamicShapesTest, StaticDynamicConvolutionForwardIsTheConvolution) {
  // XLA's dynamic padder writes DynamicConvolutionForward; with static shapes it computes the
  // convolution its window and dim_labels describe.
  Literal x(Shape(PrimitiveType::kF32, {1, 5, 2}));
  Literal w(Shape(PrimitiveType::kF32, {3, 2, 2}));
  for (int64_t i = 0; i < x.element_count(); ++i) x.SetFromDouble(i, 0.25 * static_cast<double>(i) - 1);
  for (int64_t i = 0; i < w.element_count(); ++i) w.SetFromDouble(i, 0.5 - 0.125 * static_cast<double>(i));
  std::vector<Literal> args;
  args.push_back(std::move(x));
  args.push_back(std::move(w));
  Literal out = MustRun(R"(HloModule m
ENTRY e {
  x = f32[1,5,2] parameter(0)
  w = f32[3,2,2] parameter(1)
  c = f32[1,5,2] convolution(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
  d = f32[1,5,2] custom-call(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f, custom_call_target="DynamicConvolutionForward"
  ROOT t = (f32[1,5,2], f32[1,5,2]) tuple(c, d)
})",
                        args);
  EXPECT_EQ(Doubles(out.tuple_element(1)), Doubles(out.tuple_element(0)));
  // Dynamic shapes are a clear refusal (their padding depends on the runtime sizes).
  auto dyn = RunHlo(R"(HloModule m
ENTRY e {
  x = f32[1,5,2] parameter(0)
  w = f32[3,2,2] parameter(1)
  one = s32[] constant(1)
  four = s32[] constant(4)
  two = s32[] constant(2)
  xd = f32[1,<=5,2] custom-call(x, one, four, two), custom_call_target="SliceToDynamic"
  ROOT d = f32[1,<=5,2] custom-call(xd, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f, custom_call_target="DynamicConvolutionForward"
})",
                    args);
  ASSERT_FALSE(dyn.ok());
  EXPECT_NE(dyn.status().message().find("DynamicConvolutionForward with dynamic shapes"), std::string::npos)
      << dyn.status().message();
}

TEST(DynamicShapesTest, PartialReduceIsAClearRefusal) {
  StatusOr<Literal> r = RunHlo(R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT g = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[16] parameter(0)
  i = s32[16] iota(), iota_dimension=0
  z = f32[] constant(-inf)
  zi = s32[] constant(-1)
  ROOT r = (f32[4], s32[4]) custom-call(x, i, z, zi), custom_call_target="PartialReduce", to_apply=cmp
})", {Literal(Shape(PrimitiveType::kF32, {16}))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("unsupported: custom-call \"PartialReduce\""), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("TPU"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kiln
