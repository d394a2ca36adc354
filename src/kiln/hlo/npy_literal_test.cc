#include "kiln/hlo/npy_literal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace kiln {
namespace {

Shape S(PrimitiveType t, std::vector<int64_t> dims) { return Shape::ArrayWithDefaultLayout(t, dims); }

template <typename T>
NpyArray Array(NpyDtype dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
  auto a = MakeNpyArray(dtype, shape, std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return *a;
}

TEST(NpyLiteralTest, NativeTypesRoundTrip) {
  Literal l = Literal::FromDoubles(S(PrimitiveType::kS16, {2, 2}), {1, -2, 3, 30000});
  auto a = LiteralToNpy(l);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dtype.Descr(), "<i2");
  auto back = ConvertNpyForParameter(*a, std::nullopt, l.shape(), {}, "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->BitwiseEquals(l));

  Literal p = Literal::FromInt64s(S(PrimitiveType::kPred, {3}), {1, 0, 1});
  auto pa = LiteralToNpy(p);
  ASSERT_TRUE(pa.ok());
  EXPECT_EQ(pa->dtype.Descr(), "|b1");
  EXPECT_EQ(pa->data, (std::vector<uint8_t>{1, 0, 1}));
}

TEST(NpyLiteralTest, NarrowFloatsWidenToF32ByDefault) {
  Literal l = Literal::FromDoubles(S(PrimitiveType::kBF16, {3}), {1.5, -0.3, 1e30});
  auto a = LiteralToNpy(l);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dtype.Descr(), "<f4");
  std::vector<float> f(3);
  std::memcpy(f.data(), a->data.data(), 12);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], static_cast<float>(bfloat16(-0.3f)));
  // Reading the widened values back into bf16 is exact.
  auto back = ConvertNpyForParameter(*a, std::nullopt, l.shape(), {}, "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->BitwiseEquals(l));

  Literal s4 = Literal::FromInt64s(S(PrimitiveType::kS4, {3}), {-8, 7, -1});
  auto a4 = LiteralToNpy(s4);
  ASSERT_TRUE(a4.ok());
  EXPECT_EQ(a4->dtype.Descr(), "|i1");
  EXPECT_EQ(a4->data, (std::vector<uint8_t>{0xf8, 7, 0xff}));
}

TEST(NpyLiteralTest, RawBitsWithCompanion) {
  Literal l = Literal::FromDoubles(S(PrimitiveType::kF8E4M3FN, {2}), {1.0, -2.0});
  std::vector<NpzMember> ms;
  ASSERT_TRUE(AppendLiteralToNpz(l, "out0", {.raw_bits = true}, ms).ok());
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].array.dtype.Descr(), "|u1");
  EXPECT_EQ(ms[0].array.data, (std::vector<uint8_t>{0x38, 0xc0}));
  EXPECT_EQ(ms[1].name, "out0.kiln_dtype");
  EXPECT_EQ(ms[1].array.dtype.Descr(), "|S8");
  auto z = LoadedNpz::FromMembers(ms, "o.npz");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->names(), (std::vector<std::string>{"out0"}));
  EXPECT_EQ(z->RawType("out0"), PrimitiveType::kF8E4M3FN);
  auto back = z->ForParameter("out0", l.shape(), {});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->BitwiseEquals(l));
  auto as = z->AsLiteral("out0");
  ASSERT_TRUE(as.ok());
  EXPECT_EQ(as->shape().element_type(), PrimitiveType::kF8E4M3FN);
  // Raw sub-byte bits: the low nibble, sign-extended on the way back.
  Literal s4 = Literal::FromInt64s(S(PrimitiveType::kS4, {2}), {-1, 3});
  auto r4 = LiteralToNpy(s4, {.raw_bits = true});
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(r4->data, (std::vector<uint8_t>{0x0f, 3}));
  auto b4 = NpyToLiteral(*r4, PrimitiveType::kS4, "x");
  ASSERT_TRUE(b4.ok());
  EXPECT_TRUE(b4->BitwiseEquals(s4));
}

TEST(NpyLiteralTest, VoidArraysAreBitsOfTheParameter) {
  // ml_dtypes bfloat16 as numpy saves it: '<V2'.
  NpyArray v = Array<uint16_t>({'V', 2}, {2}, {0x3fc0, 0xc000});
  auto l = ConvertNpyForParameter(v, std::nullopt, S(PrimitiveType::kBF16, {2}), {}, "in0");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->GetAsDouble(0), 1.5);
  EXPECT_EQ(l->GetAsDouble(1), -2.0);
  auto bad = ConvertNpyForParameter(v, std::nullopt, S(PrimitiveType::kF32, {2}), {}, "in0");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(NpyToLiteral(v, std::nullopt, "in0").ok());
}

