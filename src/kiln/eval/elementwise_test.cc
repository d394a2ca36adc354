// Elementwise kernels: arithmetic, integer corner cases, shifts, compare, min/max, power, sign,
// bit counts, complex math, select/clamp/map, narrow-float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>

#include "kiln/eval/eval_test_util.h"

namespace kiln {
namespace {

using testing::Bools;
using testing::Doubles;
using testing::Entry;
using testing::ExpectNear;
using testing::ExpectSameDoubles;
using testing::F32Bits;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;
using testing::U64s;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Number of top-level elements in a constant's text ("1, 2" -> 2, "(1, 2), (3, 4)" -> 2).
int64_t Count(std::string_view a) {
  int64_t n = 1, depth = 0;
  for (char c : a) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) ++n;
  }
  return n;
}

// Evaluates `op` on two constant operands of type `ty` (result type `rty`).
Literal Binary(std::string_view op, std::string_view ty, std::string_view a, std::string_view b,
               std::string_view rty = "") {
  std::string n = "[" + std::to_string(Count(a)) + "]";
  std::string r = std::string(rty.empty() ? ty : rty);
  return MustRun(Entry(std::string("  a = ") + std::string(ty) + n + " constant({" + std::string(a) +
                       "})\n  b = " + std::string(ty) + n + " constant({" + std::string(b) +
                       "})\n  ROOT r = " + r + n + " " + std::string(op) + "(a, b)"));
}
Literal Unary(std::string_view op, std::string_view ty, std::string_view a, std::string_view rty = "") {
  std::string n = "[" + std::to_string(Count(a)) + "]";
  std::string r = std::string(rty.empty() ? ty : rty);
  return MustRun(Entry(std::string("  a = ") + std::string(ty) + n + " constant({" + std::string(a) +
                       "})\n  ROOT r = " + r + n + " " + std::string(op) + "(a)"));
}

TEST(ElementwiseTest, FloatArithmetic) {
  ExpectSameDoubles(Doubles(Binary("add", "f32", "1, 2.5, -3", "4, 0.25, 3")), {5, 2.75, 0});
  ExpectSameDoubles(Doubles(Binary("subtract", "f64", "1, 2.5", "4, 0.25")), {-3, 2.25});
  ExpectSameDoubles(Doubles(Binary("multiply", "f32", "3, -0", "0.5, 5")), {1.5, -0.0});
  ExpectSameDoubles(Doubles(Binary("divide", "f32", "1, 1, -1, 0", "4, 0, 0, 0")),
                    {0.25, kInf, -kInf, kNaN});
  // remainder is fmod: the sign follows the dividend.
  ExpectSameDoubles(Doubles(Binary("remainder", "f32", "7, -7, 7, 5.5", "3, 3, -3, 2")),
                    {1, -1, 1, 1.5});
  ExpectNear(Doubles(Binary("atan2", "f32", "1, -1, 0", "1, -1, -1")),
             {M_PI / 4, -3 * M_PI / 4, M_PI}, 1e-6);
}

