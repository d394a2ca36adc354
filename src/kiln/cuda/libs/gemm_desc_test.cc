// GemmDesc validation and the row-major -> column-major mapping, without a GPU (label cpu).
//
// The mapping is checked numerically: a host column-major GEMM that follows BLAS semantics
// (op(A) (m x k) * op(B) (k x n), leading dimensions, batch strides) runs on the mapped
// description over the very buffers a row-major caller would pass, and must reproduce the
// row-major product computed directly, for every combination of transposes, batching,
// broadcasting and padded leading dimensions.
#include "kiln/cuda/libs/gemm_desc.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/runtime/test_macros.h"

namespace kiln::cuda::libs {
namespace {

GemmDesc F32Desc(int64_t batch, int64_t m, int64_t n, int64_t k) {
  GemmDesc d;
  d.batch = batch;
  d.m = m;
  d.n = n;
  d.k = k;
  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kF32;
  return d;
}

// BLAS-style column-major batched GEMM on host memory: C = op(A) op(B) (alpha 1, beta 0).
void ColumnMajorReference(const ColumnMajorGemm& g, const std::vector<double>& a,
                          const std::vector<double>& b, std::vector<double>& c) {
  for (int64_t p = 0; p < g.batch; ++p) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          // op(A)[i, l]: A[i, l] or A[l, i]; column-major element (r, c) at r + c * ld.
          const int64_t ai = g.trans_a ? l + i * g.a.ld : i + l * g.a.ld;
          const int64_t bi = g.trans_b ? j + l * g.b.ld : l + j * g.b.ld;
          sum += a[p * g.a.batch_stride + ai] * b[p * g.b.batch_stride + bi];
        }
        c[p * g.c.batch_stride + i + j * g.c.ld] = sum;
      }
    }
  }
}

struct Case {
  bool lhs_t, rhs_t, out_t;
  int64_t batch;
  bool broadcast_rhs;
  int64_t pad;  // extra elements per stored row (leading dim = cols + pad)
};

class MappingTest : public ::testing::TestWithParam<Case> {};

TEST_P(MappingTest, ColumnMajorLibraryComputesTheRowMajorProduct) {
  const Case cs = GetParam();
  const int64_t m = 5, n = 3, k = 4;
  GemmDesc d = F32Desc(cs.batch, m, n, k);
  d.lhs.transposed = cs.lhs_t;
  d.rhs.transposed = cs.rhs_t;
  d.out.transposed = cs.out_t;
  // Stored (rows, cols) of each operand.
  const int64_t lr = cs.lhs_t ? k : m, lc = cs.lhs_t ? m : k;
  const int64_t rr = cs.rhs_t ? n : k, rc = cs.rhs_t ? k : n;
  const int64_t orows = cs.out_t ? n : m, ocols = cs.out_t ? m : n;
  if (cs.pad > 0) {
    d.lhs.leading_dim = lc + cs.pad;
    d.rhs.leading_dim = rc + cs.pad;
    d.out.leading_dim = ocols + cs.pad;
  }
  const int64_t lld = lc + cs.pad, rld = rc + cs.pad, old = ocols + cs.pad;
  if (cs.broadcast_rhs) d.rhs.batch_stride = 0;
  const int64_t lstride = lr * lld, rstride = cs.broadcast_rhs ? 0 : rr * rld,
                ostride = orows * old;
  KILN_ASSERT_OK_AND_ASSIGN(ColumnMajorGemm g, MapToColumnMajor(d));

  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> lhs(cs.batch * lstride), rhs(std::max<int64_t>(1, cs.batch) * rr * rld);
  for (double& v : lhs) v = dist(rng);
  for (double& v : rhs) v = dist(rng);
  std::vector<double> out(cs.batch * ostride, -999);

  // The library sees (A, B) = (rhs, lhs) when swapped.
  const std::vector<double>& a = g.swapped ? rhs : lhs;
  const std::vector<double>& b = g.swapped ? lhs : rhs;
  ColumnMajorReference(g, a, b, out);

  for (int64_t p = 0; p < cs.batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double x = cs.lhs_t ? lhs[p * lstride + l * lld + i] : lhs[p * lstride + i * lld + l];
          const double y = cs.rhs_t ? rhs[p * rstride + j * rld + l] : rhs[p * rstride + l * rld + j];
          want += x * y;
        }
        const double got = cs.out_t ? out[p * ostride + j * old + i] : out[p * ostride + i * old + j];
        ASSERT_NEAR(got, want, 1e-12) << "batch " << p << " [" << i << "," << j << "]";
      }
    }
  }
  // Padding stays untouched.
  if (cs.pad > 0) {
    EXPECT_EQ(out[ocols], -999);
  }
  EXPECT_EQ(g.swapped, !cs.out_t);
  EXPECT_EQ(ColumnMajorBytes(g.c, g.batch, PrimitiveType::kF32),
            static_cast<uint64_t>(((cs.batch - 1) * ostride + (orows - 1) * old + ocols) * 4));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (bool lt : {false, true})
    for (bool rt : {false, true})
      for (bool ot : {false, true})
        for (int64_t batch : {1, 3})
          for (bool bc : {false, true})
            for (int64_t pad : {0, 2}) {
              if (bc && batch == 1) continue;
              cases.push_back({lt, rt, ot, batch, bc, pad});
            }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, MappingTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return std::string(c.lhs_t ? "LT" : "LN") + (c.rhs_t ? "RT" : "RN") +
                                  (c.out_t ? "OT" : "ON") + "_b" + std::to_string(c.batch) +
                                  (c.broadcast_rhs ? "_bcast" : "") +
                                  (c.pad ? "_padded" : "");
                         });

