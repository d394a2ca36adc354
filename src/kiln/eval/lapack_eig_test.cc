// Tests of the eigen/SVD/tridiagonal custom calls (lapack_eig.cc), the Householder reductions
// (lapack_reduce.cc), general eigenproblems (lapack_geev.cc) and the GPU solver targets
// (gpu_solver.cc) on invariants: A V = V diag(w), u^H A = w u^H,
// V^H V = I, U S V^H = A, U^H U = I, Q^H A Q = T tridiagonal / H Hessenberg, ordering,
// the phase convention, info on singular and non-positive-definite input, at sizes 1, 2, 7, 33
// (eigen also 100, 137, 200, with a doubly degenerate spectrum),
// batched, real and complex; plus hand-checked LU permutations and tridiagonal solves.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <complex>
#include <random>
#include <string>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/eval_test_util.h"
#include "kiln/eval/lapack_internal.h"

namespace kiln {
namespace {

using cd = std::complex<double>;
using testing::RunHlo;

std::vector<cd> RandomMatrix(int64_t count, bool complex, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<cd> v(count);
  for (cd& x : v) x = complex ? cd(u(rng), u(rng)) : cd(u(rng), 0);
  return v;
}

// A Hermitian n x n matrix (batch of them) from random entries.
std::vector<cd> RandomHermitian(int64_t batch, int64_t n, bool complex, uint32_t seed) {
  std::vector<cd> a = RandomMatrix(batch * n * n, complex, seed);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        cd* x = a.data() + b * n * n;
        if (i == j) x[i * n + i] = x[i * n + i].real();
        x[j * n + i] = std::conj(x[i * n + j]);
      }
  return a;
}

// max |(X^H X)_ij - I_ij| for the rows x cols matrix X.
double OrthoError(const cd* x, int64_t rows, int64_t cols) {
  double e = 0;
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      cd s = 0;
      for (int64_t r = 0; r < rows; ++r) s += std::conj(x[r * cols + i]) * x[r * cols + j];
      e = std::max(e, std::abs(s - (i == j ? 1.0 : 0.0)));
    }
  return e;
}

// The largest-magnitude component of column j is real and positive.
void ExpectPhaseConvention(const cd* x, int64_t rows, int64_t cols, int64_t j) {
  int64_t best = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (std::abs(x[r * cols + j]) > std::abs(x[best * cols + j]) * (1 + 1e-9)) best = r;
  EXPECT_GT(x[best * cols + j].real(), 0) << "column " << j;
  EXPECT_NEAR(x[best * cols + j].imag(), 0, 1e-12) << "column " << j;
}

class HermitianEigenTest : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {};

TEST_P(HermitianEigenTest, Invariants) {
  const auto [n, complex] = GetParam();
  const int64_t batch = 3;
  for (bool lower : {true, false}) {
    std::vector<cd> a = RandomHermitian(batch, n, complex, 7 + n);
    // Junk in the triangle that must not be read.
    std::vector<cd> in = a;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (lower ? j > i : j < i) in[b * n * n + i * n + j] = 99.0;
    std::vector<double> w;
    std::vector<cd> v;
    eval_internal::HermitianEigen(in, batch, n, lower, w, v);
    for (int64_t b = 0; b < batch; ++b) {
      const cd* ab = a.data() + b * n * n;
      const cd* vb = v.data() + b * n * n;
      const double* wb = w.data() + b * n;
      for (int64_t j = 0; j + 1 < n; ++j) EXPECT_LE(wb[j], wb[j + 1]);
      double resid = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          cd av = 0;
          for (int64_t k = 0; k < n; ++k) av += ab[i * n + k] * vb[k * n + j];
          resid = std::max(resid, std::abs(av - vb[i * n + j] * wb[j]));
        }
      EXPECT_LT(resid, 1e-12 * n) << "n " << n << " batch " << b;
      EXPECT_LT(OrthoError(vb, n, n), 1e-12 * n);
      for (int64_t j = 0; j < n; ++j) ExpectPhaseConvention(vb, n, n, j);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, HermitianEigenTest,
                         ::testing::Combine(::testing::Values(1, 2, 7, 33),
                                            ::testing::Values(false, true)));

TEST(HermitianEigen, DegenerateAndZero) {
  for (double scale : {0.0, 3.0}) {  // zero matrix, 3 I: every vector is an eigenvector
    const int64_t n = 4;
    std::vector<cd> a(n * n, cd(0));
    for (int64_t i = 0; i < n; ++i) a[i * n + i] = scale;
    std::vector<double> w;
    std::vector<cd> v;
    eval_internal::HermitianEigen(a, 1, n, true, w, v);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(w[i], scale);
      for (int64_t j = 0; j < n; ++j) EXPECT_EQ(v[i * n + j], cd(i == j ? 1.0 : 0.0));
    }
  }
  // [[2, 1], [1, 2]]: w = (1, 3), v = (1, -1)/sqrt2 with the first component positive (a tie:
  // the first of equal magnitude wins), (1, 1)/sqrt2.
  std::vector<double> w;
  std::vector<cd> v;
  eval_internal::HermitianEigen({2.0, 1.0, 1.0, 2.0}, 1, 2, true, w, v);
  EXPECT_NEAR(w[0], 1, 1e-15);
  EXPECT_NEAR(w[1], 3, 1e-15);
  const double r = std::sqrt(0.5);
  EXPECT_NEAR(v[0].real(), r, 1e-15);
  EXPECT_NEAR(v[2].real(), -r, 1e-15);
  EXPECT_NEAR(v[1].real(), r, 1e-15);
  EXPECT_NEAR(v[3].real(), r, 1e-15);
}

