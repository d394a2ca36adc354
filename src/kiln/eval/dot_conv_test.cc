// Tests of dot, ragged-dot, scaled-dot and convolution.
//
// dot_conv_cases.json (testdata/gen_eval_b_cases.py) holds dots checked against numpy in
// float64 (batch dims, several contracting dims, free-dimension order, mixed types, integer
// wraparound, the single rounding of bf16 results) and convolutions checked against XLA's CPU
// convolution through jax in float64 (padding incl. negative, strides, both dilations, feature
// groups, depthwise, batch groups, window reversal, 0-3 spatial dims, integer results).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kiln/eval/evaluator.h"
#include "kiln/eval/parallel.h"
#include "kiln/eval/reference_cases.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

using reference_cases::RunHlo;

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
Literal S32(std::vector<int64_t> dims, std::vector<int64_t> v) {
  return Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, std::move(dims)), v);
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

TEST(DotConv, ReferenceCases) {
  EXPECT_GE(reference_cases::RunJsonCases("dot_conv_cases.json"), 27);
}

TEST(DotConv, HandCheckedMatmul) {
  // [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]]
  auto r = RunHlo(R"(
ENTRY e {
  a = f32[2,2] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                  {F32({2, 2}, {1, 2, 3, 4}), F32({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{19, 22, 43, 50}));
}

TEST(DotConv, RaggedDotNonContracting) {
  // Rows 0-1 use group 0 (identity), no rows in group 1, rows 2-3 use group 2 (swap), row 4 is
  // past the groups and comes out zero.
  auto r = RunHlo(R"(
ENTRY e {
  a = f32[5,2] parameter(0)
  b = f32[3,2,2] parameter(1)
  g = s32[3] parameter(2)
  ROOT d = f32[5,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})",
                  {F32({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
                   F32({3, 2, 2}, {1, 0, 0, 1, 9, 9, 9, 9, 0, 1, 1, 0}), S32({3}, {2, 0, 2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{1, 2, 3, 4, 6, 5, 8, 7, 0, 0}));
}

TEST(DotConv, RaggedDotContracting) {
  // Group 0 sums over k in [0, 2), group 1 over [2, 5).
  auto r = RunHlo(R"(
ENTRY e {
  a = f32[2,5] parameter(0)
  b = f32[5,2] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = f32[2,2,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
})",
                  {F32({2, 5}, {1, 2, 3, 4, 5, 1, 1, 1, 1, 1}),
                   F32({5, 2}, {1, 0, 0, 1, 1, 0, 0, 1, 1, 1}), S32({2}, {2, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{1, 2, 1, 1, 8, 9, 2, 2}));
}

TEST(DotConv, RaggedDotBatch) {
  // A ragged batch dimension leaves a plain batched dot (jax.lax.ragged_dot_general's
  // definition): entry 2, past the groups, is computed like the others.
  auto r = RunHlo(
      R"(
ENTRY e {
  a = f32[3,1,2] parameter(0)
  b = f32[3,2,1] parameter(1)
  g = s32[2] parameter(2)
  ROOT d = f32[3,1,1] ragged-dot(a, b, g), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
})",
      {F32({3, 1, 2}, {1, 2, 3, 4, 5, 6}), F32({3, 2, 1}, {1, 1, 2, 2, 3, 3}), S32({2}, {1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{3, 14, 33}));
}

TEST(DotConv, ScaledDot) {
  // lhs scaled in blocks of 2 along k: [[1,1,2,2],[10,20,0,0]]; rhs scaled by a scalar 2.
  auto r = RunHlo(R"(
ENTRY e {
  a = f32[2,4] parameter(0)
  b = f32[4,2] parameter(1)
  sa = f32[2,2] parameter(2)
  sb = f32[] parameter(3)
  ROOT d = f32[2,2] scaled-dot(a, b, sa, sb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                  {F32({2, 4}, {1, 1, 1, 1, 1, 2, 3, 4}), F32({4, 2}, {1, 0, 0, 1, 1, 1, 1, 0}),
                   F32({2, 2}, {1, 2, 10, 0}), F32({}, {2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{10, 6, 20, 40}));
}

TEST(DotConv, ConvolutionHandChecked) {
  // 1-D: input [1,2,3,4], kernel [1,10], pad 1 low: outputs 0*1+1*10, 1+20, 2+30, 3+40.
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[1,1,4] parameter(0)
  k = f32[1,1,2] parameter(1)
  ROOT c = f32[1,1,4] convolution(x, k), window={size=2 pad=1_0}, dim_labels=bf0_oi0->bf0
})",
                  {F32({1, 1, 4}, {1, 2, 3, 4}), F32({1, 1, 2}, {1, 10})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{10, 21, 32, 43}));
}

TEST(DotConv, BadGroupCountIsAnError) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[1,3,4] parameter(0)
  k = f32[1,1,2] parameter(1)
  ROOT c = f32[1,1,3] convolution(x, k), window={size=2}, dim_labels=bf0_oi0->bf0, feature_group_count=2
})",
                  {F32({1, 3, 4}, std::vector<double>(12, 1)), F32({1, 1, 2}, {1, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("group"), std::string::npos) << r.status().ToString();
}

TEST(DotConv, SparseDotIsAClearUnsupported) {
  // Not an operand-count error: a structured-sparsity dot says what it is.
  auto r = RunHlo(R"(
ENTRY e {
  a = f32[4,8] parameter(0)
  b = f32[16,4] parameter(1)
  m = u16[4,1] parameter(2)
  ROOT d = f32[4,4] dot(a, b, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sparsity=L.1@2:4
})",
                  {Literal(Shape::Array(PrimitiveType::kF32, {4, 8})), Literal(Shape::Array(PrimitiveType::kF32, {16, 4})),
                   Literal(Shape::Array(PrimitiveType::kU16, {4, 1}))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().ToString();
  EXPECT_NE(r.status().message().find("unsupported: sparse dot %d"), std::string::npos) << r.status().ToString();
}

TEST(DotConv, PackedNibbleIsUnsupported) {
  auto r = RunHlo(R"(
ENTRY e {
  a = s8[2,2] parameter(0)
  b = s8[2,2] parameter(1)
  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={packed_nibble,packed_nibble}
})",
                  {Literal(Shape::Array(PrimitiveType::kS8, {2, 2})),
                   Literal(Shape::Array(PrimitiveType::kS8, {2, 2}))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().ToString();
  EXPECT_NE(r.status().message().find("unsupported: dot"), std::string::npos);
}

// eval/parallel.h: a dot and a convolution large enough to run in parallel give the serial
// loop's results bit for bit, whatever the thread count (each element is one thread's, summed
// in the serial order).
StatusOr<Literal> RunWithThreads(std::string_view hlo, const std::vector<Literal>& args, int threads) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(hlo));
  EvaluatorOptions options;
  options.threads = threads;
  Evaluator evaluator(options);
  return evaluator.Run(*module, args);
}

Literal RandomF32(std::vector<int64_t> dims, uint32_t seed) {
  Shape shape = Shape::Array(PrimitiveType::kF32, std::move(dims));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(shape.num_elements());
  for (double& x : v) x = u(gen);
  return Literal::FromDoubles(shape, v);
}

void ExpectSameForEveryThreadCount(std::string_view hlo, const std::vector<Literal>& args) {
  auto serial = RunWithThreads(hlo, args, 1);
  ASSERT_TRUE(serial.ok()) << serial.status().ToString();
  for (int threads : {0, 2, 3, 7}) {
    auto parallel = RunWithThreads(hlo, args, threads);
    ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
    ASSERT_EQ(parallel->size_bytes(), serial->size_bytes());
    EXPECT_EQ(std::memcmp(parallel->untyped_data(), serial->untyped_data(), serial->size_bytes()), 0)
        << "threads " << threads;
  }
}

TEST(DotConv, ParallelDotIsBitIdentical) {
  // 2 x 67 x 300 x 211: above kEvalParallelMinWork, rows not a multiple of the 8-row blocks.
  static_assert(int64_t{2} * 67 * 300 * 211 > eval_internal::kEvalParallelMinWork);
  ExpectSameForEveryThreadCount(R"(
ENTRY e {
  a = f32[2,67,300] parameter(0)
  b = f32[2,300,211] parameter(1)
  ROOT d = f32[2,67,211] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})",
                                {RandomF32({2, 67, 300}, 1), RandomF32({2, 300, 211}, 2)});
}

TEST(DotConv, ParallelConvolutionIsBitIdentical) {
  // Strided, padded, two feature groups; 3 x 15 x 13 outputs x 48 features x 9 taps x 24 inputs.
  ExpectSameForEveryThreadCount(R"(
ENTRY e {
  x = f32[3,30,26,48] parameter(0)
  w = f32[3,3,24,48] parameter(1)
  ROOT c = f32[3,15,13,48] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
})",
                                {RandomF32({3, 30, 26, 48}, 3), RandomF32({3, 3, 24, 48}, 4)});
}

}  // namespace
}  // namespace kiln
