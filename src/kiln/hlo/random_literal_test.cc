#include "kiln/hlo/random_literal.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln {
namespace {

TEST(RandomLiteralTest, DeterministicPerSeedAndStream) {
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {4, 5});
  Literal a = MakeRandomLiteral(s, 7, 0);
  EXPECT_TRUE(a.BitwiseEquals(MakeRandomLiteral(s, 7, 0)));
  EXPECT_FALSE(a.BitwiseEquals(MakeRandomLiteral(s, 8, 0)));
  EXPECT_FALSE(a.BitwiseEquals(MakeRandomLiteral(s, 7, 1)));
  // Golden values: the generator is part of the contract (a seed reproduces a run anywhere).
  Shape v = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {5});
  EXPECT_EQ(MakeRandomLiteral(v, 42, 1).ToShortString(5),
            "f32[5] {0.7746379, -0.1777417, 0.29538575, -0.02068242, -0.015897024}");
  v.set_element_type(PrimitiveType::kS32);
  EXPECT_EQ(MakeRandomLiteral(v, 42, 1).ToShortString(5), "s32[5] {2, 4, 0, 0, -4}");
  std::vector<Literal> args = MakeRandomArguments({s, s}, 7);
  EXPECT_TRUE(args[0].BitwiseEquals(a));
  EXPECT_TRUE(args[1].BitwiseEquals(MakeRandomLiteral(s, 7, 1)));
}

TEST(RandomLiteralTest, RangesPerType) {
  auto check = [](PrimitiveType t, double lo, double hi) {
    Literal l = MakeRandomLiteral(Shape::ArrayWithDefaultLayout(t, {1000}), 1, 0);
    double mn = 1e300, mx = -1e300;
    for (int64_t i = 0; i < 1000; ++i) {
      double v = l.GetAsDouble(i);
      ASSERT_FALSE(std::isnan(v)) << PrimitiveTypeName(t);
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    EXPECT_GE(mn, lo) << PrimitiveTypeName(t);
    EXPECT_LE(mx, hi) << PrimitiveTypeName(t);
    EXPECT_LT(mn, mx) << PrimitiveTypeName(t) << ": not varied";
  };
  check(PrimitiveType::kF32, -1, 1);
  check(PrimitiveType::kF64, -1, 1);
  check(PrimitiveType::kBF16, -1, 1);
  check(PrimitiveType::kF16, -1, 1);
  check(PrimitiveType::kF8E4M3FN, -1, 1);
  check(PrimitiveType::kF8E5M2, -1, 1);
  check(PrimitiveType::kF4E2M1FN, -1, 1);
  check(PrimitiveType::kF8E8M0FNU, 1.0 / 16, 16);
  check(PrimitiveType::kS32, -4, 4);
  check(PrimitiveType::kS8, -4, 4);
  check(PrimitiveType::kS2, -2, 1);
  check(PrimitiveType::kS4, -4, 4);
  check(PrimitiveType::kU8, 0, 7);
  check(PrimitiveType::kU64, 0, 7);
  check(PrimitiveType::kU2, 0, 3);
  check(PrimitiveType::kU1, 0, 1);
  check(PrimitiveType::kPred, 0, 1);
  check(PrimitiveType::kC64, -1, 1);
}

TEST(RandomLiteralTest, NeverAllZeros) {
  // One-element arrays of narrow types are often zero by chance: never all of them.
  for (PrimitiveType t : {PrimitiveType::kPred, PrimitiveType::kU1, PrimitiveType::kS32,
                          PrimitiveType::kF4E2M1FN, PrimitiveType::kC64}) {
    for (uint64_t seed = 0; seed < 64; ++seed) {
      Literal l = MakeRandomLiteral(Shape::ArrayWithDefaultLayout(t, {1}), seed, 3);
      EXPECT_TRUE(IsComplexType(t) ? l.GetAsComplex(0) != std::complex<double>(0) : l.GetAsBool(0))
          << PrimitiveTypeName(t) << " seed " << seed;
    }
  }
}

TEST(RandomLiteralTest, TuplesAndTokens) {
  Shape s = Shape::Tuple({Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3}),
                          Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3}), Shape::Token()});
  Literal l = MakeRandomLiteral(s, 5, 0);
  ASSERT_EQ(l.tuple_size(), 3);
  EXPECT_FALSE(l.tuple_element(0).BitwiseEquals(l.tuple_element(1)));
  EXPECT_TRUE(l.tuple_element(2).shape().IsToken());
  Literal scalar = MakeRandomLiteral(Shape::Scalar(PrimitiveType::kS64), 5, 0);
  EXPECT_EQ(scalar.element_count(), 1);
}

// Issue 16: arrays too large to allocate are statuses, not std::bad_alloc. 2^61 bytes is within
// kiln's limit (2^62) and beyond any host's address space, so the allocation fails everywhere.
TEST(RandomLiteralTest, CreateFailsCleanly) {
  const Shape huge = Shape::Array(PrimitiveType::kS8, {int64_t{1} << 40, int64_t{1} << 21});
  auto lit = Literal::Create(huge, "a test array");
  ASSERT_FALSE(lit.ok());
  EXPECT_EQ(lit.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(lit.status().message(),
            "out of memory allocating 2305843009213693952 bytes for a test array (s8[1099511627776,2097152])");
  auto args = CreateRandomArguments({Shape::Scalar(PrimitiveType::kF32), huge}, 42);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(args.status().message().find("bytes for random input 1"), std::string::npos);
  // Larger than kiln supports: InvalidArgument before any allocation.
  auto over = Literal::Create(Shape::Array(PrimitiveType::kF32, {int64_t{1} << 40, int64_t{1} << 40}), "x");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  // Small arrays: the values MakeRandomArguments gives.
  std::vector<Shape> shapes = {Shape::Array(PrimitiveType::kF32, {3, 4}), Shape::Scalar(PrimitiveType::kS32)};
  auto made = CreateRandomArguments(shapes, 5);
  ASSERT_TRUE(made.ok());
  std::vector<Literal> expected = MakeRandomArguments(shapes, 5);
  ASSERT_EQ(made->size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE((*made)[i].BitwiseEquals(expected[i]));
}

}  // namespace
}  // namespace kiln