// Larger sizes (the tridiagonal QL path at full size, with clusters): A V = V diag(w),
// V^H V = I, ascending order and the phase convention, to a tolerance scaled by n.
TEST(HermitianEigen, LargerSizesInvariants) {
  for (auto [n, complex] : {std::pair<int64_t, bool>{100, false}, {137, true}, {200, false}}) {
    std::vector<cd> a = RandomHermitian(1, n, complex, 11 + n);
    // Variant 0: the random matrix (lower triangle read); variant 1: one with two eigenvalues
    // of multiplicity n/2 (upper triangle read).
    for (int variant = 0; variant < 2; ++variant) {
      std::vector<cd> m = a;
      if (variant == 1) {  // Q diag(1,1,...,2,2,...) Q^H via a reflector Q = I - 2 u u^H
        std::vector<cd> u = RandomMatrix(n, complex, 3);
        double nu = 0;
        for (const cd& x : u) nu += std::norm(x);
        for (cd& x : u) x /= std::sqrt(nu);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            // Q D Q^H with D = diag(1 + (k >= n/2)): sum_k Q_ik d_k conj(Q_jk)
            cd s = 0;
            for (int64_t k = 0; k < n; ++k) {
              const cd qik = (i == k ? 1.0 : 0.0) - 2.0 * u[i] * std::conj(u[k]);
              const cd qjk = (j == k ? 1.0 : 0.0) - 2.0 * u[j] * std::conj(u[k]);
              s += qik * (k >= n / 2 ? 2.0 : 1.0) * std::conj(qjk);
            }
            m[i * n + j] = s;
          }
        for (int64_t i = 0; i < n; ++i) m[i * n + i] = m[i * n + i].real();
      }
      std::vector<double> w;
      std::vector<cd> v;
      eval_internal::HermitianEigen(m, 1, n, variant == 0, w, v);
      double resid = 0, norm = 0;
      for (int64_t j = 0; j < n; ++j) norm = std::max(norm, std::abs(w[j]));
      for (int64_t j = 0; j + 1 < n; ++j) EXPECT_LE(w[j], w[j + 1]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          cd av = 0;
          for (int64_t k = 0; k < n; ++k) av += m[i * n + k] * v[k * n + j];
          resid = std::max(resid, std::abs(av - v[i * n + j] * w[j]));
        }
      SCOPED_TRACE(StrCat("n ", n, complex ? " complex" : " real", " variant ", variant));
      EXPECT_LT(resid, 1e-14 * n * (1 + norm));
      EXPECT_LT(OrthoError(v.data(), n, n), 1e-14 * n);
      for (int64_t j = 0; j < n; ++j) ExpectPhaseConvention(v.data(), n, n, j);
      if (variant == 1) {
        for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(w[j], j >= n / 2 ? 2.0 : 1.0, 1e-13 * n);
      }
    }
  }
}

std::string Dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += StrCat(i ? "," : "", dims[i]);
  return s;
}

// A column-major layout {rank-2, rank-1, rank-3, ..., 0} as JAX writes (batch dims major).
std::string ColMajor(size_t rank) {
  std::string s = StrCat(rank - 2, ",", rank - 1);
  for (size_t d = rank - 2; d-- > 0;) s += StrCat(",", d);
  return s;
}

Literal MakeLiteral(PrimitiveType t, std::vector<int64_t> dims, const std::vector<cd>& v) {
  Literal l(Shape::ArrayWithDefaultLayout(t, std::move(dims)));
  eval_internal::StoreComplexes(v, l);
  return l;
}

struct SvdCase {
  std::string target, config;
  eval_internal::SvdOutputs layout;
  bool full;
};

// Runs one SVD custom call on a batch x m x n matrix and checks U S V^H = A, orthonormal
// factors, descending values and the phase convention on V.
void CheckSvd(const SvdCase& c, int64_t batch, int64_t m, int64_t n, bool complex, int rank) {
  SCOPED_TRACE(StrCat(c.target, " ", c.config, " ", batch, "x", m, "x", n,
                      complex ? " c128" : " f64", " rank ", rank));
  const int64_t k = std::min(m, n);
  std::vector<cd> a = RandomMatrix(batch * m * n, complex, 100 + m * 7 + n);
  if (rank < k) {  // a = (m x rank) (rank x n)
    std::vector<cd> p = RandomMatrix(m * rank, complex, 5), q = RandomMatrix(rank * n, complex, 6);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          cd s = 0;
          for (int64_t r = 0; r < rank; ++r) s += p[i * rank + r] * q[r * n + j];
          a[b * m * n + i * n + j] = s * double(b + 1);
        }
  }
  const char* ty = complex ? "c128" : "f64";
  std::vector<int64_t> bd = batch > 1 ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
  auto shape = [&](int64_t r, int64_t cc) {
    std::vector<int64_t> d = bd;
    d.push_back(r);
    d.push_back(cc);
    return StrCat(ty, "[", Dims(d), "]{", ColMajor(d.size()), "}");
  };
  auto vec = [&](const char* t, int64_t len) {
    std::vector<int64_t> d = bd;
    if (len >= 0) d.push_back(len);
    std::string layout;
    for (size_t i = d.size(); i-- > 0;) layout += StrCat(layout.empty() ? "" : ",", i);
    return StrCat(t, "[", Dims(d), "]{", layout, "}");
  };
  const int64_t uc = c.full ? m : k, vc = c.full ? n : k;
  std::string x, y;
  switch (c.layout) {
    case eval_internal::SvdOutputs::kUVt:
      x = shape(m, uc);
      y = shape(vc, n);
      break;
    case eval_internal::SvdOutputs::kVtU:
      x = shape(vc, n);
      y = shape(m, uc);
      break;
    case eval_internal::SvdOutputs::kUV:
      x = shape(m, uc);
      y = shape(n, vc);
      break;
  }
  std::vector<int64_t> pd = bd;
  pd.push_back(m);
  pd.push_back(n);
  const std::string hlo =
      StrCat("HloModule m\nENTRY e {\n  p = ", ty, "[", Dims(pd), "] parameter(0)\n  ROOT s = (",
             shape(m, n), ", ", vec("f64", k), ", ", x, ", ", y, ", ", vec("s32", -1),
             ") custom-call(p), custom_call_target=\"", c.target,
             "\", api_version=API_VERSION_TYPED_FFI, backend_config={", c.config, "}\n}\n");
  StatusOr<Literal> r =
      RunHlo(hlo, {MakeLiteral(complex ? PrimitiveType::kC128 : PrimitiveType::kF64, pd, a)});
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
  std::vector<cd> s = eval_internal::LiteralToComplexes(r->tuple_element(1));
  std::vector<cd> xo = eval_internal::LiteralToComplexes(r->tuple_element(2));
  std::vector<cd> yo = eval_internal::LiteralToComplexes(r->tuple_element(3));
  for (int64_t info : testing::Ints(r->tuple_element(4))) EXPECT_EQ(info, 0);
  for (int64_t b = 0; b < batch; ++b) {
    // U (m x uc) and V (n x vc) from the outputs, whatever the layout.
    std::vector<cd> u(m * uc), v(n * vc);
    const cd* xb = xo.data() + b * (xo.size() / batch);
    const cd* yb = yo.data() + b * (yo.size() / batch);
    auto take_u = [&](const cd* src) { std::copy(src, src + m * uc, u.begin()); };
    auto take_vh = [&](const cd* src) {  // vc x n -> V n x vc
      for (int64_t i = 0; i < vc; ++i)
        for (int64_t j = 0; j < n; ++j) v[j * vc + i] = std::conj(src[i * n + j]);
    };
    switch (c.layout) {
      case eval_internal::SvdOutputs::kUVt:
        take_u(xb);
        take_vh(yb);
        break;
      case eval_internal::SvdOutputs::kVtU:
        take_vh(xb);
        take_u(yb);
        break;
      case eval_internal::SvdOutputs::kUV:
        take_u(xb);
        std::copy(yb, yb + n * vc, v.begin());
        break;
    }
    const cd* sb = s.data() + b * k;
    for (int64_t j = 0; j + 1 < k; ++j) EXPECT_GE(sb[j].real(), sb[j + 1].real());
    double scale = k > 0 ? sb[0].real() : 0;
    double err = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        cd t = 0;
        for (int64_t l = 0; l < k; ++l)
          t += u[i * uc + l] * sb[l].real() * std::conj(v[j * vc + l]);
        err = std::max(err, std::abs(t - a[b * m * n + i * n + j]));
      }
    EXPECT_LT(err, 1e-12 * (1 + scale) * std::max(m, n));
    EXPECT_LT(OrthoError(u.data(), m, uc), 1e-12 * std::max(m, n));
    EXPECT_LT(OrthoError(v.data(), n, vc), 1e-12 * std::max(m, n));
    for (int64_t j = 0; j < std::min(vc, k); ++j)
      if (sb[j].real() > 1e-10 * scale) ExpectPhaseConvention(v.data(), n, vc, j);
    for (int64_t j = rank; j < k; ++j) EXPECT_LT(sb[j].real(), 1e-12 * scale * std::max(m, n));
  }
}

