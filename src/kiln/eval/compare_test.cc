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

Literal Of(PrimitiveType t, std::vector<double> v) {
  return Literal::FromDoubles(Shape::ArrayWithDefaultLayout(t, {static_cast<int64_t>(v.size())}), v);
}

// The per-type tolerances let a wrong convert through; an exact tolerance does not.
TEST(CompareTest, ExactToleranceCatchesWrongConverts) {
  const Tolerance exact{.exact = true};
  // f32 1.005859375 -> bf16: rounds to 1.0078125, truncates to 1.
  Literal rounded = Of(PrimitiveType::kBF16, {1.0078125, 2.0});
  Literal truncated = Of(PrimitiveType::kBF16, {1.0, 2.0});
  EXPECT_TRUE(CompareArrays(truncated, rounded, DefaultTolerance(PrimitiveType::kBF16), "o").ok());
  ArrayComparison c = CompareArrays(truncated, rounded, exact, "o");
  EXPECT_FALSE(c.ok());
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, (std::vector<int64_t>{0}));
  EXPECT_EQ(c.worst_actual, 1.0);
  EXPECT_EQ(c.worst_expected, 1.0078125);
  EXPECT_NE(c.ToString().find("(exact)"), std::string::npos) << c.ToString();
  // f4e2m1fn: 2 for 1; f8e8m0fnu: 2 for 1 (both pass their type's tolerance).
  EXPECT_TRUE(CompareArrays(Of(PrimitiveType::kF4E2M1FN, {2}), Of(PrimitiveType::kF4E2M1FN, {1}),
                            DefaultTolerance(PrimitiveType::kF4E2M1FN), "o").ok());
  EXPECT_FALSE(CompareArrays(Of(PrimitiveType::kF4E2M1FN, {2}), Of(PrimitiveType::kF4E2M1FN, {1}), exact, "o").ok());
  EXPECT_TRUE(CompareArrays(Of(PrimitiveType::kF8E8M0FNU, {2}), Of(PrimitiveType::kF8E8M0FNU, {1}),
                            DefaultTolerance(PrimitiveType::kF8E8M0FNU), "o").ok());
  EXPECT_FALSE(CompareArrays(Of(PrimitiveType::kF8E8M0FNU, {2}), Of(PrimitiveType::kF8E8M0FNU, {1}), exact, "o").ok());
  // NaN matches any NaN; the sign of zero counts; one ulp of f32 counts.
  EXPECT_TRUE(CompareArrays(F32({2}, {NAN, -0.0}), F32({2}, {-NAN, -0.0}), exact, "o").ok());
  EXPECT_FALSE(CompareArrays(F32({1}, {0.0}), F32({1}, {-0.0}), exact, "o").ok());
  EXPECT_FALSE(CompareArrays(F32({1}, {1.0}), F32({1}, {std::nextafter(1.0f, 2.0f)}), exact, "o").ok());
  ArrayComparison n = CompareArrays(F32({2}, {1, NAN}), F32({2}, {2, 1}), exact, "o");
  EXPECT_EQ(n.mismatches, 2);
  EXPECT_EQ(n.nan_mismatches, 1);
  EXPECT_EQ(n.worst_index, (std::vector<int64_t>{1}));
  // bf16 actual against f32-widened expected values: by value.
  EXPECT_TRUE(CompareArrays(rounded, F32({2}, {1.0078125, 2.0}), exact, "o").ok());
}

TEST(CompareTest, OutputTraitsChooseExactnessAndTf32PerOutput) {
  Literal actual = Literal::MakeTuple({Of(PrimitiveType::kBF16, {1.0}), F32({1}, {1.0005})});
  Literal expected = Literal::MakeTuple({Of(PrimitiveType::kBF16, {1.0078125}), F32({1}, {1.0})});
  CompareOptions co;
  co.reference_tf32 = true;
  EXPECT_TRUE(CompareLiterals(actual, expected, co).ok());  // unknown outputs: the old tolerances
  // out0 a convert of an input, out1 no f32 product: exact, and f32 without the TF32 widening.
  co.outputs = {{.exact = true}, {.exact = false, .uses_f32_products = false}};
  Comparison c = CompareLiterals(actual, expected, co);
  ASSERT_EQ(c.arrays.size(), 2u);
  EXPECT_FALSE(c.arrays[0].ok());
  EXPECT_TRUE(c.arrays[0].exact);
  EXPECT_FALSE(c.arrays[1].ok()) << c.ToString();
  EXPECT_EQ(c.arrays[1].tolerance.rtol, DefaultTolerance(PrimitiveType::kF32).rtol);
  // out1 from an f32 dot: the TF32 tolerance.
  co.outputs[1].uses_f32_products = true;
  EXPECT_TRUE(CompareLiterals(actual, expected, co).arrays[1].ok());
  // Overrides of rtol/atol do not loosen an exact output.
  co.rtol = 1;
  co.atol = 1;
  EXPECT_FALSE(CompareLiterals(actual, expected, co).arrays[0].ok());
}

}  // namespace
}  // namespace kiln
