// reduce, reduce-window, select-and-scatter, and the scalar-program fast path they use.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "kiln/eval/eval_test_util.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

using testing::Doubles;
using testing::ExpectSameDoubles;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reducer computations shared by the tests.
constexpr const char* kReducers = R"(
HloModule m

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
add_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] add(a, b)
}
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
max_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] maximum(a, b)
}
mul_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] multiply(a, b)
}
sub_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] subtract(a, b)
}
sub_s32_general {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  t = (s32[], s32[]) tuple(a, b)
  x = s32[] get-tuple-element(t), index=0
  y = s32[] get-tuple-element(t), index=1
  ROOT r = s32[] subtract(x, y)
}
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
max_f32_swapped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(b, a)
}
ge_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}
gt_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT
}
)";

Literal RunWith(std::string_view entry, const std::vector<Literal>& args = {}) {
  return MustRun(std::string(kReducers) + "\nENTRY e {\n" + std::string(entry) + "\n}\n", args);
}

TEST(ReduceTest, Basic) {
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = f32[] constant(0)
  ROOT r = f32[2] reduce(a, z), dimensions={1}, to_apply=add_f32)")), {6, 15});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(a, z), dimensions={0}, to_apply=add_f32)")), {5, 7, 9});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = f32[] constant(10)
  ROOT r = f32[] reduce(a, z), dimensions={0,1}, to_apply=add_f32)")), {31});
  // No reduced dimensions: f(init, x) per element.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({1, 2, 3})
  z = f32[] constant(10)
  ROOT r = f32[3] reduce(a, z), dimensions={}, to_apply=add_f32)")), {11, 12, 13});
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[2,2,2] constant({{{1, -2}, {3, 4}}, {{-5, 6}, {7, -8}}})
  z = s32[] constant(-2147483648)
  ROOT r = s32[2] reduce(a, z), dimensions={0,2}, to_apply=max_s32)")), (std::vector<int64_t>{6, 7}));
  // An empty reduced dimension gives the init value.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2,0] constant({{}, {}})
  z = f32[] constant(-1)
  ROOT r = f32[2] reduce(a, z), dimensions={1}, to_apply=max_f32)")), {-1, -1});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({1, nan, 3})
  z = f32[] constant(-inf)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=max_f32)")), {kNaN});
}

TEST(ReduceTest, AccumulationOrderIsRowMajorFromInit) {
  // A non-commutative reducer shows the order: ((((init - a0) - a1) - a2) ...).
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = s32[] constant(100)
  ROOT r = s32[] reduce(a, z), dimensions={0,1}, to_apply=sub_s32)")), (std::vector<int64_t>{79}));
  // Over dims {0} of [3,2]: column j folds a[0][j], a[1][j], a[2][j].
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[3,2] constant({{1, 10}, {2, 20}, {3, 30}})
  z = s32[] constant(0)
  ROOT r = s32[2] reduce(a, z), dimensions={0}, to_apply=sub_s32)")), (std::vector<int64_t>{-6, -60}));
  // The same through the general (non-compiled) path.
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = s32[] constant(100)
  ROOT r = s32[] reduce(a, z), dimensions={0,1}, to_apply=sub_s32_general)")), (std::vector<int64_t>{79}));
}

TEST(ReduceTest, ReducerOperandOrderMatters) {
  // maximum returns its lhs on ties: max(acc, x) keeps -0 from the first element, max(x, acc)
  // takes the later +0.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({-0, 0})
  z = f32[] constant(-inf)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=max_f32)")), {-0.0});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({-0, 0})
  z = f32[] constant(-inf)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=max_f32_swapped)")), {0.0});
}

TEST(ReduceTest, FloatAddSumsInDoubleLikeXla) {
  // bf16: sequential bf16 adds would stay at 1 (each 1 + 2^-8 ties to 1); XLA's evaluator sums in
  // double and rounds once: 1 + 4 * 2^-8 = 1.015625.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = bf16[5] constant({1, 0.00390625, 0.00390625, 0.00390625, 0.00390625})
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(a, z), dimensions={0}, to_apply=add_bf16)")), {1.015625});
  // f32: 2^24 + 1 + 1 is 2^24 + 2 in double, 2^24 in sequential f32.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({16777216, 1, 1})
  z = f32[] constant(0)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add_f32)")), {16777218});
  // Other reducers round per step: bf16 products.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = bf16[3] constant({1.0078125, 1.0078125, 1.0078125})
  z = bf16[] constant(1)
  ROOT r = bf16[] reduce(a, z), dimensions={0}, to_apply=mul_bf16)")), {1.0234375});
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[3] constant({2147483647, 1, 1})
  z = s32[] constant(0)
  ROOT r = s32[] reduce(a, z), dimensions={0}, to_apply=add_s32)")), (std::vector<int64_t>{INT32_MIN + 1}));
}