TEST(Svd, Invariants) {
  using L = eval_internal::SvdOutputs;
  const std::vector<SvdCase> targets = {
      {"lapack_dgesdd_ffi", "mode = 65 : ui8", L::kUVt, true},
      {"lapack_dgesdd_ffi", "mode = 83 : ui8", L::kUVt, false},
      {"lapack_zgesvd_ffi", "mode = 65 : ui8", L::kUVt, true},
      {"cusolver_gesvdj_ffi", "compute_uv = true, full_matrices = true", L::kUV, true},
      {"hipsolver_gesvdj_ffi", "compute_uv = true, full_matrices = false", L::kUV, false},
      {"cusolver_gesvd_ffi", "compute_uv = true, full_matrices = true, transposed = false", L::kUVt,
       true},
      {"cusolver_gesvd_ffi", "compute_uv = true, full_matrices = false, transposed = true", L::kVtU,
       false},
  };
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{1, 1},   {2, 2},  {7, 3}, {3, 7},
                                                          {33, 33}, {33, 7}, {2, 7}};
  for (const SvdCase& c : targets)
    for (auto [m, n] : sizes)
      for (bool complex : {false, true}) {
        SvdCase cc = c;
        if (c.target[0] == 'l') cc.target[7] = complex ? 'z' : 'd';  // lapack_<type>...
        CheckSvd(cc, 1, m, n, complex, static_cast<int>(std::min(m, n)));
      }
  // Batched and rank-deficient (zero singular values: U is completed to a unitary basis).
  CheckSvd(targets[0], 3, 7, 5, false, 5);
  CheckSvd(targets[0], 2, 7, 5, false, 2);
  CheckSvd(targets[3], 2, 5, 7, true, 2);
  CheckSvd(targets[6], 2, 5, 9, false, 3);
  // Sizes where the sweeps start from A V0 (V0: eigenvectors of A^H A), full rank and not.
  CheckSvd(targets[0], 1, 120, 80, false, 80);
  CheckSvd(targets[2], 1, 70, 100, true, 70);
  CheckSvd(targets[1], 1, 100, 90, false, 20);
  CheckSvd(targets[3], 1, 64, 64, true, 63);
}

// Timings of the eigen and SVD kernels (one thread) when KILN_LINALG_BENCH is set; the numbers
// in docs/evaluator.md come from here.
TEST(LinalgBench, EighAndSvdTimings) {
  if (std::getenv("KILN_LINALG_BENCH") == nullptr) GTEST_SKIP() << "set KILN_LINALG_BENCH";
  for (int64_t n : {64, 256, 512}) {
    std::vector<cd> a = RandomHermitian(1, n, false, 5);
    std::vector<double> w;
    std::vector<cd> v;
    auto t0 = std::chrono::steady_clock::now();
    eval_internal::HermitianEigen(a, 1, n, true, w, v);
    auto t1 = std::chrono::steady_clock::now();
    const int64_t m = n, k = n * 200 / 256;
    std::vector<cd> g = RandomMatrix(m * k, false, 9);
    const std::string hlo = StrCat("HloModule m\nENTRY e {\n  p = f64[", m, ",", k,
                                   "] parameter(0)\n  ROOT s = (f64[", m, ",", k, "]{0,1}, f64[", k,
                                   "], f64[", m, ",", m, "]{0,1}, f64[", k, ",", k,
                                   "]{0,1}, s32[]) custom-call(p), custom_call_target=\"lapack_dgesdd_ffi\", "
                                   "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 65 : ui8}\n}\n");
    auto t2 = std::chrono::steady_clock::now();
    StatusOr<Literal> r = RunHlo(hlo, {MakeLiteral(PrimitiveType::kF64, {m, k}, g)});
    auto t3 = std::chrono::steady_clock::now();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::printf("linalg bench n=%lld: eigh f64 %.1f ms, svd f64 %lldx%lld %.1f ms\n",
                static_cast<long long>(n), std::chrono::duration<double, std::milli>(t1 - t0).count(),
                static_cast<long long>(m), static_cast<long long>(k),
                std::chrono::duration<double, std::milli>(t3 - t2).count());
  }
}

TEST(Svd, ValuesOnlyGivesZeroVectors) {
  const std::string hlo = R"(HloModule m
ENTRY e {
  p = f32[3,2] parameter(0)
  ROOT s = (f32[3,2]{0,1}, f32[2], f32[3,3]{0,1}, f32[2,2]{0,1}, s32[]) custom-call(p), custom_call_target="lapack_sgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 78 : ui8}
})";
  // [[3, 0], [0, 4], [0, 0]]: singular values 4, 3.
  Literal a = Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3, 2}),
                                   {3, 0, 0, 4, 0, 0});
  StatusOr<Literal> r = RunHlo(hlo, {a});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Doubles(r->tuple_element(1)), (std::vector<double>{4, 3}));
  for (double x : testing::Doubles(r->tuple_element(2))) EXPECT_EQ(x, 0);
  for (double x : testing::Doubles(r->tuple_element(3))) EXPECT_EQ(x, 0);
  EXPECT_EQ(testing::Doubles(r->tuple_element(0)), testing::Doubles(a));
}