TEST(ElementwiseTest, IntegerDivisionCorners) {
  // x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  EXPECT_EQ(Ints(Binary("divide", "s32", "7, -7, -2147483648, 5, -7", "0, 2, -1, -1, 2")),
            (std::vector<int64_t>{-1, -3, INT32_MIN, -5, -3}));
  EXPECT_EQ(Ints(Binary("remainder", "s32", "7, -7, -2147483648, 5", "0, 2, -1, -3")),
            (std::vector<int64_t>{7, -1, 0, 2}));
  EXPECT_EQ(Ints(Binary("divide", "s8", "-128, 100", "-1, 0")), (std::vector<int64_t>{-128, -1}));
  EXPECT_EQ(Ints(Binary("divide", "s64", "-9223372036854775808", "-1")),
            (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(Ints(Binary("remainder", "s64", "-9223372036854775808", "-1")),
            (std::vector<int64_t>{0}));
  // Unsigned: x / 0 is all ones.
  EXPECT_EQ(U64s(Binary("divide", "u32", "7, 9", "0, 2")), (std::vector<uint64_t>{0xffffffffu, 4}));
  EXPECT_EQ(U64s(Binary("divide", "u64", "7", "0")), (std::vector<uint64_t>{~uint64_t{0}}));
  EXPECT_EQ(U64s(Binary("remainder", "u8", "7, 200", "0, 7")), (std::vector<uint64_t>{7, 4}));
  // Sub-byte widths.
  EXPECT_EQ(Ints(Binary("divide", "s4", "-8, 7, 5", "-1, 0, -2")), (std::vector<int64_t>{-8, -1, -2}));
  EXPECT_EQ(Ints(Binary("divide", "u4", "9, 15", "0, 4")), (std::vector<int64_t>{15, 3}));
  EXPECT_EQ(Ints(Binary("remainder", "s4", "-8, -7", "-1, 0")), (std::vector<int64_t>{0, -7}));
}

TEST(ElementwiseTest, IntegerWraparound) {
  EXPECT_EQ(Ints(Binary("add", "s8", "127, -128", "1, -1")), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(Ints(Binary("multiply", "s32", "65536, 3", "65536, -5")), (std::vector<int64_t>{0, -15}));
  EXPECT_EQ(Ints(Binary("add", "s4", "7, -8, 3", "1, -1, 3")), (std::vector<int64_t>{-8, 7, 6}));
  EXPECT_EQ(Ints(Binary("add", "u4", "15, 9", "1, 9")), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Ints(Binary("subtract", "u2", "0, 3", "1, 1")), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Ints(Binary("multiply", "s2", "1, -2", "-2, -1")), (std::vector<int64_t>{-2, -2}));
  EXPECT_EQ(Ints(Unary("negate", "s32", "-2147483648, 5")), (std::vector<int64_t>{INT32_MIN, -5}));
  EXPECT_EQ(Ints(Unary("negate", "s4", "-8, 3")), (std::vector<int64_t>{-8, -3}));
  EXPECT_EQ(U64s(Unary("negate", "u8", "1, 0")), (std::vector<uint64_t>{255, 0}));
  // abs(INT_MIN) = INT_MIN.
  EXPECT_EQ(Ints(Unary("abs", "s32", "-2147483648, -5, 6")), (std::vector<int64_t>{INT32_MIN, 5, 6}));
  EXPECT_EQ(Ints(Unary("abs", "s64", "-9223372036854775808")), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(Ints(Unary("abs", "s4", "-8, -3")), (std::vector<int64_t>{-8, 3}));
}

TEST(ElementwiseTest, Shifts) {
  // Amounts >= the width: left/logical -> 0, arithmetic -> sign fill. Amounts are unsigned, so
  // a negative amount is huge.
  EXPECT_EQ(Ints(Binary("shift-left", "s32", "1, 1, 1, 1, -1", "0, 31, 32, -1, 4")),
            (std::vector<int64_t>{1, INT32_MIN, 0, 0, -16}));
  EXPECT_EQ(Ints(Binary("shift-right-arithmetic", "s32", "-8, -8, 8, -1, 8", "1, 32, 40, -1, 3")),
            (std::vector<int64_t>{-4, -1, 0, -1, 1}));
  EXPECT_EQ(Ints(Binary("shift-right-logical", "s32", "-8, -1, 8, -1", "1, 32, 3, 31")),
            (std::vector<int64_t>{0x7ffffffc, 0, 1, 1}));
  EXPECT_EQ(U64s(Binary("shift-right-arithmetic", "u8", "128, 64, 255", "1, 1, 8")),
            (std::vector<uint64_t>{192, 32, 255}));
  EXPECT_EQ(U64s(Binary("shift-left", "u64", "1, 1", "63, 64")),
            (std::vector<uint64_t>{uint64_t{1} << 63, 0}));
  // s4: shifts within 4 bits; amounts are unsigned 4-bit (-1 -> 15 >= 4).
  EXPECT_EQ(Ints(Binary("shift-left", "s4", "1, 1, 3, 1", "3, 4, 1, -1")),
            (std::vector<int64_t>{-8, 0, 6, 0}));
  EXPECT_EQ(Ints(Binary("shift-right-logical", "s4", "-8, -1, -1", "1, 3, 4")),
            (std::vector<int64_t>{4, 1, 0}));
  EXPECT_EQ(Ints(Binary("shift-right-arithmetic", "s4", "-8, -8, 7", "1, 5, 7")),
            (std::vector<int64_t>{-4, -1, 0}));
  EXPECT_EQ(Ints(Binary("shift-right-logical", "u4", "15, 8", "1, 3")), (std::vector<int64_t>{7, 1}));
}

TEST(ElementwiseTest, BitOps) {
  EXPECT_EQ(Ints(Binary("and", "s32", "12, -1", "10, 7")), (std::vector<int64_t>{8, 7}));
  EXPECT_EQ(Ints(Binary("or", "s8", "12, -128", "3, 1")), (std::vector<int64_t>{15, -127}));
  EXPECT_EQ(Ints(Binary("xor", "u4", "15, 5", "1, 5")), (std::vector<int64_t>{14, 0}));
  EXPECT_EQ(Ints(Unary("not", "s32", "0, -1, 5")), (std::vector<int64_t>{-1, 0, -6}));
  EXPECT_EQ(Ints(Unary("not", "u4", "0, 5")), (std::vector<int64_t>{15, 10}));
  EXPECT_EQ(Ints(Unary("not", "s4", "0, 5")), (std::vector<int64_t>{-1, -6}));
  EXPECT_EQ(Bools(Unary("not", "pred", "true, false")), (std::vector<bool>{false, true}));
  EXPECT_EQ(Bools(Binary("and", "pred", "true, true, false", "true, false, false")),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(Bools(Binary("xor", "pred", "true, true, false", "true, false, false")),
            (std::vector<bool>{false, true, false}));
  // popcnt and clz count within the type's width.
  EXPECT_EQ(Ints(Unary("popcnt", "s32", "-1, 0, 7, -2147483648")), (std::vector<int64_t>{32, 0, 3, 1}));
  EXPECT_EQ(Ints(Unary("popcnt", "s4", "-1, -8, 5")), (std::vector<int64_t>{4, 1, 2}));
  EXPECT_EQ(Ints(Unary("popcnt", "u8", "255")), (std::vector<int64_t>{8}));
  EXPECT_EQ(Ints(Unary("count-leading-zeros", "s32", "0, 1, -1, 65535")),
            (std::vector<int64_t>{32, 31, 0, 16}));
  EXPECT_EQ(Ints(Unary("count-leading-zeros", "u64", "0, 1")), (std::vector<int64_t>{64, 63}));
  EXPECT_EQ(Ints(Unary("count-leading-zeros", "s4", "0, 1, -1, 3")), (std::vector<int64_t>{4, 3, 0, 2}));
  EXPECT_EQ(Ints(Unary("count-leading-zeros", "s8", "1, -128")), (std::vector<int64_t>{7, 0}));
  EXPECT_EQ(Ints(Unary("count-leading-zeros", "u2", "0, 1, 2")), (std::vector<int64_t>{2, 1, 0}));
}

TEST(ElementwiseTest, Mulhi) {
  EXPECT_EQ(Ints(Binary("mulhi", "s32", "65536, -1, 2147483647", "65536, 1, 2147483647")),
            (std::vector<int64_t>{1, -1, 0x3fffffff}));
  EXPECT_EQ(U64s(Binary("mulhi", "u64", "18446744073709551615", "2")), (std::vector<uint64_t>{1}));
  EXPECT_EQ(Ints(Binary("mulhi", "s64", "-9223372036854775808", "2")), (std::vector<int64_t>{-1}));
  EXPECT_EQ(Ints(Binary("mulhi", "u8", "255", "255")), (std::vector<int64_t>{254}));
}

TEST(ElementwiseTest, MaxMinNanAndSignedZero) {
  // NaN in either operand propagates.
  ExpectSameDoubles(Doubles(Binary("maximum", "f32", "nan, 1, 2, -inf", "1, nan, 3, -5")),
                    {kNaN, kNaN, 3, -5});
  ExpectSameDoubles(Doubles(Binary("minimum", "f32", "nan, 1, 2, inf", "1, nan, 3, 5")),
                    {kNaN, kNaN, 2, 5});
  // Ties return the lhs (std::max / std::min, as XLA's evaluator): max(-0, +0) = -0.
  ExpectSameDoubles(Doubles(Binary("maximum", "f32", "-0, 0", "0, -0")), {-0.0, 0.0});
  ExpectSameDoubles(Doubles(Binary("minimum", "f64", "-0, 0", "0, -0")), {-0.0, 0.0});
  ExpectSameDoubles(Doubles(Binary("maximum", "bf16", "nan, 1.5", "2, -3")), {kNaN, 1.5});
  EXPECT_EQ(Ints(Binary("maximum", "s4", "-8, 7", "3, -1")), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(U64s(Binary("minimum", "u32", "4294967295, 3", "1, 4")), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(Bools(Binary("maximum", "pred", "true, false", "false, false")),
            (std::vector<bool>{true, false}));
}

TEST(ElementwiseTest, Power) {
  // Integers: x^0 = 1 (0^0 too), 1^-n = 1, other x^-n = 0 (also -1, as XLA's evaluator).
  EXPECT_EQ(Ints(Binary("power", "s32", "0, 2, 1, -1, 2, 3, -2, -1", "0, 10, -5, -3, -1, 3, 3, -2")),
            (std::vector<int64_t>{1, 1024, 1, 0, 0, 27, -8, 0}));
  EXPECT_EQ(Ints(Binary("power", "s32", "2, 3", "31, 21")),
            (std::vector<int64_t>{INT32_MIN, static_cast<int32_t>(10460353203LL)}));
  EXPECT_EQ(U64s(Binary("power", "u8", "2, 3, 0", "8, 5, 0")), (std::vector<uint64_t>{0, 243, 1}));
  EXPECT_EQ(Ints(Binary("power", "s4", "2, -2", "2, 3")), (std::vector<int64_t>{4, -8}));
  ExpectSameDoubles(Doubles(Binary("power", "f32", "2, 1, nan, 4, -8", "-1, nan, 0, 0.5, 0.333")),
                    {0.5, 1, 1, 2, std::pow(-8.0f, 0.333f)});
  EXPECT_EQ(Bools(Binary("power", "pred", "false, false, true", "false, true, true")),
            (std::vector<bool>{true, false, true}));
  Literal c = Binary("power", "c64", "(0, 1)", "(2, 0)");
  std::complex<float> v = c.data<std::complex<float>>()[0];
  EXPECT_NEAR(v.real(), -1, 1e-6);
  EXPECT_NEAR(v.imag(), 0, 1e-6);
}

TEST(ElementwiseTest, Sign) {
  ExpectSameDoubles(Doubles(Unary("sign", "f32", "-3, 0, -0, 2, nan, -inf")),
                    {-1, 0, -0.0, 1, kNaN, -1});
  EXPECT_EQ(Ints(Unary("sign", "s32", "-5, 0, 7")), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(Ints(Unary("sign", "s4", "-8, 0, 7")), (std::vector<int64_t>{-1, 0, 1}));
  ExpectSameDoubles(Doubles(Unary("sign", "bf16", "-0, -2.5")), {-0.0, -1});
  Literal c = Unary("sign", "c64", "(3, 4), (0, 0)");
  auto d = c.data<std::complex<float>>();
  EXPECT_NEAR(d[0].real(), 0.6, 1e-6);
  EXPECT_NEAR(d[0].imag(), 0.8, 1e-6);
  EXPECT_EQ(d[1], std::complex<float>(0, 0));
}

TEST(ElementwiseTest, Rounding) {
  ExpectSameDoubles(Doubles(Unary("round-nearest-afz", "f32", "0.5, 1.5, 2.5, -0.5, -2.5, 2.4")),
                    {1, 2, 3, -1, -3, 2});
  ExpectSameDoubles(Doubles(Unary("round-nearest-even", "f32", "0.5, 1.5, 2.5, -0.5, -2.5, 2.6")),
                    {0, 2, 2, -0.0, -2, 3});
  ExpectSameDoubles(Doubles(Unary("floor", "f64", "-1.5, 1.5, -0")), {-2, 1, -0.0});
  ExpectSameDoubles(Doubles(Unary("ceil", "bf16", "-1.5, 1.5")), {-1, 2});
}

TEST(ElementwiseTest, FloatMath) {
  ExpectNear(Doubles(Unary("exponential", "f32", "0, 1")), {1, M_E}, 1e-6);
  ExpectNear(Doubles(Unary("exponential-minus-one", "f64", "1e-10")), {1.00000000005e-10}, 1e-12);
  ExpectNear(Doubles(Unary("log", "f32", "1, 2.718281828")), {0, 1}, 1e-6);
  ExpectNear(Doubles(Unary("log-plus-one", "f64", "1e-10")), {9.9999999995e-11}, 1e-12);
  ExpectNear(Doubles(Unary("logistic", "f32", "0, 100, -100")), {0.5, 1, 0}, 1e-6);
  ExpectNear(Doubles(Unary("rsqrt", "f32", "4, 0.25")), {0.5, 2}, 1e-7);
  ExpectNear(Doubles(Unary("sqrt", "f64", "2")), {M_SQRT2}, 1e-15);
  ExpectNear(Doubles(Unary("cbrt", "f32", "-27, 8")), {-3, 2}, 1e-6);
  ExpectNear(Doubles(Unary("tanh", "f32", "0, 0.5")), {0, std::tanh(0.5)}, 1e-6);
  ExpectNear(Doubles(Unary("sine", "f32", "0, 1.5707963")), {0, 1}, 1e-6);
  ExpectNear(Doubles(Unary("cosine", "f32", "0")), {1}, 1e-6);
  ExpectNear(Doubles(Unary("tan", "f32", "0.7853981")), {1}, 1e-6);
  ExpectNear(Doubles(Unary("erf", "f32", "0, 1")), {0, std::erf(1.0)}, 1e-6);
  ExpectNear(Doubles(Unary("acos", "f32", "1, 0")), {0, M_PI / 2}, 1e-6);
  ExpectNear(Doubles(Unary("asin", "f32", "1")), {M_PI / 2}, 1e-6);
  ExpectNear(Doubles(Unary("atan", "f32", "1")), {M_PI / 4}, 1e-6);
  ExpectNear(Doubles(Unary("acosh", "f64", "1")), {0}, 1e-15);
  ExpectNear(Doubles(Unary("asinh", "f64", "0")), {0}, 1e-15);
  ExpectNear(Doubles(Unary("atanh", "f64", "0.5")), {std::atanh(0.5)}, 1e-15);
  ExpectNear(Doubles(Unary("sinh", "f64", "1")), {std::sinh(1.0)}, 1e-15);
  ExpectNear(Doubles(Unary("cosh", "f64", "1")), {std::cosh(1.0)}, 1e-15);
  ExpectSameDoubles(Doubles(Unary("abs", "f32", "-0, -inf, 3")), {0, kInf, 3});
  ExpectSameDoubles(Doubles(Unary("negate", "f32", "0, nan")), {-0.0, kNaN});
}

TEST(ElementwiseTest, IsFinite) {
  EXPECT_EQ(Bools(Unary("is-finite", "f32", "1, inf, -inf, nan", "pred")),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(Bools(Unary("is-finite", "bf16", "1, inf, nan", "pred")), (std::vector<bool>{true, false, false}));
  // f8e4m3fn has no infinity: 448 is its max, nan is S.1111.111.
  EXPECT_EQ(Bools(Unary("is-finite", "f8e4m3fn", "448, nan, -448", "pred")),
            (std::vector<bool>{true, false, true}));
  EXPECT_EQ(Bools(Unary("is-finite", "f8e5m2", "57344, inf, nan", "pred")),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(Bools(Unary("is-finite", "f8e4m3fnuz", "240, nan", "pred")), (std::vector<bool>{true, false}));
}

TEST(ElementwiseTest, NarrowFloatsRoundPerOp) {
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> even (1).
  ExpectSameDoubles(Doubles(Binary("add", "bf16", "1, 1", "0.00390625, 0.01171875")), {1, 1.015625});
  // f16: 2048 + 1 rounds to even (2048), 2048 + 3 -> 2052.
  ExpectSameDoubles(Doubles(Binary("add", "f16", "2048, 2048", "1, 3")), {2048, 2052});
  // f16 overflow to inf.
  ExpectSameDoubles(Doubles(Binary("multiply", "f16", "60000", "2")), {kInf});
  // f8e4m3fn: overflow is NaN (no inf); 448 is the max.
  ExpectSameDoubles(Doubles(Binary("add", "f8e4m3fn", "448, 1, 1", "64, 0.0625, 0.125")), {kNaN, 1, 1.125});
  ExpectSameDoubles(Doubles(Binary("add", "f8e5m2", "1", "0.125")), {1});
  ExpectSameDoubles(Doubles(Binary("multiply", "f4e2m1fn", "3, 1.5", "2, 1.5")), {6, 2});
}

TEST(ElementwiseTest, CompareFloat) {
  auto cmp = [](std::string_view dir, std::string_view type, std::string_view a,
                std::string_view b, std::string_view ty = "f32") {
    std::string n = "[" + std::to_string(Count(a)) + "]";
    std::string t = type.empty() ? "" : ", type=" + std::string(type);
    return Bools(MustRun(Entry("  a = " + std::string(ty) + n + " constant({" + std::string(a) +
                               "})\n  b = " + std::string(ty) + n + " constant({" +
                               std::string(b) + "})\n  ROOT r = pred" + n +
                               " compare(a, b), direction=" + std::string(dir) + t)));
  };
  // IEEE: NaN compares false except NE; -0 == +0.
  EXPECT_EQ(cmp("EQ", "", "nan, 1, -0", "nan, 1, 0"), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(cmp("NE", "", "nan, 1, -0", "nan, 1, 0"), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(cmp("LT", "FLOAT", "nan, 1, -inf", "1, nan, 0"), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(cmp("GE", "", "nan, 2, 1", "1, 2, 3"), (std::vector<bool>{false, true, false}));
  // Total order: -NaN < -inf < -1 < -0 < +0 < 1 < inf < NaN.
  EXPECT_EQ(cmp("LT", "TOTALORDER", "-nan, -inf, -1, -0, 0, 1, inf", "-inf, -1, -0, 0, 1, inf, nan"),
            (std::vector<bool>(7, true)));
  EXPECT_EQ(cmp("EQ", "TOTALORDER", "nan, -0, 1", "nan, 0, 1"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(cmp("GT", "TOTALORDER", "0, nan", "-0, inf", "bf16"), (std::vector<bool>{true, true}));
  EXPECT_EQ(cmp("LE", "TOTALORDER", "-0, -nan", "-0, -inf", "f64"), (std::vector<bool>{true, true}));
  EXPECT_EQ(cmp("LT", "", "-1, 3", "2, 3", "f8e4m3fn"), (std::vector<bool>{true, false}));
}

TEST(ElementwiseTest, CompareIntegersAndComplex) {
  auto cmp = [](std::string_view dir, std::string_view type, std::string_view ty,
                std::string_view a, std::string_view b) {
    std::string n = "[" + std::to_string(Count(a)) + "]";
    std::string t = type.empty() ? "" : ", type=" + std::string(type);
    return Bools(MustRun(Entry("  a = " + std::string(ty) + n + " constant({" + std::string(a) +
                               "})\n  b = " + std::string(ty) + n + " constant({" +
                               std::string(b) + "})\n  ROOT r = pred" + n +
                               " compare(a, b), direction=" + std::string(dir) + t)));
  };
  EXPECT_EQ(cmp("LT", "", "s32", "-1, 5", "0, 5"), (std::vector<bool>{true, false}));
  EXPECT_EQ(cmp("LT", "", "u32", "4294967295, 1", "0, 2"), (std::vector<bool>{false, true}));
  // An explicit UNSIGNED comparison of signed values compares their bits.
  EXPECT_EQ(cmp("LT", "UNSIGNED", "s32", "-1, 1", "0, 2"), (std::vector<bool>{false, true}));
  EXPECT_EQ(cmp("GT", "SIGNED", "s4", "-8, 7", "7, -8"), (std::vector<bool>{false, true}));
  EXPECT_EQ(cmp("GT", "", "u4", "15, 0", "7, 1"), (std::vector<bool>{true, false}));
  EXPECT_EQ(cmp("GT", "", "pred", "true, false", "false, false"), (std::vector<bool>{true, false}));
  EXPECT_EQ(cmp("EQ", "", "c64", "(1, 2), (1, 2)", "(1, 2), (1, -2)"), (std::vector<bool>{true, false}));
  EXPECT_EQ(cmp("NE", "", "c128", "(1, 2), (1, 2)", "(1, 2), (1, -2)"), (std::vector<bool>{false, true}));
  EXPECT_FALSE(RunHlo(Entry("  a = c64[1] constant({(1, 2)})\n"
                            "  ROOT r = pred[1] compare(a, a), direction=LT")).ok());
}

TEST(ElementwiseTest, ComplexMath) {
  auto c64 = [](const Literal& l) { return l.data<std::complex<float>>()[0]; };
  auto near = [](std::complex<float> got, std::complex<double> want) {
    EXPECT_NEAR(got.real(), want.real(), 1e-5 * std::max(1.0, std::abs(want)));
    EXPECT_NEAR(got.imag(), want.imag(), 1e-5 * std::max(1.0, std::abs(want)));
  };
  const std::complex<double> z(0.5, -1.25);
  const char* zs = "(0.5, -1.25)";
  near(c64(Unary("sqrt", "c64", zs)), std::sqrt(z));
  near(c64(Unary("log", "c64", zs)), std::log(z));
  near(c64(Unary("exponential", "c64", zs)), std::exp(z));
  near(c64(Unary("tanh", "c64", zs)), std::tanh(z));
  near(c64(Unary("sine", "c64", zs)), std::sin(z));
  near(c64(Unary("cosine", "c64", zs)), std::cos(z));
  near(c64(Unary("rsqrt", "c64", zs)), 1.0 / std::sqrt(z));
  near(c64(Unary("exponential-minus-one", "c64", zs)), std::exp(z) - 1.0);
  near(c64(Unary("log-plus-one", "c64", zs)), std::log(1.0 + z));
  near(c64(Unary("negate", "c64", zs)), -z);
  near(c64(Binary("multiply", "c64", zs, "(2, 3)")), z * std::complex<double>(2, 3));
  near(c64(Binary("divide", "c64", zs, "(2, 3)")), z / std::complex<double>(2, 3));
  near(c64(Binary("atan2", "c64", "(1, 0)", "(1, 0)")), std::complex<double>(M_PI / 4, 0));
  EXPECT_NEAR(Doubles(Unary("abs", "c64", "(3, 4)", "f32"))[0], 5, 1e-6);
  EXPECT_EQ(Doubles(Unary("real", "c128", "(3, 4)", "f64"))[0], 3);
  EXPECT_EQ(Doubles(Unary("imag", "c128", "(3, 4)", "f64"))[0], 4);
  Literal c = Binary("complex", "f32", "1, 2", "3, 4", "c64");
  EXPECT_EQ(c.data<std::complex<float>>()[1], std::complex<float>(2, 4));
  EXPECT_EQ(Doubles(Unary("real", "f32", "2.5"))[0], 2.5);
  EXPECT_EQ(Doubles(Unary("imag", "f32", "2.5"))[0], 0);
}

TEST(ElementwiseTest, SelectAndClamp) {
  Literal s = MustRun(Entry(R"(
  p = pred[4] constant({true, false, true, false})
  a = s4[4] constant({1, 2, 3, 4})
  b = s4[4] constant({-1, -2, -3, -4})
  ROOT r = s4[4] select(p, a, b))"));
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{1, -2, 3, -4}));
  // A scalar predicate selects whole arrays.
  Literal s2 = MustRun(Entry(R"(
  p = pred[] constant(false)
  a = c64[2] constant({(1, 1), (2, 2)})
  b = c64[2] constant({(3, 3), (4, 4)})
  ROOT r = c64[2] select(p, a, b))"));
  EXPECT_EQ(s2.data<std::complex<float>>()[1], std::complex<float>(4, 4));
  // clamp with scalar bounds; NaN propagates from any operand.
  Literal c = MustRun(Entry(R"(
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  x = f32[5] constant({-5, 0.5, 5, nan, -0})
  ROOT r = f32[5] clamp(lo, x, hi))"));
  ExpectSameDoubles(Doubles(c), {-1, 0.5, 1, kNaN, -0.0});
  Literal c2 = MustRun(Entry(R"(
  lo = f32[2] constant({nan, 0})
  hi = f32[2] constant({1, nan})
  x = f32[2] constant({0.5, 0.5})
  ROOT r = f32[2] clamp(lo, x, hi))"));
  ExpectSameDoubles(Doubles(c2), {kNaN, kNaN});
  Literal c3 = MustRun(Entry(R"(
  lo = s8[] constant(-3)
  hi = s8[] constant(3)
  x = s8[3] constant({-128, 2, 127})
  ROOT r = s8[3] clamp(lo, x, hi))"));
  EXPECT_EQ(Ints(c3), (std::vector<int64_t>{-3, 2, 3}));
}

TEST(ElementwiseTest, Map) {
  const char* hlo = R"(
HloModule m

f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  s = f32[] add(x, y)
  c = f32[] constant(2)
  ROOT m = f32[] multiply(s, c)
}

g {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  t = (f32[], f32[]) tuple(x, y)
  a = f32[] get-tuple-element(t), index=0
  ROOT m = f32[] maximum(a, y)
}

ENTRY e {
  a = f32[2,2] constant({{1, 2}, {3, 4}})
  b = f32[2,2] constant({{10, 20}, {30, 40}})
  m1 = f32[2,2] map(a, b), dimensions={0,1}, to_apply=f
  m2 = f32[2,2] map(a, b), dimensions={0,1}, to_apply=g
  ROOT t = (f32[2,2], f32[2,2]) tuple(m1, m2)
})";
  Literal r = MustRun(hlo);
  ExpectSameDoubles(Doubles(r.tuple_element(0)), {22, 44, 66, 88});
  // g does not compile to a scalar program (tuple inside): the general path.
  ExpectSameDoubles(Doubles(r.tuple_element(1)), {10, 20, 30, 40});
}

TEST(ElementwiseTest, ZeroSizedAndScalar) {
  Literal z = MustRun(Entry(R"(
  a = f32[0,3] constant({})
  ROOT r = f32[0,3] add(a, a))"));
  EXPECT_EQ(z.element_count(), 0);
  Literal s = MustRun(Entry(R"(
  a = s32[] constant(7)
  b = s32[] constant(-2)
  ROOT r = s32[] divide(a, b))"));
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{-3}));
}

TEST(ElementwiseTest, ErrorsAreValues) {
  // Shape mismatch and unsupported types are errors, never crashes.
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = f32[2] constant({1, 2})
  ROOT r = f32[3] add(a, a))")).ok());
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = f32[2] constant({1, 2})
  ROOT r = f32[2] and(a, a))")).ok());
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = s32[2] constant({1, 2})
  ROOT r = s32[2] sine(a))")).ok());
}

}  // namespace
}  // namespace kiln
