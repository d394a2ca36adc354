#include "kiln/autotune/output_compare.h"

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/float_types.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/literal.h"

namespace kiln::autotune {
namespace {

Shape F32(int64_t n) { return Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {n}); }

// A HIGHEST-precision GEMM is held to f32 tolerance: an error of TF32's size (2^-11 relative
// per product, here 5e-4 of the scale) that the default f32 rtol lets through fails it; f32
// rounding noise passes.
TEST(OutputCompareTest, HighestPrecisionGemmIsCheckedAtF32Tolerance) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  a = f32[8,16] parameter(0)  b = f32[16,4] parameter(1)
  d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  g = f32[8,4] custom-call(a, b), custom_call_target="__cublas$gemm", backend_config={"precision":"highest"}
  ROOT t = (f32[8,4], f32[8,4], f32[8,4]) tuple(d, h, g)
})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const HloInstruction* root = (*m)->entry_computation()->root_instruction();
  EXPECT_FALSE(AsksHighestPrecision(*root->operand(0)));
  EXPECT_TRUE(AsksHighestPrecision(*root->operand(1)));
  EXPECT_TRUE(AsksHighestPrecision(*root->operand(2)));  // a library call's config
  EXPECT_EQ(CandidateRtol(PrimitiveType::kF32, true, -1), kHighestF32Rtol);
  EXPECT_EQ(CandidateRtol(PrimitiveType::kC64, true, -1), kHighestF32Rtol);
  EXPECT_EQ(CandidateRtol(PrimitiveType::kF32, false, -1), DefaultTolerance(PrimitiveType::kF32).rtol);
  EXPECT_EQ(CandidateRtol(PrimitiveType::kF64, true, -1), DefaultTolerance(PrimitiveType::kF64).rtol);
  EXPECT_EQ(CandidateRtol(PrimitiveType::kF32, true, 0.5), 0.5);  // an explicit rtol wins
  std::vector<float> expected(1000), tf32(1000), rounded(1000);
  for (int i = 0; i < 1000; ++i) {
    expected[i] = std::sin(0.37f * i);
    tf32[i] = expected[i] + 5e-4f * (i % 2 ? 1 : -1);
    rounded[i] = expected[i] * (1 + 1e-6f);
  }
  const double strict = CandidateRtol(PrimitiveType::kF32, true, -1);
  const double loose = CandidateRtol(PrimitiveType::kF32, false, -1);
  EXPECT_FALSE(CompareArrays(F32(1000), tf32.data(), expected.data(), strict).ok);
  EXPECT_TRUE(CompareArrays(F32(1000), tf32.data(), expected.data(), loose).ok);
  EXPECT_TRUE(CompareArrays(F32(1000), rounded.data(), expected.data(), strict).ok);
}

TEST(OutputCompareTest, IntegersAreExact) {
  std::vector<int32_t> a = {1, 2, 3}, b = {1, 2, 4};
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {3});
  EXPECT_TRUE(CompareArrays(s, a.data(), a.data()).ok);
  CompareResult r = CompareArrays(s, b.data(), a.data());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 2);
  EXPECT_EQ(r.ToString(), "1 element differ; first at 2: 4 vs 3");
}

TEST(OutputCompareTest, FloatsWithinTheWrittenTolerance) {
  std::vector<float> expected = {1.0f, -0.5f, 0.25f, 2.0f};
  std::vector<float> close = {1.005f, -0.503f, 0.252f, 2.01f};  // < 1e-2 relative
  std::vector<float> off = {1.0f, -0.5f, 0.35f, 2.0f};
  EXPECT_TRUE(CompareArrays(F32(4), close.data(), expected.data()).ok);
  EXPECT_FALSE(CompareArrays(F32(4), off.data(), expected.data()).ok);
  EXPECT_FALSE(CompareArrays(F32(4), close.data(), expected.data(), /*rtol=*/1e-4).ok);
}