TEST(Syevd, CustomCallsBatchedComplex) {
  for (std::string target : {"lapack_zheevd_ffi", "cusolver_syevd_ffi", "hipsolver_syevd_ffi"}) {
    SCOPED_TRACE(target);
    const std::string config = target[0] == 'l' ? "mode = 86 : ui8, uplo = 85 : ui8"
                                                : "algorithm = 0 : ui8, lower = false";
    const std::string hlo = StrCat(
        R"(HloModule m
ENTRY e {
  p = c128[2,7,7] parameter(0)
  ROOT s = (c128[2,7,7]{1,2,0}, f64[2,7]{1,0}, s32[2]{0}) custom-call(p), custom_call_target=")",
        target, R"(", api_version=API_VERSION_TYPED_FFI, backend_config={)", config, "}\n}\n");
    std::vector<cd> a = RandomHermitian(2, 7, true, 3);
    StatusOr<Literal> r = RunHlo(hlo, {MakeLiteral(PrimitiveType::kC128, {2, 7, 7}, a)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> w0;
    std::vector<cd> v0;
    eval_internal::HermitianEigen(a, 2, 7, false, w0, v0);
    EXPECT_EQ(testing::Doubles(r->tuple_element(1)), w0);
    EXPECT_EQ(eval_internal::LiteralToComplexes(r->tuple_element(0)), v0);
    EXPECT_EQ(testing::Ints(r->tuple_element(2)), (std::vector<int64_t>{0, 0}));
  }
}

TEST(GpuSolver, PotrfAndGetrfInfo) {
  // Not positive definite at the second leading minor; singular at the second pivot.
  Literal a = Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 2}),
                                   {1, 2, 2, 1});
  Literal s = Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 2}),
                                   {1, 2, 2, 4});
  StatusOr<Literal> r = RunHlo(R"(HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  ROOT c = (f32[2,2]{0,1}, s32[]) custom-call(p), custom_call_target="cusolver_potrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={lower = true}
})",
                               {a});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Ints(r->tuple_element(1)), (std::vector<int64_t>{2}));
  r = RunHlo(R"(HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  ROOT c = (f32[2,2]{0,1}, s32[2]{0}, s32[]) custom-call(p), custom_call_target="hipsolver_getrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
})",
             {s});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Ints(r->tuple_element(1)), (std::vector<int64_t>{2, 2}));  // 1-based
  EXPECT_EQ(testing::Ints(r->tuple_element(2)), (std::vector<int64_t>{2}));
  EXPECT_EQ(testing::Doubles(r->tuple_element(0)), (std::vector<double>{2, 4, 0.5, 0}));
}

TEST(GpuSolver, LuPivotsToPermutation) {
  // 0-based interchanges (2, 2, 3) on the identity of 5, then (1, 0, 2) on a second batch row.
  Literal p = Literal::FromInt64s(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {2, 3}),
                                  {2, 2, 3, 1, 0, 2});
  for (const char* t : {"cu_lu_pivots_to_permutation", "hip_lu_pivots_to_permutation"}) {
    StatusOr<Literal> r =
        RunHlo(StrCat(R"(HloModule m
ENTRY e {
  p = s32[2,3] parameter(0)
  ROOT c = s32[2,5]{1,0} custom-call(p), custom_call_target=")",
                      t, R"(", api_version=API_VERSION_TYPED_FFI, backend_config={}
})"),
               {p});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // [0 1 2 3 4] -swap(0,2)-> [2 1 0 3 4] -swap(1,2)-> [2 0 1 3 4] -swap(2,3)-> [2 0 3 1 4];
    // [0 1 2 3 4] -swap(0,1)-> [1 0 2 3 4] -swap(1,0)-> [0 1 2 3 4] -swap(2,2)-> same.
    EXPECT_EQ(testing::Ints(*r), (std::vector<int64_t>{2, 0, 3, 1, 4, 0, 1, 2, 3, 4}));
  }
}

TEST(GpuSolver, SyrkLowerTriangle) {
  // a = [[1, 2], [3, 4], [5, 6]] (3 x 2), c = 10 * ones(3, 3) + diag(1, 2, 3).
  auto f32 = [](std::vector<int64_t> d, std::vector<double> v) {
    return Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, std::move(d)),
                                v);
  };
  Literal a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Literal alpha = f32({}, {2}), beta = f32({}, {0.5});
  for (bool transpose : {false, true}) {
    const int64_t n = transpose ? 2 : 3;
    std::vector<double> c(n * n, 10);
    for (int64_t i = 0; i < n; ++i) c[i * n + i] += i + 1;
    const std::string hlo = StrCat(
        "HloModule m\nENTRY e {\n  a = f32[3,2] parameter(0)\n  c = f32[", n, ",", n,
        "] parameter(1)\n  al = f32[] parameter(2)\n  be = f32[] parameter(3)\n  ROOT r = f32[", n,
        ",", n,
        "] custom-call(a, c, al, be), custom_call_target=\"hipsolver_syrk_ffi\", "
        "api_version=API_VERSION_TYPED_FFI, backend_config={transpose = ",
        transpose ? "true" : "false", "}\n}\n");
    StatusOr<Literal> r = RunHlo(hlo, {a, f32({n, n}, c), alpha, beta});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<double> x = {1, 2, 3, 4, 5, 6};
    std::vector<double> expect(n * n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < (transpose ? 3 : 2); ++l)
          s += transpose ? x[l * 2 + i] * x[l * 2 + j] : x[i * 2 + l] * x[j * 2 + l];
        expect[i * n + j] = j <= i ? 2 * s + 0.5 * c[i * n + j] : c[i * n + j];
      }
    EXPECT_EQ(testing::Doubles(*r), expect) << "transpose " << transpose;
  }
}