TEST(NpyLiteralTest, ConversionPolicy) {
  NpyToLiteralOptions strict, cast{.allow_cast = true};
  // f32 -> bf16 rounds to nearest even without --cast.
  NpyArray f = Array<float>({'f', 4}, {3}, {0.1f, 1.0f, -3.3f});
  auto bf = ConvertNpyForParameter(f, std::nullopt, S(PrimitiveType::kBF16, {3}), strict, "x");
  ASSERT_TRUE(bf.ok()) << bf.status().ToString();
  EXPECT_EQ(bf->GetAsDouble(0), static_cast<double>(bfloat16(0.1f)));
  // ... but a finite value that overflows does not.
  NpyArray big = Array<float>({'f', 4}, {1}, {1e6f});
  EXPECT_FALSE(ConvertNpyForParameter(big, std::nullopt, S(PrimitiveType::kF8E4M3FN, {1}), strict, "x").ok());
  EXPECT_TRUE(ConvertNpyForParameter(big, std::nullopt, S(PrimitiveType::kF8E4M3FN, {1}), cast, "x").ok());
  // NaN stays NaN (not a change of meaning).
  NpyArray nan = Array<float>({'f', 4}, {1}, {NAN});
  auto n16 = ConvertNpyForParameter(nan, std::nullopt, S(PrimitiveType::kF16, {1}), strict, "x");
  ASSERT_TRUE(n16.ok());
  EXPECT_TRUE(std::isnan(n16->GetAsDouble(0)));

  // f32 -> s32: exact integers pass, fractions need --cast (truncating, saturating).
  NpyArray ints = Array<float>({'f', 4}, {2}, {3.0f, -7.0f});
  auto s32 = ConvertNpyForParameter(ints, std::nullopt, S(PrimitiveType::kS32, {2}), strict, "x");
  ASSERT_TRUE(s32.ok());
  EXPECT_EQ(s32->GetAsInt64(1), -7);
  NpyArray frac = Array<float>({'f', 4}, {2, 1}, {1.0f, 2.5f});
  auto e = ConvertNpyForParameter(frac, std::nullopt, S(PrimitiveType::kS32, {2, 1}), strict, "in.npz:in0");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "in.npz:in0: element [1, 0] = 2.5 (f32) does not convert exactly to s32; pass --cast to "
            "convert anyway");
  NpyArray huge = Array<double>({'f', 8}, {3}, {2.5, 1e20, NAN});
  auto c = ConvertNpyForParameter(huge, std::nullopt, S(PrimitiveType::kS32, {3}), cast, "x");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->GetAsInt64(0), 2);
  EXPECT_EQ(c->GetAsInt64(1), 2147483647);
  EXPECT_EQ(c->GetAsInt64(2), 0);

  // f64 -> f32: exact values pass, rounding needs --cast.
  NpyArray d = Array<double>({'f', 8}, {2}, {0.5, 0.1});
  EXPECT_FALSE(ConvertNpyForParameter(d, std::nullopt, S(PrimitiveType::kF32, {2}), strict, "x").ok());
  NpyArray dx = Array<double>({'f', 8}, {1}, {0.5});
  EXPECT_TRUE(ConvertNpyForParameter(dx, std::nullopt, S(PrimitiveType::kF32, {1}), strict, "x").ok());

  // Integer widening is exact; narrowing out of range needs --cast (then wraps).
  NpyArray i64 = Array<int64_t>({'i', 8}, {2}, {5, 300});
  EXPECT_TRUE(ConvertNpyForParameter(i64, std::nullopt, S(PrimitiveType::kS32, {2}), strict, "x").ok());
  EXPECT_FALSE(ConvertNpyForParameter(i64, std::nullopt, S(PrimitiveType::kS8, {2}), strict, "x").ok());
  auto w = ConvertNpyForParameter(i64, std::nullopt, S(PrimitiveType::kS8, {2}), cast, "x");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->GetAsInt64(1), 44);
  NpyArray u64 = Array<uint64_t>({'u', 8}, {1}, {~uint64_t{0}});
  EXPECT_FALSE(ConvertNpyForParameter(u64, std::nullopt, S(PrimitiveType::kS64, {1}), strict, "x").ok());

  // pred from 0/1 only; complex to real only without an imaginary part.
  NpyArray bits = Array<int32_t>({'i', 4}, {3}, {0, 1, 1});
  EXPECT_TRUE(ConvertNpyForParameter(bits, std::nullopt, S(PrimitiveType::kPred, {3}), strict, "x").ok());
  NpyArray two = Array<int32_t>({'i', 4}, {1}, {2});
  EXPECT_FALSE(ConvertNpyForParameter(two, std::nullopt, S(PrimitiveType::kPred, {1}), strict, "x").ok());
  NpyArray cplx = Array<float>({'c', 8}, {2}, {1, 0, 2, 1});
  EXPECT_FALSE(ConvertNpyForParameter(cplx, std::nullopt, S(PrimitiveType::kF32, {2}), strict, "x").ok());
  NpyArray re = Array<float>({'f', 4}, {1}, {2});
  auto rc = ConvertNpyForParameter(re, std::nullopt, S(PrimitiveType::kC128, {1}), strict, "x");
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->GetAsComplex(0), std::complex<double>(2, 0));

  // Shapes must match.
  auto shape = ConvertNpyForParameter(re, std::nullopt, S(PrimitiveType::kF32, {}), strict, "x");
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("has shape (1,)"), std::string::npos);
}

TEST(NpyLiteralTest, KeepsParameterLayout) {
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 2});
  s.set_layout(Layout({0, 1}));
  NpyArray a = Array<float>({'f', 4}, {2, 2}, {1, 2, 3, 4});
  auto l = ConvertNpyForParameter(a, std::nullopt, s, {}, "x");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->shape(), s);
  EXPECT_EQ(l->Get<float>({0, 1}), 2.0f);  // logical order regardless of layout
}

}  // namespace
}  // namespace kiln