TEST(GemmDescTest, PlainProductMapsToSwappedNN) {
  KILN_ASSERT_OK_AND_ASSIGN(ColumnMajorGemm g, MapToColumnMajor(F32Desc(1, 64, 16, 32)));
  EXPECT_TRUE(g.swapped);
  EXPECT_FALSE(g.trans_a);
  EXPECT_FALSE(g.trans_b);
  EXPECT_EQ(g.m, 16);
  EXPECT_EQ(g.n, 64);
  EXPECT_EQ(g.k, 32);
  EXPECT_EQ(g.a.rows, 16);  // rhs [32,16] row-major = [16,32] column-major
  EXPECT_EQ(g.a.cols, 32);
  EXPECT_EQ(g.a.ld, 16);
  EXPECT_EQ(g.b.rows, 32);  // lhs [64,32] row-major = [32,64] column-major
  EXPECT_EQ(g.b.ld, 32);
  EXPECT_EQ(g.c.rows, 16);
  EXPECT_EQ(g.c.cols, 64);
  EXPECT_EQ(g.c.ld, 16);
}

TEST(GemmDescTest, F32UsesTf32UnlessHighest) {
  GemmDesc d = F32Desc(1, 8, 8, 8);
  KILN_ASSERT_OK_AND_ASSIGN(GemmTypes t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kF32Tf32);
  d.precision = Precision::kHigh;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kF32Tf32);
  d.precision = Precision::kHighest;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kF32);
}

TEST(GemmDescTest, TypeCombinations) {
  GemmDesc d = F32Desc(1, 8, 8, 8);
  d.lhs.dtype = d.rhs.dtype = PrimitiveType::kBF16;
  d.out.dtype = PrimitiveType::kF32;
  KILN_ASSERT_OK_AND_ASSIGN(GemmTypes t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kF32);
  EXPECT_EQ(t.scale, PrimitiveType::kF32);
  EXPECT_EQ(t.d, PrimitiveType::kF32);
  d.out.dtype = PrimitiveType::kF16;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);

  d.lhs.dtype = d.rhs.dtype = PrimitiveType::kS8;
  d.out.dtype = PrimitiveType::kS32;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kS32);
  EXPECT_EQ(t.scale, PrimitiveType::kS32);
  d.alpha = 0.5;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d.alpha = 1;

  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kC64;
  d.alpha_imag = 2;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.scale, PrimitiveType::kC64);
  d.epilogue = GemmEpilogue::kRelu;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);

  d = F32Desc(1, 8, 8, 8);
  d.alpha_imag = 1;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);

  d = F32Desc(1, 8, 8, 8);
  d.lhs.dtype = PrimitiveType::kF16;
  Status s = ResolveGemmTypes(d).status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("f16 x f32 -> f32"), std::string::npos) << s.message();
}