TEST(Gtsv, SolvesWithPivotingAndReportsZeroPivot) {
  // A = [[0, 1, 0], [2, 1, 1], [0, 3, 1]] needs a row interchange at the first step.
  // (JAX's convention: dl[0] = 0 and du[2] = 0 are not read; put junk there.)
  auto f64 = [](std::vector<int64_t> d, std::vector<double> v) {
    return Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, std::move(d)),
                                v);
  };
  const std::vector<double> x = {1, -2, 3};  // b = A x
  Literal dl = f64({3}, {77, 2, 3}), d = f64({3}, {0, 1, 1}), du = f64({3}, {1, 1, 77});
  Literal b = f64({3, 1}, {-2, 3, -3});
  StatusOr<Literal> r = RunHlo(R"(HloModule m
ENTRY e {
  dl = f64[3] parameter(0)
  d = f64[3] parameter(1)
  du = f64[3] parameter(2)
  b = f64[3,1] parameter(3)
  ROOT c = (f64[3], f64[3], f64[3], f64[3,1]{0,1}, s32[]) custom-call(dl, d, du, b), custom_call_target="lapack_dgtsv_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
})",
                               {dl, d, du, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> got = testing::Doubles(r->tuple_element(3));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], x[i], 1e-14);
  EXPECT_EQ(testing::Ints(r->tuple_element(4)), (std::vector<int64_t>{0}));
  r = RunHlo(R"(HloModule m
ENTRY e {
  dl = f64[3] parameter(0)
  d = f64[3] parameter(1)
  du = f64[3] parameter(2)
  b = f64[3,1] parameter(3)
  ROOT c = f64[3,1]{0,1} custom-call(dl, d, du, b), custom_call_target="cusparse_gtsv2_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
})",
             {dl, d, du, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  got = testing::Doubles(*r);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], x[i], 1e-14);
  // Singular: a zero column.
  r = RunHlo(R"(HloModule m
ENTRY e {
  dl = f64[3] parameter(0)
  d = f64[3] parameter(1)
  du = f64[3] parameter(2)
  b = f64[3,1] parameter(3)
  ROOT c = (f64[3], f64[3], f64[3], f64[3,1]{0,1}, s32[]) custom-call(dl, d, du, b), custom_call_target="lapack_sgtsv_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
})",
             {f64({3}, {0, 0, 0}), f64({3}, {1, 0, 1}), f64({3}, {0, 1, 0}), b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Ints(r->tuple_element(4)), (std::vector<int64_t>{2}));
}

// Q = product of the reflectors I - tau_k v_k v_k^H in `order`, applied as Q := Q H_k.
std::vector<cd> ReflectorProduct(int64_t n, const std::vector<std::vector<cd>>& vs,
                                 const std::vector<cd>& taus) {
  std::vector<cd> q(n * n, cd(0));
  for (int64_t i = 0; i < n; ++i) q[i * n + i] = 1;
  for (size_t k = 0; k < vs.size(); ++k) {
    const std::vector<cd>& v = vs[k];
    for (int64_t r = 0; r < n; ++r) {
      cd s = 0;
      for (int64_t c = 0; c < n; ++c) s += q[r * n + c] * v[c];
      for (int64_t c = 0; c < n; ++c) q[r * n + c] -= taus[k] * s * std::conj(v[c]);
    }
  }
  return q;
}

// max |(Q^H A Q)_ij - t_ij|.
double SimilarityError(int64_t n, const cd* a, const std::vector<cd>& q, const std::vector<cd>& t) {
  double err = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      cd s = 0;
      for (int64_t k = 0; k < n; ++k)
        for (int64_t l = 0; l < n; ++l) s += std::conj(q[k * n + i]) * a[k * n + l] * q[l * n + j];
      err = std::max(err, std::abs(s - t[i * n + j]));
    }
  return err;
}

TEST(Sytrd, ReflectorsReduceToTridiagonal) {
  for (int64_t n : {1, 2, 7, 33})
    for (bool complex : {false, true})
      for (bool lower : {true, false})
        for (std::string target : {"lapack", "cusolver_sytrd_ffi"}) {
          SCOPED_TRACE(StrCat(target, " n ", n, complex ? " c128" : " f64", lower ? " L" : " U"));
          const int64_t batch = 2, m = std::max<int64_t>(n - 1, 0);
          const char* ty = complex ? "c128" : "f64";
          if (target == "lapack") target = complex ? "lapack_zhetrd_ffi" : "lapack_dsytrd_ffi";
          const std::string config = target[0] == 'l'
                                         ? StrCat("uplo = ", lower ? 76 : 85, " : ui8")
                                         : StrCat("lower = ", lower ? "true" : "false");
          const std::string hlo =
              StrCat("HloModule m\nENTRY e {\n  p = ", ty, "[2,", n, ",", n,
                     "] parameter(0)\n  ROOT c = (", ty, "[2,", n, ",", n, "]{1,2,0}, f64[2,", n,
                     "], f64[2,", m, "], ", ty, "[2,", m,
                     "], s32[2]) custom-call(p), custom_call_target=\"", target,
                     "\", api_version=API_VERSION_TYPED_FFI, backend_config={", config, "}\n}\n");
          std::vector<cd> a = RandomHermitian(batch, n, complex, 11 + n);
          std::vector<cd> in = a;  // junk in the unread triangle, which must come back unchanged
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = 0; i < n; ++i)
              for (int64_t j = 0; j < n; ++j)
                if (lower ? j > i : j < i) in[b * n * n + i * n + j] = cd(5, complex ? 1 : 0);
          StatusOr<Literal> r = RunHlo(
              hlo,
              {MakeLiteral(complex ? PrimitiveType::kC128 : PrimitiveType::kF64, {2, n, n}, in)});
          ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
          std::vector<cd> out = eval_internal::LiteralToComplexes(r->tuple_element(0));
          std::vector<double> d = testing::Doubles(r->tuple_element(1));
          std::vector<double> e = testing::Doubles(r->tuple_element(2));
          std::vector<cd> tau = eval_internal::LiteralToComplexes(r->tuple_element(3));
          for (int64_t b = 0; b < batch; ++b) {
            const cd* o = out.data() + b * n * n;
            std::vector<std::vector<cd>> vs;
            std::vector<cd> taus;
            for (int64_t i = 0; i < m; ++i) {
              std::vector<cd> v(n, cd(0));
              if (lower) {
                v[i + 1] = 1;
                for (int64_t r2 = i + 2; r2 < n; ++r2) v[r2] = o[r2 * n + i];
              } else {
                v[i] = 1;
                for (int64_t k = 0; k < i; ++k) v[k] = o[k * n + i + 1];
              }
              vs.push_back(v);
              taus.push_back(tau[b * m + i]);
            }
            if (!lower) {
              std::reverse(vs.begin(), vs.end());
              std::reverse(taus.begin(), taus.end());
            }
            std::vector<cd> t(n * n, cd(0));
            for (int64_t i = 0; i < n; ++i) {
              t[i * n + i] = d[b * n + i];
              EXPECT_EQ(o[i * n + i], cd(d[b * n + i]));
              if (i + 1 < n) {
                t[(i + 1) * n + i] = t[i * n + i + 1] = e[b * m + i];
                EXPECT_EQ(lower ? o[(i + 1) * n + i] : o[i * n + i + 1], cd(e[b * m + i]));
              }
              for (int64_t j = 0; j < n; ++j) {
                if (lower ? j > i : j < i) {
                  EXPECT_EQ(o[i * n + j], in[b * n * n + i * n + j]);
                }
              }
            }
            EXPECT_LT(SimilarityError(n, a.data() + b * n * n, ReflectorProduct(n, vs, taus), t),
                      1e-12 * n);
          }
        }
}

