#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kiln/hlo/literal.h"
#include "kiln/hlo/shape.h"
#include "kiln/hlo/types.h"

namespace kiln {
namespace {

TEST(TypesTest, NamesRoundTrip) {
  for (int i = 1; i <= static_cast<int>(PrimitiveType::kC128); ++i) {
    auto t = static_cast<PrimitiveType>(i);
    auto parsed = ParsePrimitiveType(PrimitiveTypeName(t));
    ASSERT_TRUE(parsed.has_value()) << PrimitiveTypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(ParsePrimitiveType("token"), PrimitiveType::kToken);
  EXPECT_FALSE(ParsePrimitiveType("f33").has_value());
}

TEST(TypesTest, Widths) {
  EXPECT_EQ(PrimitiveBitWidth(PrimitiveType::kS4), 4);
  EXPECT_EQ(PrimitiveByteWidth(PrimitiveType::kS4), 1);
  EXPECT_EQ(PrimitiveByteWidth(PrimitiveType::kC128), 16);
  EXPECT_EQ(PrimitiveByteWidth(PrimitiveType::kPred), 1);
  EXPECT_TRUE(IsF8Type(PrimitiveType::kF8E4M3FN));
  EXPECT_TRUE(IsFloatingPointType(PrimitiveType::kBF16));
  EXPECT_FALSE(IsFloatingPointType(PrimitiveType::kC64));
}

TEST(FloatTypesTest, BFloat16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(float(bfloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6: ties to even -> 1 + 2^-6.
  EXPECT_EQ(float(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(float(bfloat16(NAN))));
  EXPECT_TRUE(std::isinf(float(bfloat16(INFINITY))));
}

TEST(FloatTypesTest, HalfBasics) {
  EXPECT_EQ(float(half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(half(65520.0f))));  // rounds up to inf
  EXPECT_EQ(float(half(65519.0f)), 65504.0f);
  EXPECT_EQ(float(half(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float(half(std::ldexp(1.0f, -25))), 0.0f);                   // tie -> even (0)
  EXPECT_EQ(half(1.0f).bits(), 0x3c00);
  EXPECT_EQ(half(-2.0f).bits(), 0xc000);
  EXPECT_TRUE(std::signbit(float(half(-0.0f))));
}

TEST(FloatTypesTest, Float8Formats) {
  EXPECT_EQ(float(float8_e4m3fn(448.0f)), 448.0f);
  EXPECT_TRUE(std::isnan(float(float8_e4m3fn(1000.0f))));  // no inf: overflow is NaN
  EXPECT_EQ(float(float8_e5m2(57344.0f)), 57344.0f);
  EXPECT_TRUE(std::isinf(float(float8_e5m2(1e6f))));
  EXPECT_EQ(float8_e4m3fnuz(0.0f).bits(), 0);
  EXPECT_TRUE(std::isnan(float(float8_e4m3fnuz::FromBits(0x80))));
  EXPECT_EQ(float(float4_e2m1fn(6.0f)), 6.0f);
  EXPECT_EQ(float(float4_e2m1fn(100.0f)), 6.0f);  // saturates
  EXPECT_EQ(float(float4_e2m1fn(0.5f)), 0.5f);
  EXPECT_EQ(float(float8_e8m0fnu(4.0f)), 4.0f);
  // Ties round up, as ml_dtypes and XLA's CPU: 3 -> 4 (not to the even exponent 2), 6 -> 8.
  EXPECT_EQ(float(float8_e8m0fnu(3.0f)), 4.0f);
  EXPECT_EQ(float(float8_e8m0fnu(6.0f)), 8.0f);
  EXPECT_EQ(float(float8_e8m0fnu(2.9999f)), 2.0f);
  EXPECT_EQ(float(float8_e8m0fnu(0.0029296875f)), 0.00390625f);  // 1.5 * 2^-9 -> 2^-8
  // Every bit pattern decodes and re-encodes to itself (except NaN payloads).
  for (uint32_t b = 0; b < 256; ++b) {
    auto f = float8_e4m3fn::FromBits(static_cast<uint8_t>(b));
    if (std::isnan(float(f))) continue;
    EXPECT_EQ(float8_e4m3fn(float(f)).bits(), b) << b;
  }
  for (uint32_t b = 0; b < 65536; b += 7) {
    auto f = half::FromBits(static_cast<uint16_t>(b));
    if (std::isnan(float(f))) continue;
    EXPECT_EQ(half(float(f)).bits(), b) << b;
  }
}

TEST(FloatTypesTest, HalfFastPathMatchesGenericCodec) {
  // Every half decodes like the generic decoder; floats across the whole range (normals,
  // subnormals, ties, overflow) encode like the generic encoder.
  for (uint32_t b = 0; b < 65536; ++b) {
    double fast = half::FromBits(static_cast<uint16_t>(b)).ToDouble();
    double generic = DecodeMiniFloat(kF16Format, b);
    if (std::isnan(generic)) {
      EXPECT_TRUE(std::isnan(fast)) << b;
    } else {
      EXPECT_EQ(fast, generic) << b;
      EXPECT_EQ(std::signbit(fast), std::signbit(generic)) << b;
    }
  }
  uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    uint32_t bits = state;
    if (i % 3 == 0) bits = (bits & 0x80ffffffu) | (uint32_t(100 + (i / 3) % 60) << 23);  // near half's range
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    EXPECT_EQ(half(f).bits(), EncodeMiniFloat(kF16Format, f)) << f;
  }
  EXPECT_EQ(float8_e8m0fnu(0.0f).bits(), 0xff);  // no zero in e8m0: NaN, as ml_dtypes
}

TEST(FloatTypesTest, IntN) {
  EXPECT_EQ(int64_t(int4(7)), 7);
  EXPECT_EQ(int64_t(int4(8)), -8);
  EXPECT_EQ(int64_t(uint4(17)), 1);
  EXPECT_EQ(int64_t(int2(-3)), 1);
}

TEST(ShapeTest, ToString) {
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 3});
  EXPECT_EQ(s.ToString(), "f32[2,3]{1,0}");
  Shape d(PrimitiveType::kS32, {});
  d.add_dimension(4, true);
  d.add_dimension(Shape::kUnboundedSize);
  EXPECT_EQ(d.ToString(), "s32[<=4,?]");
  Shape t = Shape::Tuple({s, Shape::Token(), Shape::Tuple({})});
  EXPECT_EQ(t.ToString(), "(f32[2,3]{1,0}, token[], ())");
  EXPECT_EQ(t.LeafCount(), 1);
  Layout l({0, 1});
  l.tiles.push_back(Tile{{8, 128}});
  l.element_size_in_bits = 4;
  l.memory_space = 1;
  EXPECT_EQ(l.ToString(), "{0,1:T(8,128)E(4)S(1)}");
}

TEST(LiteralTest, AccessAndTuples) {
  Literal a(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 3}));
  a.Set<float>({1, 2}, 5.0f);
  EXPECT_EQ(a.Get<float>({1, 2}), 5.0f);
  EXPECT_EQ(a.GetAsDouble(5), 5.0);
  Literal b = Literal::CreateR1<int32_t>(PrimitiveType::kS32, {1, 2, 3});
  Literal t = Literal::MakeTuple({std::move(a), std::move(b)});
  EXPECT_EQ(t.shape().ToString(), "(f32[2,3]{1,0}, s32[3]{0})");
  EXPECT_EQ(t.FlattenedLeaves().size(), 2u);
  EXPECT_EQ(t.tuple_element(1).ToShortString(), "s32[3] {1, 2, 3}");
  Literal h(Shape::Scalar(PrimitiveType::kBF16));
  h.SetFromDouble(0, 1.5);
  EXPECT_EQ(h.GetAsDouble(0), 1.5);
}

}  // namespace
}  // namespace kiln