TEST(ReduceTest, VariadicArgmax) {
  Literal r = RunWith(R"(
  v = f32[2,4] constant({{3, 7, 7, 1}, {-1, -5, -1, -2}})
  i = s32[2,4] iota(), iota_dimension=1
  zv = f32[] constant(-inf)
  zi = s32[] constant(0)
  ROOT r = (f32[2], s32[2]) reduce(v, i, zv, zi), dimensions={1}, to_apply=argmax)");
  ASSERT_TRUE(r.shape().IsTuple());
  ExpectSameDoubles(Doubles(r.tuple_element(0)), {7, -1});
  EXPECT_EQ(Ints(r.tuple_element(1)), (std::vector<int64_t>{1, 0}));
}

TEST(ReduceWindowTest, Basics) {
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[4] constant({1, 2, 3, 4})
  z = f32[] constant(0)
  ROOT r = f32[3] reduce-window(a, z), window={size=2}, to_apply=add_f32)")), {3, 5, 7});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[5] constant({1, 2, 3, 4, 5})
  z = f32[] constant(0)
  ROOT r = f32[2] reduce-window(a, z), window={size=2 stride=2}, to_apply=add_f32)")), {3, 7});
  // Padding positions are skipped, not combined with the init value: 10 + 1, 10 + 1 + 2.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({1, 2})
  z = f32[] constant(10)
  ROOT r = f32[2] reduce-window(a, z), window={size=2 pad=1_0}, to_apply=add_f32)")), {11, 13});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({1, 5, 3})
  z = f32[] constant(-inf)
  ROOT r = f32[3] reduce-window(a, z), window={size=3 pad=1_1}, to_apply=max_f32)")), {5, 5, 5});
  // Base dilation: [1, _, 2, _, 3], window 2 -> {1, 2, 2, 3}.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({1, 2, 3})
  z = f32[] constant(0)
  ROOT r = f32[4] reduce-window(a, z), window={size=2 lhs_dilate=2}, to_apply=add_f32)")), {1, 2, 2, 3});
  // Window dilation: x[i] + x[i+2].
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[5] constant({1, 2, 3, 4, 5})
  z = f32[] constant(0)
  ROOT r = f32[3] reduce-window(a, z), window={size=2 rhs_dilate=2}, to_apply=add_f32)")), {4, 6, 8});
  // 2D, window 2x2 stride 1x2.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3,4] constant({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}})
  z = f32[] constant(0)
  ROOT r = f32[2,2] reduce-window(a, z), window={size=2x2 stride=1x2}, to_apply=add_f32)")),
                    {14, 22, 30, 38});
  // Non-commutative: init - x0 - x1.
  EXPECT_EQ(Ints(RunWith(R"(
  a = s32[3] constant({1, 2, 4})
  z = s32[] constant(0)
  ROOT r = s32[2] reduce-window(a, z), window={size=2}, to_apply=sub_s32)")), (std::vector<int64_t>{-3, -6}));
}

TEST(ReduceWindowTest, Variadic) {
  Literal r = RunWith(R"(
  v = f32[4] constant({3, 9, 9, 1})
  i = s32[4] iota(), iota_dimension=0
  zv = f32[] constant(-inf)
  zi = s32[] constant(0)
  ROOT r = (f32[3], s32[3]) reduce-window(v, i, zv, zi), window={size=2}, to_apply=argmax)");
  ExpectSameDoubles(Doubles(r.tuple_element(0)), {9, 9, 9});
  EXPECT_EQ(Ints(r.tuple_element(1)), (std::vector<int64_t>{1, 1, 2}));
}

TEST(SelectAndScatterTest, XlaDocExample) {
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[4,6] constant({{7, 2, 5, 3, 10, 2}, {3, 8, 9, 3, 4, 2}, {1, 5, 7, 5, 6, 3}, {0, 6, 2, 7, 2, 8}})
  s = f32[2,2] constant({{2, 6}, {3, 1}})
  z = f32[] constant(0)
  ROOT r = f32[4,6] select-and-scatter(a, s, z), window={size=2x3 stride=2x3}, select=ge_f32, scatter=add_f32)")),
                    {0, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1});
}

TEST(SelectAndScatterTest, TiesOverlapAndPadding) {
  // GE keeps the first of equal elements; GT moves to the later one.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({1, 1})
  s = f32[1] constant({5})
  z = f32[] constant(0)
  ROOT r = f32[2] select-and-scatter(a, s, z), window={size=2}, select=ge_f32, scatter=add_f32)")), {5, 0});
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({1, 1})
  s = f32[1] constant({5})
  z = f32[] constant(0)
  ROOT r = f32[2] select-and-scatter(a, s, z), window={size=2}, select=gt_f32, scatter=add_f32)")), {0, 5});
  // Overlapping windows accumulate; init is the starting value.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[3] constant({1, 3, 2})
  s = f32[2] constant({10, 20})
  z = f32[] constant(0.5)
  ROOT r = f32[3] select-and-scatter(a, s, z), window={size=2}, select=ge_f32, scatter=add_f32)")),
                    {0.5, 30.5, 0.5});
  // Padding positions are never selected.
  ExpectSameDoubles(Doubles(RunWith(R"(
  a = f32[2] constant({-5, -7})
  s = f32[2] constant({1, 2})
  z = f32[] constant(0)
  ROOT r = f32[2] select-and-scatter(a, s, z), window={size=2 pad=0_1}, select=ge_f32, scatter=add_f32)")),
                    {1, 2});
}

