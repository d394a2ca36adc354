// Dot (Eigen) and transpose kernels against the evaluator.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/conv_indirect.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/hlo/parser.h"

namespace kiln::cpu {
namespace {

using testing::CheckHlo;

TEST(DotKernelTest, CanonicalAndTransposedForms) {
  const char* cases[] = {
      // [M,K] x [K,N]
      "x = f32[33,65] parameter(0)\n y = f32[65,17] parameter(1)\n"
      " ROOT d = f32[33,17] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      // transposed lhs and rhs
      "x = f32[65,33] parameter(0)\n y = f32[17,65] parameter(1)\n"
      " ROOT d = f32[33,17] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={1}",
      // batched
      "x = f32[3,20,30] parameter(0)\n y = f32[3,30,11] parameter(1)\n"
      " ROOT d = f32[3,20,11] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2},"
      " rhs_batch_dims={0}, rhs_contracting_dims={1}",
      // batched, transposed rhs (attention scores)
      "x = f32[2,4,16,8] parameter(0)\n y = f32[2,4,16,8] parameter(1)\n"
      " ROOT d = f32[2,4,16,16] dot(x, y), lhs_batch_dims={0,1}, lhs_contracting_dims={3},"
      " rhs_batch_dims={0,1}, rhs_contracting_dims={3}",
      // batch dim not leading: permuted operands
      "x = f32[20,3,30] parameter(0)\n y = f32[30,3,11] parameter(1)\n"
      " ROOT d = f32[3,20,11] dot(x, y), lhs_batch_dims={1}, lhs_contracting_dims={2},"
      " rhs_batch_dims={1}, rhs_contracting_dims={0}",
      // two contracting dims, paired in swapped order
      "x = f32[5,6,7] parameter(0)\n y = f32[7,6,4] parameter(1)\n"
      " ROOT d = f32[5,4] dot(x, y), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}",
      // matrix-vector, vector-vector, outer product
      "x = f32[40,50] parameter(0)\n y = f32[50] parameter(1)\n"
      " ROOT d = f32[40] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      "x = f32[50] parameter(0)\n y = f32[50] parameter(1)\n"
      " ROOT d = f32[] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
      "x = f32[7] parameter(0)\n y = f32[9] parameter(1)\n ROOT d = f32[7,9] dot(x, y)",
      // empty contraction and empty result
      "x = f32[4,0] parameter(0)\n y = f32[0,3] parameter(1)\n"
      " ROOT d = f32[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      "x = f32[0,5] parameter(0)\n y = f32[5,3] parameter(1)\n"
      " ROOT d = f32[0,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    CheckHlo(StrCat("ENTRY e {\n ", c, "\n}\n"));
  }
}

TEST(DotKernelTest, Types) {
  struct Case {
    const char *lt, *rt, *out;
  };
  const Case cases[] = {{"f64", "f64", "f64"}, {"bf16", "bf16", "bf16"}, {"bf16", "bf16", "f32"},
                        {"f16", "f16", "f16"}, {"c64", "c64", "c64"},    {"c128", "c128", "c128"},
                        {"s8", "s8", "s32"},   {"s32", "s32", "s32"},    {"u8", "u8", "u32"},
                        {"s64", "s64", "s64"}, {"pred", "pred", "pred"}, {"f32", "bf16", "f32"},
                        {"s8", "s8", "f32"},   {"f8e4m3fn", "f8e4m3fn", "f32"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat(c.lt, " x ", c.rt, " -> ", c.out));
    CheckHlo(StrCat("ENTRY e {\n x = ", c.lt, "[3,19,23] parameter(0)\n y = ", c.rt,
                    "[3,23,14] parameter(1)\n ROOT d = ", c.out,
                    "[3,19,14] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                    "rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n"));
  }
}

TEST(DotKernelTest, LargeMatrixVectorSplitAcrossThreads) {
  const char* cases[] = {
      "x = f32[1000,300] parameter(0)\n y = f32[300] parameter(1)\n"
      " ROOT d = f32[1000] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      "x = f32[300,1000] parameter(0)\n y = f32[300] parameter(1)\n"
      " ROOT d = f32[1000] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
      "x = f32[300] parameter(0)\n y = f32[300,1000] parameter(1)\n"
      " ROOT d = f32[1000] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
      "x = f32[1,300] parameter(0)\n y = f32[1000,300] parameter(1)\n"
      " ROOT d = f32[1,1000] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}",
      "x = f64[2,1000,300] parameter(0)\n y = f64[2,300,1] parameter(1)\n"
      " ROOT d = f64[2,1000,1] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2},"
      " rhs_batch_dims={0}, rhs_contracting_dims={1}",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    CheckHlo(StrCat("ENTRY e {\n ", c, "\n}\n"));
  }
}

TEST(DotKernelTest, LargeMultiThreaded) {
  CheckHlo(R"(
ENTRY e {
  x = f32[300,257] parameter(0)
  y = f32[257,190] parameter(1)
  ROOT d = f32[300,190] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}

// The A/B switches of CpuKernelOptions: f32 GEMMs all on Eigen (flag cpu_gemm_kernel=eigen),
// Eigen's contractions on a second pool (cpu_gemm_pool=separate); same results either way.
TEST(DotKernelTest, EigenOnlyAndSeparatePool) {
  for (bool kiln_kernels : {true, false}) {
    for (bool separate_pool : {false, true}) {
      SCOPED_TRACE(StrCat(kiln_kernels ? "kiln" : "eigen", " kernels, ",
                          separate_pool ? "separate" : "shared", " pool"));
      testing::CheckOptions o;
      o.rtol = 1e-5;
      o.atol = 1e-5;
      o.kernel.gemm_kiln_kernels = kiln_kernels;
      o.kernel.gemm_separate_pool = separate_pool;
      for (const char* dims : {"x = f32[300,257] parameter(0)\n y = f32[257,190] parameter(1)\n"
                               " ROOT d = f32[300,190] dot(x, y)",
                               "x = f32[65,33] parameter(0)\n y = f32[33,17] parameter(1)\n"
                               " ROOT d = f32[65,17] dot(x, y)"})
        CheckHlo(StrCat("ENTRY e {\n ", dims,
                        ", lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"),
                 "", o);
      if (HasFailure()) return;
    }
  }
}

TEST(TransposeKernelTest, Permutations) {
  const char* cases[] = {
      "x = f32[67,45] parameter(0)\n ROOT t = f32[45,67] transpose(x), dimensions={1,0}",
      "x = bf16[3,70,40] parameter(0)\n ROOT t = bf16[40,3,70] transpose(x), dimensions={2,0,1}",
      "x = s8[5,6,7,8] parameter(0)\n ROOT t = s8[8,6,5,7] transpose(x), dimensions={3,1,0,2}",
      "x = f64[4,1,9,1,3] parameter(0)\n ROOT t = f64[1,3,9,4,1] transpose(x), dimensions={3,4,2,0,1}",
      "x = c128[6,5,4] parameter(0)\n ROOT t = c128[6,4,5] transpose(x), dimensions={0,2,1}",
      // the innermost dim stays: row copies
      "x = f32[4,5,33] parameter(0)\n ROOT t = f32[5,4,33] transpose(x), dimensions={1,0,2}",
      // identity after dropping size-1 dims
      "x = f32[1,20,1] parameter(0)\n ROOT t = f32[20,1,1] transpose(x), dimensions={1,2,0}",
      "x = f32[0,3] parameter(0)\n ROOT t = f32[3,0] transpose(x), dimensions={1,0}",
      "x = u16[130,129] parameter(0)\n ROOT t = u16[129,130] transpose(x), dimensions={1,0}",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    CheckHlo(StrCat("ENTRY e {\n ", c, "\n}\n"));
  }
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Small-M GEMM]: M <= 16 with N >= 16 takes the streaming kernel (gemm_small.cc): every
// row count 2..16 (one row group), partial last column panels, transposed A, batched, K of 4..
// (and a transposed B, which stays on Eigen), f32 and bf16 -> f32; with and without a pool
// (CheckHlo runs both).
TEST(DotKernelTest, SmallM) {
  for (int64_t m : {2, 3, 7, 8, 9, 15, 16, 17}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{16, 4}, {17, 5}, {33, 64}, {257, 31},
                        {1024, 129}}) {
      SCOPED_TRACE(StrCat("m ", m, " n ", n, " k ", k));
      CheckHlo(StrCat("ENTRY e {\n x = f32[", m, ",", k, "] parameter(0)\n y = f32[", k, ",", n,
                      "] parameter(1)\n ROOT d = f32[", m, ",", n,
                      "] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"));
      CheckHlo(StrCat("ENTRY e {\n x = f32[", k, ",", m, "] parameter(0)\n y = f32[", k, ",", n,
                      "] parameter(1)\n ROOT d = f32[", m, ",", n,
                      "] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n"));
      if (HasFailure()) return;
    }
  }
  const char* cases[] = {
      "x = f32[16,100] parameter(0)\n y = f32[300,100] parameter(1)\n"
      " ROOT d = f32[16,300] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}",
      "x = f32[3,16,40] parameter(0)\n y = f32[3,40,70] parameter(1)\n"
      " ROOT d = f32[3,16,70] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2},"
      " rhs_batch_dims={0}, rhs_contracting_dims={1}",
      "x = bf16[16,256] parameter(0)\n y = bf16[256,1000] parameter(1)\n"
      " ROOT d = f32[16,1000] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      "x = bf16[5,37] parameter(0)\n y = bf16[37,50] parameter(1)\n"
      " ROOT d = bf16[5,50] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    CheckHlo(StrCat("ENTRY e {\n ", c, "\n}\n"));
  }
}

// Single-threaded f32 products in the direct micro-kernel's range (conv_indirect.h): partial
// tiles of rows, partial vectors and panels of columns, K split in blocks; CheckHlo runs each
// without a pool (the direct kernel) and with one (Eigen's contraction).
TEST(DotKernelTest, DirectGemm) {
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 16, 16}, {65, 17, 33}, {100, 40, 300},
                         {130, 70, 64}, {256, 256, 256}, {97, 130, 129}, {200, 1000, 200}}) {
    SCOPED_TRACE(StrCat("m ", m, " n ", n, " k ", k));
    if (internal::IndirectConvAvailable()) {
      EXPECT_TRUE(internal::DirectGemmF32Supported(internal::GemmShape{m, n, k}));
    }
    testing::CheckOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-5;
    CheckHlo(StrCat("ENTRY e {\n x = f32[", m, ",", k, "] parameter(0)\n y = f32[", k, ",", n,
                    "] parameter(1)\n ROOT d = f32[", m, ",", n,
                    "] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"),
             "", o);
    if (HasFailure()) return;
  }
  CheckHlo(R"(
ENTRY e {
  x = f32[3,70,40] parameter(0)
  y = f32[3,40,50] parameter(1)
  ROOT d = f32[3,70,50] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2},
    rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
}

// The direct kernel accumulating into C (convolutions' K blocks use it): C += A * B.
TEST(DotKernelTest, DirectGemmAccumulates) {
  if (!internal::IndirectConvAvailable()) GTEST_SKIP() << "no micro-kernel in this build";
  const int64_t m = 77, n = 45, k = 200;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : c) v = u(rng);
  std::vector<double> want(c.begin(), c.end());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) want[i * n + j] += double{a[i * k + kk]} * b[kk * n + j];
  internal::GemmShape s{m, n, k, false, false, true};
  ASSERT_TRUE(internal::DirectGemmF32Supported(s));
  internal::DirectGemmF32(s, a.data(), b.data(), c.data(), KernelContext{}, false);
  for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(c[i], want[i], 1e-4) << i;
}