TEST(GemmDescTest, F8NeedsKContiguousOperands) {
  GemmDesc d = F32Desc(1, 16, 16, 32);
  d.lhs.dtype = PrimitiveType::kF8E4M3FN;
  d.rhs.dtype = PrimitiveType::kF8E5M2;
  d.out.dtype = PrimitiveType::kBF16;
  d.has_a_scale = d.has_b_scale = true;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);  // rhs [k,n]
  d.rhs.transposed = true;                                                      // rhs [n,k]
  KILN_ASSERT_OK_AND_ASSIGN(GemmTypes t, ResolveGemmTypes(d));
  EXPECT_EQ(t.compute, GemmCompute::kF32);
  KILN_ASSERT_OK_AND_ASSIGN(ColumnMajorGemm g, MapToColumnMajor(d));
  EXPECT_TRUE(g.trans_a);  // cuBLASLt's "TN" form on Hopper
  EXPECT_FALSE(g.trans_b);
  d.lhs.transposed = true;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);
  d.lhs.transposed = false;
  d.lhs.dtype = PrimitiveType::kF8E5M2;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);  // e5m2 x e5m2
  d.lhs.dtype = PrimitiveType::kF8E4M3FN;
  d.has_d_scale = true;  // only for f8 outputs
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d.out.dtype = PrimitiveType::kF8E4M3FN;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.c, PrimitiveType::kBF16);
  d.beta = 1;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);
}

TEST(GemmDescTest, ScalesOnlyForF8) {
  GemmDesc d = F32Desc(1, 8, 8, 8);
  d.has_a_scale = true;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
}

TEST(GemmDescTest, BiasRunsAlongTheLastDimension) {
  GemmDesc d = F32Desc(1, 8, 8, 8);
  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kBF16;
  d.epilogue = GemmEpilogue::kBiasGelu;
  KILN_ASSERT_OK_AND_ASSIGN(GemmTypes t, ResolveGemmTypes(d));
  EXPECT_EQ(t.bias, PrimitiveType::kBF16);
  d.out.transposed = true;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);
  d.out.transposed = false;
  d.bias_dtype = PrimitiveType::kF32;  // bf16 out takes a bf16 bias only
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);
  d.out.dtype = PrimitiveType::kF32;  // f32 out of bf16 inputs: f32 or bf16 bias
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.bias, PrimitiveType::kF32);
  d.bias_dtype = PrimitiveType::kBF16;
  KILN_ASSERT_OK_AND_ASSIGN(t, ResolveGemmTypes(d));
  EXPECT_EQ(t.bias, PrimitiveType::kBF16);
  EXPECT_TRUE(GemmEpilogueHasBias(GemmEpilogue::kBiasRelu));
  EXPECT_FALSE(GemmEpilogueHasBias(GemmEpilogue::kGelu));
}

TEST(GemmDescTest, RejectsBadSizesAndStrides) {
  GemmDesc d = F32Desc(1, 8, 8, 8);
  d.m = 0;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d = F32Desc(1, 8, 8, 0);
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kUnimplemented);
  d = F32Desc(1, 8, 8, 8);
  d.lhs.leading_dim = 7;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d = F32Desc(4, 8, 8, 8);
  d.out.batch_stride = 0;  // outputs cannot be broadcast
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d.out.batch_stride = 63;  // overlapping outputs
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
  d.out.batch_stride = 64;
  KILN_EXPECT_OK(ResolveGemmTypes(d));
  d.min_alignment_bytes = 48;
  EXPECT_EQ(ResolveGemmTypes(d).status().code(), StatusCode::kInvalidArgument);
}

TEST(GemmDescTest, ToStringNamesTheInterestingParts) {
  GemmDesc d = F32Desc(2, 8, 4, 16);
  d.lhs.transposed = true;
  d.beta = 1;
  d.epilogue = GemmEpilogue::kBiasRelu;
  EXPECT_EQ(d.ToString(),
            "gemm batch=2 m=8 n=4 k=16 lhs=f32^T rhs=f32 out=f32 beta=1 epilogue=bias_relu");
}

}  // namespace
}  // namespace kiln::cuda::libs