TEST(OutputCompareTest, CancellationNoiseIsScaledByTheArraysMagnitude) {
  // A sum of large terms that cancels to ~0: rounding noise relative to the terms passes, a
  // real error of the terms' size does not.
  std::vector<float> expected(100, 30.0f), got(100, 30.0f);
  expected[7] = 0.0f;
  got[7] = 0.05f;
  EXPECT_TRUE(CompareArrays(F32(100), got.data(), expected.data()).ok);
  got[7] = 3.0f;
  EXPECT_FALSE(CompareArrays(F32(100), got.data(), expected.data()).ok);
}

TEST(OutputCompareTest, SpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> expected = {nan, inf, -inf, 1};
  std::vector<float> same = {nan, inf, -inf, 1};
  EXPECT_TRUE(CompareArrays(F32(4), same.data(), expected.data()).ok);
  std::vector<float> swapped = {1, inf, inf, 1};
  CompareResult r = CompareArrays(F32(4), swapped.data(), expected.data());
  EXPECT_EQ(r.mismatches, 2);
  std::vector<float> nan_where_value = {nan, inf, -inf, nan};
  EXPECT_FALSE(CompareArrays(F32(4), nan_where_value.data(), expected.data()).ok);
}

TEST(OutputCompareTest, NarrowTypesUseWiderTolerances) {
  EXPECT_EQ(DefaultTolerance(PrimitiveType::kF64).rtol, 1e-6);
  EXPECT_EQ(DefaultTolerance(PrimitiveType::kBF16).rtol, 5e-2);
  EXPECT_EQ(DefaultTolerance(PrimitiveType::kF8E4M3FN).rtol, 0.25);
  EXPECT_EQ(DefaultTolerance(PrimitiveType::kS8).rtol, 0);
  std::vector<bfloat16> expected = {bfloat16(1.0f), bfloat16(2.0f)};
  std::vector<bfloat16> one_ulp = {bfloat16(1.0078125f), bfloat16(2.0f)};
  std::vector<bfloat16> wrong = {bfloat16(1.25f), bfloat16(2.0f)};
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kBF16, {2});
  EXPECT_TRUE(CompareArrays(s, one_ulp.data(), expected.data()).ok);
  EXPECT_FALSE(CompareArrays(s, wrong.data(), expected.data()).ok);
}

// Large arrays take the threaded fast path: the verdict, count and first mismatch are those of
// an element-by-element scan.
TEST(OutputCompareTest, LargeArraysCountEveryMismatchInOrder) {
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kBF16, PrimitiveType::kF16,
                             PrimitiveType::kF64}) {
    SCOPED_TRACE(PrimitiveTypeName(type));
    const int64_t n = (3 << 20) + 17;
    Shape s = Shape::ArrayWithDefaultLayout(type, {n});
    Literal e(s), g(s);
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(i % 97) / 97.0 - 0.5;
      e.SetFromDouble(i, v);
      g.SetFromDouble(i, v);
    }
    EXPECT_TRUE(CompareArrays(s, g.untyped_data(), e.untyped_data()).ok);
    g.SetFromDouble(2'500'000, 9.0);
    g.SetFromDouble(n - 1, std::nan(""));
    g.SetFromDouble(1'000'001, -9.0);
    CompareResult r = CompareArrays(s, g.untyped_data(), e.untyped_data());
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.mismatches, 3);
    EXPECT_EQ(r.first_mismatch, 1'000'001);
    EXPECT_EQ(r.got, -9.0);
  }
}

TEST(OutputCompareTest, ComplexComparesMagnitudes) {
  using C = std::complex<float>;
  std::vector<C> expected = {C(1, 1), C(0, -2)};
  std::vector<C> close = {C(1.001f, 0.999f), C(0, -2.001f)};
  std::vector<C> wrong = {C(1, -1), C(0, -2)};
  Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kC64, {2});
  EXPECT_TRUE(CompareArrays(s, close.data(), expected.data()).ok);
  EXPECT_FALSE(CompareArrays(s, wrong.data(), expected.data()).ok);
}

}  // namespace
}  // namespace kiln::autotune
