// convert, bitcast-convert, reduce-precision, stochastic-convert.
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
using testing::ExpectSameDoubles;
using testing::F32Bits;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;
using testing::U64s;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t Count(std::string_view a) {
  int64_t n = 1, depth = 0;
  for (char c : a) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) ++n;
  }
  return n;
}

Literal Convert(std::string_view from, std::string_view to, std::string_view values,
                std::string_view op = "convert") {
  std::string n = "[" + std::to_string(Count(values)) + "]";
  return MustRun(Entry("  a = " + std::string(from) + n + " constant({" + std::string(values) +
                       "})\n  ROOT r = " + std::string(to) + n + " " + std::string(op) + "(a)"));
}

TEST(ConvertTest, FloatToIntSaturatesAndNanIsZero) {
  EXPECT_EQ(Ints(Convert("f32", "s32", "1.9, -1.9, 3e9, -3e9, nan, inf, -inf, -0")),
            (std::vector<int64_t>{1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0}));
  EXPECT_EQ(Ints(Convert("f32", "u8", "-5, 300, 255.9, nan, 0.5")), (std::vector<int64_t>{0, 255, 255, 0, 0}));
  EXPECT_EQ(Ints(Convert("f32", "s4", "7.9, -9, 100, -8.5")), (std::vector<int64_t>{7, -8, 7, -8}));
  EXPECT_EQ(Ints(Convert("f32", "u4", "-1, 15.5, 16")), (std::vector<int64_t>{0, 15, 15}));
  EXPECT_EQ(Ints(Convert("f64", "s64", "1e19, -1e19, 9.2e18")),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, 9200000000000000000}));
  EXPECT_EQ(U64s(Convert("f64", "u64", "1e20, 1.8e19, -1")),
            (std::vector<uint64_t>{~uint64_t{0}, 18000000000000000000u, 0}));
  EXPECT_EQ(Ints(Convert("bf16", "s16", "40000, -2.5")), (std::vector<int64_t>{32767, -2}));
}

TEST(ConvertTest, IntToFloatRoundsToNearestEvenOnce) {
  // 16777217 is a tie between 16777216 and 16777218 in f32 -> even.
  ExpectSameDoubles(Doubles(Convert("s32", "f32", "16777217, 16777219, -16777217")),
                    {16777216, 16777220, -16777216});
  // bf16: 257 -> 256 (tie, even), 259 -> 260 (tie, even).
  ExpectSameDoubles(Doubles(Convert("s32", "bf16", "257, 259")), {256, 260});
  // One rounding, not two: via f32 this would give 2^24.
  ExpectSameDoubles(Doubles(Convert("s32", "bf16", "16842753")), {16908288});
  ExpectSameDoubles(Doubles(Convert("s64", "bf16", "-9223372036854775807")), {-9223372036854775808.0});
  ExpectSameDoubles(Doubles(Convert("u64", "f32", "18446744073709551615")), {18446744073709551616.0});
  ExpectSameDoubles(Doubles(Convert("s64", "f64", "9007199254740993")), {9007199254740992.0});
  ExpectSameDoubles(Doubles(Convert("s4", "f16", "-8, 7")), {-8, 7});
  ExpectSameDoubles(Doubles(Convert("u4", "f32", "15")), {15});
}

TEST(ConvertTest, FloatToFloat) {
  // f32 -> bf16 ties to even; f32 -> f16 overflow (65520 rounds to 65536) is inf.
  ExpectSameDoubles(Doubles(Convert("f32", "bf16", "1.00390625, 1.01171875, -0, nan")),
                    {1, 1.015625, -0.0, kNaN});
  ExpectSameDoubles(Doubles(Convert("f32", "f16", "65520, 65519, 1e-8, 6e-8")),
                    {kInf, 65504, 0, 5.960464477539063e-08});
  ExpectSameDoubles(Doubles(Convert("f64", "f32", "0.1")), {static_cast<double>(0.1f)});
  // f8e4m3fn has no inf: overflow is NaN; f8e5m2 overflows to inf.
  ExpectSameDoubles(Doubles(Convert("f32", "f8e4m3fn", "1000, 448, 464, 465, -0.0009")),
                    {kNaN, 448, 448, kNaN, -0.0});
  ExpectSameDoubles(Doubles(Convert("f32", "f8e5m2", "1e6, 3")), {kInf, 3});
  ExpectSameDoubles(Doubles(Convert("f32", "f4e2m1fn", "5, 100, 0.25")), {4, 6, 0});
  ExpectSameDoubles(Doubles(Convert("bf16", "f8e4m3fnuz", "-0, 1")), {0, 1});
}