TEST(ReduceTest, MalformedInstructionsAreErrors) {
  const char* bad[] = {
      // reduced dimension out of range
      "  a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[2] reduce(a, z), dimensions={2}, to_apply=add_f32",
      // result dimensions do not match
      "  a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[3] reduce(a, z), dimensions={1}, to_apply=add_f32",
      // init value of another type
      "  a = f32[2] constant({1, 2})\n  z = s32[] constant(0)\n"
      "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add_f32",
      // window rank differs
      "  a = f32[4] constant({1, 2, 3, 4})\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[3] reduce-window(a, z), window={size=2x1}, to_apply=add_f32",
      // source does not match the windows
      "  a = f32[4] constant({1, 2, 3, 4})\n  s = f32[4] constant({1, 2, 3, 4})\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[4] select-and-scatter(a, s, z), window={size=2 stride=2}, select=ge_f32, scatter=add_f32",
  };
  for (const char* body : bad)
    EXPECT_FALSE(RunHlo(std::string(kReducers) + "\nENTRY e {\n" + body + "\n}\n").ok()) << body;
}

TEST(ScalarProgramTest, CompilesSimpleComputations) {
  auto module = ParseHloModule(std::string(kReducers) + "\nENTRY e {\n ROOT c = f32[] constant(0)\n}\n");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const HloModule& m = **module;
  auto add = ScalarProgram::Compile(*m.GetComputationWithName("add_f32"));
  ASSERT_NE(add, nullptr);
  EXPECT_NE(add->single_op(), nullptr);
  EXPECT_TRUE(add->is_float_add());
  auto argmax = ScalarProgram::Compile(*m.GetComputationWithName("argmax"));
  ASSERT_NE(argmax, nullptr);
  EXPECT_EQ(argmax->num_results(), 2);
  EXPECT_EQ(argmax->single_op(), nullptr);
  EXPECT_EQ(ScalarProgram::Compile(*m.GetComputationWithName("sub_s32_general")), nullptr);
  auto sub = ScalarProgram::Compile(*m.GetComputationWithName("sub_s32"));
  ASSERT_NE(sub, nullptr);
  EXPECT_FALSE(sub->is_float_add());

  // EvaluateScalar agrees with the general evaluator, on a tuple-returning program too.
  Evaluator e;
  Literal v0 = Literal::CreateR0<float>(PrimitiveType::kF32, 2);
  Literal i0 = Literal::CreateR0<int32_t>(PrimitiveType::kS32, 4);
  Literal v1 = Literal::CreateR0<float>(PrimitiveType::kF32, 2);
  Literal i1 = Literal::CreateR0<int32_t>(PrimitiveType::kS32, 1);
  const Literal* args[4] = {&v0, &i0, &v1, &i1};
  const HloComputation& am = *m.GetComputationWithName("argmax");
  auto fast = e.EvaluateScalar(am, args);
  auto slow = e.Evaluate(am, args);
  ASSERT_TRUE(fast.ok() && slow.ok());
  EXPECT_TRUE(fast->BitwiseEquals(*slow));
  EXPECT_EQ(fast->tuple_element(1).GetAsInt64(0), 1);
}

TEST(ReducePerformance, LargeReductionsAreNative) {
  // 4M elements through a max reducer and a variadic argmax: must not interpret per element.
  std::string hlo = std::string(kReducers) + R"(
ENTRY e {
  a = f32[2048,2048] parameter(0)
  z = f32[] constant(-inf)
  m = f32[2048] reduce(a, z), dimensions={1}, to_apply=max_f32
  zero = f32[] constant(0)
  s = f32[2048] reduce(a, zero), dimensions={0}, to_apply=add_f32
  i = s32[2048,2048] iota(), iota_dimension=1
  zi = s32[] constant(0)
  am = (f32[2048], s32[2048]) reduce(a, i, z, zi), dimensions={1}, to_apply=argmax
  w = f32[1024,1024] reduce-window(a, z), window={size=2x2 stride=2x2}, to_apply=max_f32
  ROOT t = (f32[2048], f32[2048], (f32[2048], s32[2048]), f32[1024,1024]) tuple(m, s, am, w)
})";
  std::vector<double> values(2048 * 2048);
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<double>((k * 7919) % 1000);
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2048, 2048}), values));
  auto start = std::chrono::steady_clock::now();
  StatusOr<Literal> r = RunHlo(hlo, args);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tuple_element(0).GetAsDouble(0), 999);
  std::printf("4M-element reductions: %.3f s\n", seconds);
}

}  // namespace
}  // namespace kiln