// Special values propagate through the small-M kernel as through the evaluator's dot.
TEST(DotKernelTest, SmallMSpecialValues) {
  auto m = testing::Parse(
      "ENTRY e {\n x = f32[4,8] parameter(0)\n y = f32[8,20] parameter(1)\n"
      " ROOT d = f32[4,20] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  const HloInstruction* d = testing::Find(*m);
  std::vector<Literal> ops = testing::RandomOperands(*d, 3);
  ops[0].Set<float>({1, 2}, std::numeric_limits<float>::infinity());
  ops[0].Set<float>({2, 5}, std::numeric_limits<float>::quiet_NaN());
  ops[1].Set<float>({3, 19}, -std::numeric_limits<float>::infinity());
  testing::ExpectMatchesEvaluator(*d, {}, std::move(ops));
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Denormals in GEMMs]: GEMMs flush denormals while they run (results within tolerance of
// the evaluator, which keeps them) and restore the caller's floating-point mode afterwards.
TEST(DotKernelTest, DenormalOperandsAndRestoredMode) {
#if defined(__SSE__)
  // The control bits (rounding, FTZ, DAZ, masks), not the sticky exception flags (bits 0-5).
  const unsigned before = _mm_getcsr() & ~0x3Fu;
#endif
  for (const char* c :
       {"x = f32[4,64] parameter(0)\n y = f32[64,40] parameter(1)\n"
        " ROOT d = f32[4,40] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "x = f32[2,70,80] parameter(0)\n y = f32[2,80,30] parameter(1)\n"
        " ROOT d = f32[2,70,30] dot(x, y), lhs_batch_dims={0}, lhs_contracting_dims={2},"
        " rhs_batch_dims={0}, rhs_contracting_dims={1}",
        "x = f32[300,200] parameter(0)\n y = f32[200,100] parameter(1)\n"
        " ROOT d = f32[300,100] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"}) {
    auto m = testing::Parse(StrCat("ENTRY e {\n ", c, "\n}\n"));
    const HloInstruction* d = testing::Find(*m);
    std::vector<Literal> ops = testing::RandomOperands(*d, 4);
    // Every other element of x denormal.
    for (int64_t i = 0; i < ops[0].shape().num_elements(); i += 2)
      ops[0].SetFromDouble(i, 1e-39 * static_cast<double>(i % 7 + 1));
    SCOPED_TRACE(c);
    testing::ExpectMatchesEvaluator(*d, {}, std::move(ops));
  }
#if defined(__SSE__)
  EXPECT_EQ(_mm_getcsr() & ~0x3Fu, before);
#endif
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// SmallMGemm with B at every offset from a cache line (its panels then start `lead` columns
// in, with a partial panel before them), with and without accumulation, against a plain loop.
TEST(DotKernelTest, SmallMGemmMisalignedB) {
  for (int64_t off = 0; off < 16; ++off)
    for (auto [m, n, k] : {std::array<int64_t, 3>{16, 64, 9}, {5, 48, 33}, {3, 50, 7}}) {
      for (bool acc : {false, true}) {
        std::vector<float> a(m * k), bbuf(k * n + 32), c(m * n), want(m * n);
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 13) - 6;
        // 64-byte aligned base, then `off` floats in.
        float* b = bbuf.data();
        while (reinterpret_cast<uintptr_t>(b) % 64) ++b;
        b += off;
        for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 5) % 11) - 5;
        for (int64_t i = 0; i < m * n; ++i) c[i] = want[i] = acc ? static_cast<float>(i % 3) : 0.f;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t kk = 0; kk < k; ++kk) want[i * n + j] += a[i * k + kk] * b[kk * n + j];
        internal::GemmShape s{m, n, k, false, false, acc};
        ASSERT_TRUE(internal::UseSmallMGemm(s));
        KernelContext ctx;
        ctx.pool = testing::TestPool();
        internal::SmallMGemm(s, a.data(), b, c.data(), ctx, true);
        // Small integers: exact in any order.
        EXPECT_EQ(c, want) << "off " << off << " m " << m << " n " << n << " k " << k;
        if (HasFailure()) return;
      }
    }
}

}  // namespace
}  // namespace kiln::cpu
