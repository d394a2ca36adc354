// The parallel f32 GEMM driver (gemm.h, Note [Parallel GEMM driver]) against a naive double
// reference: split-K on and off, transposed operands, sizes that are not multiples of the tiles,
// M or N below one tile, K = 1, accumulation, with pools of 1, 2, 3 and 16 threads.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/base/thread_pool.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernel_test_util.h"

namespace kiln::cpu {
namespace {

using internal::GemmShape;

// C (+)= op(A) op(B) in double.
std::vector<double> Reference(const GemmShape& s, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>& c0) {
  std::vector<double> c(s.m * s.n);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = s.accumulate ? c0[i * s.n + j] : 0.0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double x = s.a_transposed ? a[k * s.m + i] : a[i * s.k + k];
        const double y = s.b_transposed ? b[j * s.k + k] : b[k * s.n + j];
        acc += x * y;
      }
      c[i * s.n + j] = acc;
    }
  return c;
}

// Runs the driver on fresh random operands and compares (relative 1e-5 * sqrt(K) of the sum of
// |products|, which bounds any summation order's error).
void Check(const GemmShape& s, ThreadPool* pool, int split_k, uint32_t seed) {
  SCOPED_TRACE(StrCat("m ", s.m, " n ", s.n, " k ", s.k, " ta ", s.a_transposed, " tb ",
                      s.b_transposed, " acc ", s.accumulate, " threads ",
                      pool ? pool->num_threads() : 0, " split_k ", split_k));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : c) v = u(rng);
  const std::vector<double> want = Reference(s, a, b, c);
  // The scale of each result: sum of |a||b| (+ |c|).
  GemmShape abs_s = s;
  std::vector<float> aa(a), ba(b), ca(c);
  for (float& v : aa) v = std::fabs(v);
  for (float& v : ba) v = std::fabs(v);
  for (float& v : ca) v = std::fabs(v);
  const std::vector<double> scale = Reference(abs_s, aa, ba, ca);
  KernelContext ctx;
  ctx.pool = pool;
  internal::ParallelGemmF32(s, a.data(), b.data(), c.data(), ctx, pool != nullptr, split_k);
  const double tol = 1e-5 * std::sqrt(static_cast<double>(s.k) + 1);
  for (int64_t i = 0; i < s.m * s.n; ++i) {
    ASSERT_NEAR(c[i], want[i], tol * scale[i] + 1e-6) << "at " << i / s.n << "," << i % s.n;
  }
}

std::vector<std::unique_ptr<ThreadPool>>& Pools() {
  static auto* pools = [] {
    auto* v = new std::vector<std::unique_ptr<ThreadPool>>();
    for (int t : {1, 2, 3, 16}) v->push_back(std::make_unique<ThreadPool>(t));
    return v;
  }();
  return *pools;
}

TEST(ParallelGemmTest, ShapesTransposesAndThreads) {
  if (!internal::ParallelGemmAvailable()) GTEST_SKIP() << "no micro-kernel in this build";
  uint32_t seed = 1;
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 1, 1}, {5, 3, 1}, {7, 200, 1}, {3, 5, 40},
                         {13, 17, 19}, {6, 64, 128}, {64, 64, 64}, {97, 130, 129},
                         {200, 33, 700}, {31, 250, 300}, {128, 48, 1030}, {150, 20, 257}}) {
    for (int mode = 0; mode < 4; ++mode) {
      GemmShape s{m, n, k, (mode & 1) != 0, (mode & 2) != 0, false};
      Check(s, nullptr, 0, seed++);
      for (auto& pool : Pools()) Check(s, pool.get(), 0, seed++);
      if (HasFailure()) return;
    }
  }
}

TEST(ParallelGemmTest, Accumulates) {
  if (!internal::ParallelGemmAvailable()) GTEST_SKIP() << "no micro-kernel in this build";
  uint32_t seed = 100;
  for (auto [m, n, k] : {std::array<int64_t, 3>{77, 45, 200}, {9, 70, 1}, {40, 300, 1100}}) {
    for (int mode = 0; mode < 4; ++mode) {
      GemmShape s{m, n, k, (mode & 1) != 0, (mode & 2) != 0, true};
      for (auto& pool : Pools()) {
        Check(s, pool.get(), 0, seed++);
        Check(s, pool.get(), 3, seed++);
      }
      if (HasFailure()) return;
    }
  }
}

// Split-K forced to 1 (off), 2, 3 and more slices than K blocks, and chosen by the driver for
// small C with long K (mlp_train's 256 x 256 x 1024).
TEST(ParallelGemmTest, SplitK) {
  if (!internal::ParallelGemmAvailable()) GTEST_SKIP() << "no micro-kernel in this build";
  uint32_t seed = 200;
  for (auto [m, n, k] : {std::array<int64_t, 3>{256, 256, 1024}, {70, 90, 2000}, {5, 7, 900},
                         {33, 130, 600}}) {
    for (int split : {0, 1, 2, 3, 64}) {
      for (int mode : {0, 3}) {
        GemmShape s{m, n, k, (mode & 1) != 0, (mode & 2) != 0, split == 3};
        Check(s, Pools()[2].get(), split, seed++);
        Check(s, Pools()[3].get(), split, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

// The dot kernel hands small-C, long-K f32 products to the driver when it runs on a pool
// (UseParallelGemm), in every transpose form; CheckHlo runs each with and without a pool.
TEST(ParallelGemmTest, DotKernelTakesDriver) {
  const internal::GemmShape s{128, 128, 1024};
  EXPECT_EQ(internal::UseParallelGemm(s, 2), internal::ParallelGemmAvailable());
  EXPECT_FALSE(internal::UseParallelGemm(s, 1));
  EXPECT_FALSE(internal::UseParallelGemm(internal::GemmShape{1024, 1024, 1024}, 16));
  for (int mode = 0; mode < 4; ++mode) {
    const bool ta = (mode & 1) != 0, tb = (mode & 2) != 0;
    const std::string x = ta ? "f32[1024,128]" : "f32[128,1024]";
    const std::string y = tb ? "f32[128,1024]" : "f32[1024,128]";
    testing::CheckOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-4;
    SCOPED_TRACE(mode);
    testing::CheckHlo(StrCat("ENTRY e {\n x = ", x, " parameter(0)\n y = ", y,
                             " parameter(1)\n ROOT d = f32[128,128] dot(x, y), ",
                             "lhs_contracting_dims={", ta ? 0 : 1, "}, rhs_contracting_dims={",
                             tb ? 1 : 0, "}\n}\n"),
                      "", o);
  }
}

// K = 0 (C zeroed or kept) and empty C.
TEST(ParallelGemmTest, EmptyK) {
  std::vector<float> c(6, 3.0f);
  KernelContext ctx;
  ctx.pool = Pools()[1].get();
  internal::ParallelGemmF32(GemmShape{2, 3, 0, false, false, true}, nullptr, nullptr, c.data(),
                            ctx, true);
  EXPECT_EQ(c, std::vector<float>(6, 3.0f));
  internal::ParallelGemmF32(GemmShape{2, 3, 0}, nullptr, nullptr, c.data(), ctx, true);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
  internal::ParallelGemmF32(GemmShape{0, 3, 5}, nullptr, nullptr, nullptr, ctx, true);
}

}  // namespace
}  // namespace kiln::cpu