TEST(Gehrd, ReflectorsReduceToHessenberg) {
  for (int64_t n : {1, 2, 7, 33})
    for (bool complex : {false, true}) {
      SCOPED_TRACE(StrCat("n ", n, complex ? " c128" : " f64"));
      const int64_t m = std::max<int64_t>(n - 1, 0);
      const char* ty = complex ? "c128" : "f64";
      const std::string hlo = StrCat(
          "HloModule m\nENTRY e {\n  p = ", ty, "[", n, ",", n, "] parameter(0)\n  ROOT c = (", ty,
          "[", n, ",", n, "]{0,1}, ", ty, "[", m, "], s32[]) custom-call(p), custom_call_target=\"",
          complex ? "lapack_zgehrd_ffi" : "lapack_dgehrd_ffi",
          "\", api_version=API_VERSION_TYPED_FFI, backend_config={high = ", n,
          " : i32, low = 1 : i32}\n}\n");
      std::vector<cd> a = RandomMatrix(n * n, complex, 21 + n);
      StatusOr<Literal> r = RunHlo(
          hlo, {MakeLiteral(complex ? PrimitiveType::kC128 : PrimitiveType::kF64, {n, n}, a)});
      ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
      std::vector<cd> o = eval_internal::LiteralToComplexes(r->tuple_element(0));
      std::vector<cd> tau = eval_internal::LiteralToComplexes(r->tuple_element(1));
      std::vector<std::vector<cd>> vs;
      for (int64_t i = 0; i < m; ++i) {
        std::vector<cd> v(n, cd(0));
        v[i + 1] = 1;
        for (int64_t r2 = i + 2; r2 < n; ++r2) v[r2] = o[r2 * n + i];
        vs.push_back(v);
      }
      std::vector<cd> h(n * n, cd(0));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = std::max<int64_t>(i - 1, 0); j < n; ++j) h[i * n + j] = o[i * n + j];
      EXPECT_LT(SimilarityError(n, a.data(), ReflectorProduct(n, vs, tau), h), 1e-12 * n);
    }
}

TEST(Geev, EigenpairsOfGeneralMatrices) {
  for (int64_t n : {1, 2, 7, 33})
    for (bool complex : {false, true})
      for (bool hybrid : {false, true}) {
        SCOPED_TRACE(StrCat("n ", n, complex ? " c128" : " f64", hybrid ? " hybrid" : " lapack"));
        const int64_t batch = 2;
        const char* ty = complex ? "c128" : "f64";
        const std::string target = hybrid ? (complex ? "cuhybrid_eig_comp" : "hiphybrid_eig_real")
                                          : (complex ? "lapack_zgeev_ffi" : "lapack_dgeev_ffi");
        const std::string config = hybrid ? "left = true, magma = \"auto\", right = true"
                                          : "compute_left = 86 : ui8, compute_right = 86 : ui8";
        const std::string values =
            complex ? StrCat("c128[2,", n, "]") : StrCat("f64[2,", n, "], f64[2,", n, "]");
        const std::string hlo = StrCat(
            "HloModule m\nENTRY e {\n  p = ", ty, "[2,", n, ",", n, "] parameter(0)\n  ROOT c = (",
            values, ", c128[2,", n, ",", n, "]{1,2,0}, c128[2,", n, ",", n,
            "]{1,2,0}, s32[2]) custom-call(p), custom_call_target=\"", target,
            "\", api_version=API_VERSION_TYPED_FFI, backend_config={", config, "}\n}\n");
        std::vector<cd> a = RandomMatrix(batch * n * n, complex, 31 + n);
        StatusOr<Literal> r = RunHlo(
            hlo, {MakeLiteral(complex ? PrimitiveType::kC128 : PrimitiveType::kF64, {2, n, n}, a)});
        ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
        std::vector<cd> w;
        int64_t next = 0;
        if (complex) {
          w = eval_internal::LiteralToComplexes(r->tuple_element(next++));
        } else {
          std::vector<double> wr = testing::Doubles(r->tuple_element(next++));
          std::vector<double> wi = testing::Doubles(r->tuple_element(next++));
          for (size_t i = 0; i < wr.size(); ++i) w.push_back(cd(wr[i], wi[i]));
        }
        std::vector<cd> vl = eval_internal::LiteralToComplexes(r->tuple_element(next++));
        std::vector<cd> vr = eval_internal::LiteralToComplexes(r->tuple_element(next++));
        EXPECT_EQ(testing::Ints(r->tuple_element(next)), (std::vector<int64_t>{0, 0}));
        for (int64_t b = 0; b < batch; ++b) {
          const cd* ab = a.data() + b * n * n;
          const cd* l = vl.data() + b * n * n;
          const cd* v = vr.data() + b * n * n;
          double norm = 0;
          for (int64_t i = 0; i < n * n; ++i) norm += std::norm(ab[i]);
          norm = std::sqrt(norm);
          double right = 0, left = 0;
          for (int64_t k = 0; k < n; ++k) {
            const cd lambda = w[b * n + k];
            for (int64_t i = 0; i < n; ++i) {
              cd av = 0, ua = 0;
              for (int64_t j = 0; j < n; ++j) {
                av += ab[i * n + j] * v[j * n + k];
                ua += std::conj(l[j * n + k]) * ab[j * n + i];
              }
              right = std::max(right, std::abs(av - lambda * v[i * n + k]));
              left = std::max(left, std::abs(ua - lambda * std::conj(l[i * n + k])));
            }
            double nv = 0, nl = 0;
            for (int64_t i = 0; i < n; ++i) {
              nv += std::norm(v[i * n + k]);
              nl += std::norm(l[i * n + k]);
            }
            EXPECT_NEAR(nv, 1, 1e-12);
            EXPECT_NEAR(nl, 1, 1e-12);
            if (complex) {  // zgeev's convention: largest component real positive
              ExpectPhaseConvention(v, n, n, k);
              ExpectPhaseConvention(l, n, n, k);
            } else {  // dgeev's: largest component real (sign from the algorithm)
              for (const cd* m : {v, l}) {
                int64_t best = 0;
                for (int64_t r2 = 0; r2 < n; ++r2)
                  if (std::norm(m[r2 * n + k]) > std::norm(m[best * n + k])) best = r2;
                EXPECT_EQ(m[best * n + k].imag(), 0) << "column " << k;
              }
            }
          }
          EXPECT_LT(right, 1e-10 * (1 + norm));
          EXPECT_LT(left, 1e-10 * (1 + norm));
          // A real matrix: non-real eigenvalues come in conjugate pairs.
          if (!complex)
            for (int64_t k = 0; k < n; ++k) {
              const cd lambda = w[b * n + k];
              double best = 1e300;
              for (int64_t j = 0; j < n; ++j)
                best = std::min(best, std::abs(std::conj(lambda) - w[b * n + j]));
              EXPECT_LT(best, 1e-10 * (1 + norm));
            }
        }
      }
}