TEST(ConvertTest, PredAndComplex) {
  EXPECT_EQ(Bools(Convert("f32", "pred", "0, -0, 0.5, nan, -2")),
            (std::vector<bool>{false, false, true, true, true}));
  EXPECT_EQ(Bools(Convert("s32", "pred", "0, 5, -1")), (std::vector<bool>{false, true, true}));
  ExpectSameDoubles(Doubles(Convert("pred", "f32", "true, false")), {1, 0});
  EXPECT_EQ(Ints(Convert("pred", "s4", "true, false")), (std::vector<int64_t>{1, 0}));
  // complex -> real takes the real part.
  ExpectSameDoubles(Doubles(Convert("c64", "f32", "(1.5, 2), (-3, 4)")), {1.5, -3});
  EXPECT_EQ(Ints(Convert("c64", "s32", "(3e10, 2), (-2.7, 4)")), (std::vector<int64_t>{INT32_MAX, -2}));
  EXPECT_EQ(Bools(Convert("c64", "pred", "(0, 1), (2, 0)")), (std::vector<bool>{false, true}));
  Literal c = Convert("f32", "c64", "2.5");
  EXPECT_EQ(c.data<std::complex<float>>()[0], std::complex<float>(2.5, 0));
  Literal c2 = Convert("c128", "c64", "(0.1, -0.2)");
  EXPECT_EQ(c2.data<std::complex<float>>()[0], std::complex<float>(0.1f, -0.2f));
}

TEST(ConvertTest, IntToIntWraps) {
  EXPECT_EQ(Ints(Convert("u32", "s32", "4294967295, 2147483648")), (std::vector<int64_t>{-1, INT32_MIN}));
  EXPECT_EQ(Ints(Convert("s32", "u8", "257, -1")), (std::vector<int64_t>{1, 255}));
  EXPECT_EQ(Ints(Convert("s8", "s4", "9, -9, 7")), (std::vector<int64_t>{-7, 7, 7}));
  EXPECT_EQ(Ints(Convert("s4", "u4", "-1, -8")), (std::vector<int64_t>{15, 8}));
  EXPECT_EQ(Ints(Convert("u4", "s64", "15")), (std::vector<int64_t>{15}));
  EXPECT_EQ(Ints(Convert("s2", "s8", "-2, 1")), (std::vector<int64_t>{-2, 1}));
}

TEST(ConvertTest, BitcastConvertSameWidth) {
  EXPECT_EQ(Ints(Convert("f32", "s32", "1, -2", "bitcast-convert")),
            (std::vector<int64_t>{0x3f800000, static_cast<int32_t>(0xc0000000u)}));
  EXPECT_EQ(Ints(Convert("bf16", "s16", "1", "bitcast-convert")), (std::vector<int64_t>{0x3f80}));
  EXPECT_EQ(Ints(Convert("u4", "s4", "15, 8, 7", "bitcast-convert")), (std::vector<int64_t>{-1, -8, 7}));
  EXPECT_EQ(Ints(Convert("s4", "u4", "-1", "bitcast-convert")), (std::vector<int64_t>{15}));
  ExpectSameDoubles(Doubles(Convert("u8", "f8e4m3fn", "56, 127", "bitcast-convert")), {1, kNaN});
}

