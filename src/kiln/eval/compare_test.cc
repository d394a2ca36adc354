#include "kiln/eval/compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln {
namespace {

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, dims), v);
}

TEST(CompareTest, WithinToleranceIsOk) {
  Literal a = F32({3}, {1.0, 2.0, 3.0});
  Literal e = F32({3}, {1.0, 2.00001, 3.0});
  ArrayComparison c = CompareArrays(a, e, DefaultTolerance(PrimitiveType::kF32), "out0");
  EXPECT_TRUE(c.ok()) << c.ToString();
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_NEAR(c.max_abs_error, 1e-5, 1e-6);
  EXPECT_EQ(c.ToString().substr(0, 19), "out0 f32[3]: ok (rt");
}

TEST(CompareTest, ReportsTheWorstElement) {
  Literal a = F32({2, 2}, {1.0, 2.0, 3.0, 4.0});
  Literal e = F32({2, 2}, {1.1, 2.0, 3.0, 5.0});
  ArrayComparison c = CompareArrays(a, e, {1e-5, 1e-5, 0}, "out1");
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.worst_index, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.worst_actual, 4.0);
  EXPECT_EQ(c.worst_expected, 5.0);
  EXPECT_DOUBLE_EQ(c.worst_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(c.worst_rel_error, 0.2);
  EXPECT_EQ(c.ToString(),
            "out1 f32[2,2]: 2 of 4 elements differ (rtol 1.00e-05, atol 1.00e-05); worst at [1, 1]: "
            "actual 4, expected 5, abs err 1.00e+00, rel err 2.00e-01");
}

TEST(CompareTest, NanAndInfinityRules) {
  Tolerance tol{1e-5, 1e-5, 0};
  // NaN vs NaN in the same place matches.
  EXPECT_TRUE(CompareArrays(F32({2}, {NAN, 1}), F32({2}, {NAN, 1}), tol, "o").ok());
  // NaN on one side never passes, whatever the tolerance.
  ArrayComparison c = CompareArrays(F32({2}, {NAN, 1}), F32({2}, {0, 1}), {1e9, 1e9, 0}, "o");
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.nan_mismatches, 1);
  EXPECT_EQ(c.worst_index, (std::vector<int64_t>{0}));
  EXPECT_FALSE(CompareArrays(F32({1}, {1}), F32({1}, {NAN}), {1e9, 1e9, 0}, "o").ok());
  // Infinities match only the same infinity.
  EXPECT_TRUE(CompareArrays(F32({1}, {INFINITY}), F32({1}, {INFINITY}), tol, "o").ok());
  EXPECT_FALSE(CompareArrays(F32({1}, {INFINITY}), F32({1}, {-INFINITY}), tol, "o").ok());
  EXPECT_FALSE(CompareArrays(F32({1}, {1e30}), F32({1}, {INFINITY}), {1e9, 1e9, 0}, "o").ok());
}

TEST(CompareTest, IntegersAreExactAndTypesMayDiffer) {
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {3});
  Literal a = Literal::FromInt64s(s, {1, 2, 3});
  Literal e = Literal::FromInt64s(s, {1, 2, 4});
  ArrayComparison c = CompareArrays(a, e, {1, 1, 0}, "o");
  EXPECT_FALSE(c.ok());
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.worst_index, (std::vector<int64_t>{2}));
  // bf16 results against f32-widened expectations, by value.
  Literal b = Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kBF16, {2}), {0.1, 3.0});
  Literal w = F32({2}, {0.1, 3.0});
  EXPECT_TRUE(CompareArrays(b, w, DefaultTolerance(PrimitiveType::kBF16), "o").ok());
  EXPECT_FALSE(CompareArrays(b, w, DefaultTolerance(PrimitiveType::kF32), "o").ok());
}

TEST(CompareTest, ScaledToleranceAndShapes) {
  // A small result of a large computation: the scaled part covers it.
  Literal a = F32({2}, {100.0, 0.01});
  Literal e = F32({2}, {100.0, 0.0});
  EXPECT_FALSE(CompareArrays(a, e, {1e-3, 1e-5, 0}, "o").ok());
  EXPECT_TRUE(CompareArrays(a, e, kTf32Tolerance, "o").ok());
  ArrayComparison bad = CompareArrays(F32({2}, {1, 2}), F32({1, 2}, {1, 2}), {}, "o");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("differs"), std::string::npos);
}

TEST(CompareTest, TuplesFlattenAndOptionsOverride) {
  Literal t1 = Literal::MakeTuple({F32({1}, {1.0}), Literal::MakeTuple({F32({1}, {2.0}), Literal::Token()})});
  Literal t2 = Literal::MakeTuple({F32({1}, {1.0}), Literal::MakeTuple({F32({1}, {2.5}), Literal::Token()})});
  Comparison c = CompareLiterals(t1, t2, {});
  ASSERT_EQ(c.arrays.size(), 2u);
  EXPECT_TRUE(c.arrays[0].ok());
  EXPECT_FALSE(c.arrays[1].ok());
  EXPECT_EQ(c.arrays[1].name, "out1");
  CompareOptions loose;
  loose.atol = 1.0;
  EXPECT_TRUE(CompareLiterals(t1, t2, loose).ok());
  EXPECT_FALSE(CompareLiterals(t1, F32({1}, {1.0}), {}).ok());
  CompareOptions tf32;
  tf32.reference_tf32 = true;
  EXPECT_EQ(ToleranceFor(PrimitiveType::kF32, tf32).scaled_atol, kTf32Tolerance.scaled_atol);
  EXPECT_EQ(ToleranceFor(PrimitiveType::kS32, loose).atol, 0);
}

}  // namespace
}  // namespace kiln