TEST(Geev, KnownSpectraAndValuesOnly) {
  // A rotation: eigenvalues +-i; a symmetric matrix: real eigenvalues with exactly zero
  // imaginary parts and real vectors; values only: vl and vr are zeros.
  auto run = [](std::vector<double> a) {
    return RunHlo(
        R"(HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  ROOT c = (f32[2], f32[2], c64[2,2]{0,1}, c64[2,2]{0,1}, s32[]) custom-call(p), custom_call_target="lapack_sgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 78 : ui8, compute_right = 86 : ui8}
})",
        {Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 2}), a)});
  };
  StatusOr<Literal> r = run({0, -1, 1, 0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> wr = testing::Doubles(r->tuple_element(0));
  std::vector<double> wi = testing::Doubles(r->tuple_element(1));
  std::sort(wi.begin(), wi.end());
  EXPECT_NEAR(wr[0], 0, 1e-7);
  EXPECT_NEAR(wr[1], 0, 1e-7);
  EXPECT_NEAR(wi[0], -1, 1e-7);
  EXPECT_NEAR(wi[1], 1, 1e-7);
  for (const cd& x : eval_internal::LiteralToComplexes(r->tuple_element(2))) EXPECT_EQ(x, cd(0));
  r = run({2, 1, 1, 2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  wr = testing::Doubles(r->tuple_element(0));
  std::sort(wr.begin(), wr.end());
  EXPECT_EQ(testing::Doubles(r->tuple_element(1)), (std::vector<double>{0, 0}));
  EXPECT_NEAR(wr[0], 1, 1e-6);
  EXPECT_NEAR(wr[1], 3, 1e-6);
  for (const cd& x : eval_internal::LiteralToComplexes(r->tuple_element(3))) EXPECT_EQ(x.imag(), 0);
  // Non-finite input: info > 0 and NaN outputs.
  r = run({std::nan(""), 1, 1, 2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(testing::Ints(r->tuple_element(4))[0], 0);
  EXPECT_TRUE(std::isnan(testing::Doubles(r->tuple_element(0))[0]));
}

TEST(Gees, ComplexSchurForm) {
  for (int64_t n : {1, 2, 7, 33}) {
    SCOPED_TRACE(StrCat("n ", n));
    const std::string hlo = StrCat("HloModule m\nENTRY e {\n  p = c128[2,", n, ",", n,
                                   "] parameter(0)\n  ROOT c = (c128[2,", n, ",", n,
                                   "]{1,2,0}, c128[2,", n, ",", n, "]{1,2,0}, c128[2,", n,
                                   "], s32[2], s32[2]) custom-call(p), "
                                   "custom_call_target=\"lapack_zgees_ffi\", "
                                   "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 "
                                   ": ui8, sort = 78 : ui8}\n}\n");
    std::vector<cd> a = RandomMatrix(2 * n * n, true, 41 + n);
    StatusOr<Literal> r = RunHlo(hlo, {MakeLiteral(PrimitiveType::kC128, {2, n, n}, a)});
    ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
    std::vector<cd> t = eval_internal::LiteralToComplexes(r->tuple_element(0));
    std::vector<cd> z = eval_internal::LiteralToComplexes(r->tuple_element(1));
    std::vector<cd> w = eval_internal::LiteralToComplexes(r->tuple_element(2));
    EXPECT_EQ(testing::Ints(r->tuple_element(3)), (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(testing::Ints(r->tuple_element(4)), (std::vector<int64_t>{0, 0}));
    for (int64_t b = 0; b < 2; ++b) {
      const cd* tb = t.data() + b * n * n;
      const cd* zb = z.data() + b * n * n;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(w[b * n + i], tb[i * n + i]);
        for (int64_t j = 0; j < i; ++j) EXPECT_EQ(tb[i * n + j], cd(0));
      }
      EXPECT_LT(OrthoError(zb, n, n), 1e-12 * n);
      // Z^H A Z = T.
      std::vector<cd> q(zb, zb + n * n);
      EXPECT_LT(SimilarityError(n, a.data() + b * n * n, q, std::vector<cd>(tb, tb + n * n)),
                1e-12 * n);
    }
  }
}

TEST(Gees, RealSchurForm) {
  for (int64_t n : {1, 2, 3, 7, 33}) {
    SCOPED_TRACE(StrCat("n ", n));
    const std::string hlo = StrCat(
        "HloModule m\nENTRY e {\n  p = f64[2,", n, ",", n, "] parameter(0)\n  ROOT c = (f64[2,", n,
        ",", n, "]{1,2,0}, f64[2,", n, ",", n, "]{1,2,0}, f64[2,", n, "], f64[2,", n,
        "], s32[2], s32[2]) custom-call(p), custom_call_target=\"lapack_dgees_ffi\", "
        "api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, sort = 78 : "
        "ui8}\n}\n");
    std::vector<cd> a = RandomMatrix(2 * n * n, false, 51 + n);
    StatusOr<Literal> r = RunHlo(hlo, {MakeLiteral(PrimitiveType::kF64, {2, n, n}, a)});
    ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
    std::vector<double> t = testing::Doubles(r->tuple_element(0));
    std::vector<double> z = testing::Doubles(r->tuple_element(1));
    std::vector<double> wr = testing::Doubles(r->tuple_element(2));
    std::vector<double> wi = testing::Doubles(r->tuple_element(3));
    EXPECT_EQ(testing::Ints(r->tuple_element(5)), (std::vector<int64_t>{0, 0}));
    for (int64_t b = 0; b < 2; ++b) {
      const double* tb = t.data() + b * n * n;
      std::vector<cd> tc(tb, tb + n * n), zc(z.begin() + b * n * n, z.begin() + (b + 1) * n * n);
      EXPECT_LT(OrthoError(zc.data(), n, n), 1e-12 * n);
      EXPECT_LT(SimilarityError(n, a.data() + b * n * n, zc, tc), 1e-12 * n);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j + 1 < i; ++j) {
          EXPECT_EQ(tb[i * n + j], 0) << i << "," << j;
        }
      int pairs = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (k + 1 < n && tb[(k + 1) * n + k] != 0) {  // a standardized 2x2 block
          ++pairs;
          EXPECT_EQ(tb[k * n + k], tb[(k + 1) * n + k + 1]);
          EXPECT_LT(tb[k * n + k + 1] * tb[(k + 1) * n + k], 0);
          if (k + 2 < n) {
            EXPECT_EQ(tb[(k + 2) * n + k + 1], 0);
          }
          EXPECT_EQ(wr[b * n + k], tb[k * n + k]);
          EXPECT_GT(wi[b * n + k], 0);
          EXPECT_EQ(wi[b * n + k + 1], -wi[b * n + k]);
          ++k;
        } else {
          EXPECT_EQ(wr[b * n + k], tb[k * n + k]);
          EXPECT_EQ(wi[b * n + k], 0);
        }
      }
      if (n >= 7) {
        EXPECT_GT(pairs, 0);  // random real matrices of this size have complex pairs
      }
    }
  }
}

TEST(Geqp3, PivotedQrWithLeadingColumns) {
  const int64_t m = 7, n = 5, k = 5;
  std::vector<cd> a = RandomMatrix(m * n, false, 77);
  // Column 3 is forced to lead (jpvt != 0); the others are free.
  Literal jpvt =
      Literal::FromInt64s(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {n}), {0, 0, 0, 1, 0});
  for (const char* target : {"lapack_dgeqp3_ffi", "cuhybrid_geqp3"}) {
    SCOPED_TRACE(target);
    StatusOr<Literal> r =
        RunHlo(StrCat(R"(HloModule m
ENTRY e {
  a = f64[7,5] parameter(0)
  p = s32[5] parameter(1)
  ROOT c = (f64[7,5]{0,1}, s32[5], f64[5]) custom-call(a, p), custom_call_target=")",
                      target, R"(", api_version=API_VERSION_TYPED_FFI, backend_config={}
})"),
               {MakeLiteral(PrimitiveType::kF64, {m, n}, a), jpvt});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<cd> qr = eval_internal::LiteralToComplexes(r->tuple_element(0));
    std::vector<int64_t> perm = testing::Ints(r->tuple_element(1));
    std::vector<cd> tau = eval_internal::LiteralToComplexes(r->tuple_element(2));
    EXPECT_EQ(perm[0], 4);  // the leading column
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int64_t>{1, 2, 3, 4, 5}));
    // Q = H(0) ... H(k-1) (m x m), A P = Q R.
    std::vector<std::vector<cd>> vs;
    for (int64_t i = 0; i < k; ++i) {
      std::vector<cd> v(m, cd(0));
      v[i] = 1;
      for (int64_t r2 = i + 1; r2 < m; ++r2) v[r2] = qr[r2 * n + i];
      vs.push_back(v);
    }
    std::vector<cd> q = ReflectorProduct(m, vs, tau);
    double err = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        cd s = 0;
        for (int64_t l = 0; l <= std::min(j, m - 1); ++l) s += q[i * m + l] * qr[l * n + j];
        err = std::max(err, std::abs(s - a[i * n + perm[j] - 1]));
      }
    EXPECT_LT(err, 1e-13);
    // After the leading column, |R_ii| does not increase.
    for (int64_t i = 1; i + 1 < k; ++i)
      EXPECT_GE(std::abs(qr[i * n + i]), std::abs(qr[(i + 1) * n + i + 1]) * (1 - 1e-12));
  }
}