TEST(ConvertTest, BitcastConvertAcrossWidths) {
  // f32[2] -> u8[2,4]: little-endian bytes of each element along the new minor dimension.
  Literal b = MustRun(Entry(R"(
  a = f32[2] constant({1, -2})
  ROOT r = u8[2,4] bitcast-convert(a))"));
  EXPECT_EQ(Ints(b), (std::vector<int64_t>{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}));
  Literal f = MustRun(Entry(R"(
  a = u8[2,4] constant({{0, 0, 128, 63}, {0, 0, 0, 192}})
  ROOT r = f32[2] bitcast-convert(a))"));
  ExpectSameDoubles(Doubles(f), {1, -2});
  Literal s = MustRun(Entry(R"(
  a = s32[1] constant({-2})
  ROOT r = s16[1,2] bitcast-convert(a))"));
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{-2, -1}));
  // Sub-byte: u8 0xAB -> u4 {0xB, 0xA}; as s4 {-5, -6}; and back.
  Literal n = MustRun(Entry(R"(
  a = u8[1] constant({171})
  ROOT r = u4[1,2] bitcast-convert(a))"));
  EXPECT_EQ(Ints(n), (std::vector<int64_t>{11, 10}));
  Literal n2 = MustRun(Entry(R"(
  a = u8[1] constant({171})
  ROOT r = s4[1,2] bitcast-convert(a))"));
  EXPECT_EQ(Ints(n2), (std::vector<int64_t>{-5, -6}));
  Literal n3 = MustRun(Entry(R"(
  a = s4[2,2] constant({{-5, -6}, {1, 2}})
  ROOT r = u8[2] bitcast-convert(a))"));
  EXPECT_EQ(Ints(n3), (std::vector<int64_t>{171, 0x21}));
  Literal c = MustRun(Entry(R"(
  a = c64[1] constant({(1, -2)})
  ROOT r = f32[1,2] bitcast-convert(a))"));
  ExpectSameDoubles(Doubles(c), {1, -2});
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = f32[3] constant({1, 2, 3})
  ROOT r = u8[3,2] bitcast-convert(a))")).ok());
}

TEST(ConvertTest, ReducePrecision) {
  auto rp = [](std::string_view ty, std::string_view values, int e, int m) {
    std::string n = "[" + std::to_string(Count(values)) + "]";
    return Doubles(MustRun(Entry("  a = " + std::string(ty) + n + " constant({" +
                                 std::string(values) + "})\n  ROOT r = " + std::string(ty) + n +
                                 " reduce-precision(a), exponent_bits=" + std::to_string(e) +
                                 ", mantissa_bits=" + std::to_string(m))));
  };
  // To bf16 precision: ties to even.
  ExpectSameDoubles(rp("f32", "1.00390625, 1.01171875, -3.14159", 8, 7),
                    {1, 1.015625, -3.140625});
  // To f16 range: overflow -> inf (after mantissa rounding), subnormals flush to zero, NaN stays.
  ExpectSameDoubles(rp("f32", "65520, 65504, 1e-5, -1e-8, nan, inf", 5, 10),
                    {kInf, 65504, 0, -0.0, kNaN, kInf});
  // No mantissa bits: NaN becomes inf.
  ExpectSameDoubles(rp("f32", "nan, 3, 6", 8, 0), {kInf, 2, 8});
  ExpectSameDoubles(rp("f64", "1.0000000001, 1e300", 8, 23), {1, kInf});
  ExpectSameDoubles(rp("bf16", "1.5, 1.75", 8, 1), {1.5, 2});
}

TEST(ConvertTest, StochasticConvert) {
  Literal r = MustRun(Entry(R"(
  a = f32[7] constant({2.5, 2.5, -2.5, -2.5, nan, 1e10, 3})
  b = u32[7] constant({0, 4294967295, 0, 4294967295, 0, 0, 0})
  ROOT r = s32[7] stochastic-convert(a, b))"));
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{3, 2, -3, -2, 0, INT32_MAX, 3}));
  Literal f = MustRun(Entry(R"(
  a = f32[3] constant({1.001953125, 1.001953125, 1.5})
  b = u32[3] constant({0, 4294967295, 7})
  ROOT r = bf16[3] stochastic-convert(a, b))"));
  ExpectSameDoubles(Doubles(f), {1.0078125, 1, 1.5});
}

}  // namespace
}  // namespace kiln