TEST(GpuSolver, CholeskyUpdate) {
  const int64_t n = 6;
  // r = chol(M)^T for M = B B^T + n I; check r'^T r' = r^T r + w w^T and r' upper, diag > 0.
  std::vector<cd> bm = RandomMatrix(n * n, false, 5), w = RandomMatrix(n, false, 6);
  std::vector<double> m(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = i == j ? n : 0;
      for (int64_t l = 0; l < n; ++l) s += bm[i * n + l].real() * bm[j * n + l].real();
      m[i * n + j] = s;
    }
  std::vector<cd> r(n * n, cd(0));  // upper Cholesky factor
  for (int64_t j = 0; j < n; ++j) {
    double d = m[j * n + j];
    for (int64_t l = 0; l < j; ++l) d -= std::norm(r[l * n + j]);
    r[j * n + j] = std::sqrt(d);
    for (int64_t i = j + 1; i < n; ++i) {
      double s = m[j * n + i];
      for (int64_t l = 0; l < j; ++l) s -= r[l * n + j].real() * r[l * n + i].real();
      r[j * n + i] = s / r[j * n + j].real();
    }
  }
  StatusOr<Literal> res = RunHlo(
      R"(HloModule m
ENTRY e {
  r = f64[6,6] parameter(0)
  w = f64[6] parameter(1)
  ROOT c = (f64[6,6], f64[6]) custom-call(r, w), custom_call_target="cu_cholesky_update_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
})",
      {MakeLiteral(PrimitiveType::kF64, {n, n}, r), MakeLiteral(PrimitiveType::kF64, {n}, w)});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  std::vector<double> r2 = testing::Doubles(res->tuple_element(0));
  double err = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GT(r2[i * n + i], 0);
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(r2[i * n + j], 0);
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < n; ++l) s += r2[l * n + i] * r2[l * n + j];
      err = std::max(err, std::abs(s - m[i * n + j] - w[i].real() * w[j].real()));
    }
  }
  EXPECT_LT(err, 1e-12);
}

TEST(LinalgCustomCall, EmptyShapes) {
  // No pivots (an LU of a 3 x 0 matrix): the identity permutation.
  StatusOr<Literal> r =
      RunHlo(R"(HloModule m
ENTRY e {
  p = s32[2,0] parameter(0)
  ROOT c = s32[2,3] custom-call(p), custom_call_target="cu_lu_pivots_to_permutation", api_version=API_VERSION_TYPED_FFI
})",
             {Literal(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, {2, 0}))});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Ints(*r), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  // An SVD of a 3 x 0 matrix: no values, U = I; an eigendecomposition of a batch of none.
  r = RunHlo(R"(HloModule m
ENTRY e {
  p = f32[3,0] parameter(0)
  ROOT c = (f32[3,0], f32[0], f32[3,3], f32[0,0], s32[]) custom-call(p), custom_call_target="lapack_sgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 65 : ui8}
})",
             {Literal(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3, 0}))});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Doubles(r->tuple_element(2)),
            (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  r = RunHlo(R"(HloModule m
ENTRY e {
  p = f32[0,4,4] parameter(0)
  ROOT c = (f32[0,4,4], f32[0,4], s32[0]) custom-call(p), custom_call_target="cusolver_syevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={algorithm = 0 : ui8, lower = true}
})",
             {Literal(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {0, 4, 4}))});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(LinalgCustomCall, UnknownTargetNamesIt) {
  for (const char* t : {"lapack_sgges_ffi", "cublas_geqrf_batched_ffi", "cuhybrid_eig_other"}) {
    StatusOr<Literal> r =
        RunHlo(StrCat(R"(HloModule m
ENTRY e {
  p = f32[2,2] parameter(0)
  ROOT c = (f32[2,2]{0,1}, s32[]) custom-call(p), custom_call_target=")",
                      t, R"(", api_version=API_VERSION_TYPED_FFI
})"),
               {Literal(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2, 2}))});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(t), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace kiln
