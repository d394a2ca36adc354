// The LAPACK custom calls of JAX's CPU lowering whose results are defined only up to sign or
// phase, and the tridiagonal solver:
//   lapack_{s,d}syevd_ffi / lapack_{c,z}heevd_ffi  (a) -> (v, w, info): eigenvalues of the
//       Hermitian matrix given by the `uplo` triangle (backend_config uplo 'L' (76) / 'U' (85)),
//       ascending in w; eigenvectors in the columns of v when mode = 'V' (86); with mode 'N'
//       (78) v holds them too (LAPACK leaves it unspecified; JAX ignores it). info = 0.
//   lapack_{s,d,c,z}gesdd_ffi, lapack_{s,d,c,z}gesvd_ffi  (a) -> (a, s, u, vt, info): singular
//       values descending; mode 'A' (65) full U (m x m) and V^H (n x n), 'S' (83) the thin
//       ones (m x k, k x n), 'N' (78) none (u and vt are zeros). The first result is the input
//       (LAPACK leaves it unspecified; JAX ignores it). info = 0.
//   lapack_?sytrd_ffi / ?hetrd_ffi / ?gehrd_ffi / ?geqp3_ffi: lapack_reduce.cc's (dispatched
//       here).
//   lapack_{s,d,c,z}gtsv_ffi  (dl, d, du, b) -> (dl', d', du', x, info): LAPACK ?gtsv (Gaussian
//       elimination with partial pivoting; |re| + |im| for complex pivots); dl[0] and du[n-1]
//       are not read. info = 0, or the 1-based row of an exactly zero pivot (x is then the
//       partly transformed b, as LAPACK leaves it).
// Methods, in double precision (real arithmetic when the input has no imaginary parts, complex
// otherwise): eigen: Householder tridiagonalization and implicit QL with accumulated rotations
// (backward stable: eigenvalues to ~eps ||A||, as LAPACK's); SVD: one-sided (Hestenes) Jacobi
// on the columns stored contiguously, to a relative off-diagonal of ~2e-15. Results agree with
// LAPACK's to the rounding of the stored type wherever the problem is well conditioned.
// Sign/phase convention (vectors are unique only up to a unit factor): every eigenvector, and
// every right singular vector v_j, is scaled so that its component of largest magnitude (the
// first one within a relative 1e-9 of the largest) is real and positive; u_j follows from
// A v_j = s_j u_j. Left singular vectors of zero singular values (s_j <= 1e-13 s_max) and the
// columns of a full U beyond min(m, n) are completed to an orthonormal basis by Gram-Schmidt
// over the unit vectors, taking the one with the largest residual first; they then get the same
// largest-component convention. Degenerate eigen/singular values have no unique vectors at all:
// compare invariants (V diag(w) V^H, U diag(s) V^H), not vectors, there.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

#include "kiln/eval/array_util.h"
#include "kiln/eval/lapack_internal.h"

namespace kiln::eval_internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kOffTolerance = 2e-15;
constexpr int kMaxSweeps = 80;

// The 2x2 unitary g (row-major) with g^H [[alpha, gamma], [conj(gamma), beta]] g diagonal:
// g = diag(1, e^{-i arg gamma}) [[c, s], [-s, c]] with Golub-Van Loan's symmetric Schur rotation
// of the real matrix [[alpha, |gamma|], [|gamma|, beta]].
void JacobiRotation(double alpha, double beta, cd gamma, cd g[4]) {
  const double mag = std::abs(gamma);
  const cd phase = mag > 0 ? std::conj(gamma) / mag : cd(1);  // e^{-i arg gamma}
  const double tau = (beta - alpha) / (2 * mag);
  const double t = tau >= 0 ? 1 / (tau + std::hypot(1.0, tau)) : -1 / (-tau + std::hypot(1.0, tau));
  const double c = 1 / std::hypot(1.0, t), s = t * c;
  g[0] = c;
  g[1] = s;
  g[2] = -s * phase;
  g[3] = c * phase;
}

// Scales column j of the rows x cols matrix x so that its largest component is real positive;
// returns the factor (1 for a zero column).
cd NormalizePhase(cd* x, int64_t rows, int64_t cols, int64_t j) {
  double big = 0;
  for (int64_t r = 0; r < rows; ++r) big = std::max(big, std::abs(x[r * cols + j]));
  if (!(big > 0)) return 1;
  for (int64_t r = 0; r < rows; ++r) {
    const double a = std::abs(x[r * cols + j]);
    if (a >= big * (1 - 1e-9)) {
      const cd f = std::conj(x[r * cols + j]) / a;
      for (int64_t i = 0; i < rows; ++i) x[i * cols + j] *= f;
      x[r * cols + j] = a;
      return f;
    }
  }
  return 1;
}

inline double Conj(double x) { return x; }
inline cd Conj(cd x) { return std::conj(x); }
inline double Sq(double x) { return x * x; }
inline double Sq(cd x) { return std::norm(x); }
inline double Re(double x) { return x; }
inline double Re(cd x) { return x.real(); }

// sum_r conj(x[r]) y[r], in four interleaved partial sums (independent dependency chains; the
// compiler may not reassociate one running sum). Complex products spelled out, avoiding the
// library's NaN-recovering complex multiply in the inner loop.
inline double Dot(const double* x, const double* y, int64_t len) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t r = 0;
  for (; r + 4 <= len; r += 4) {
    s0 += x[r] * y[r];
    s1 += x[r + 1] * y[r + 1];
    s2 += x[r + 2] * y[r + 2];
    s3 += x[r + 3] * y[r + 3];
  }
  for (; r < len; ++r) s0 += x[r] * y[r];
  return (s0 + s1) + (s2 + s3);
}
inline cd Dot(const cd* x, const cd* y, int64_t len) {
  const double* a = reinterpret_cast<const double*>(x);
  const double* b = reinterpret_cast<const double*>(y);
  double re0 = 0, im0 = 0, re1 = 0, im1 = 0;
  int64_t r = 0;
  for (; r + 2 <= len; r += 2) {
    re0 += a[2 * r] * b[2 * r] + a[2 * r + 1] * b[2 * r + 1];
    im0 += a[2 * r] * b[2 * r + 1] - a[2 * r + 1] * b[2 * r];
    re1 += a[2 * r + 2] * b[2 * r + 2] + a[2 * r + 3] * b[2 * r + 3];
    im1 += a[2 * r + 2] * b[2 * r + 3] - a[2 * r + 3] * b[2 * r + 2];
  }
  for (; r < len; ++r) {
    re0 += a[2 * r] * b[2 * r] + a[2 * r + 1] * b[2 * r + 1];
    im0 += a[2 * r] * b[2 * r + 1] - a[2 * r + 1] * b[2 * r];
  }
  return cd(re0 + re1, im0 + im1);
}

// Fills the columns of the n x n matrix q whose `have` flag is false so that q becomes unitary
// (the others are orthonormal already).
void CompleteBasis(cd* q, int64_t n, std::vector<bool> have) {
  // qt: q's columns as contiguous rows (the projections below run over them).
  std::vector<cd> qt(n * n), r(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < n; ++c) qt[c * n + i] = q[i * n + c];
  for (int64_t j = 0; j < n; ++j) {
    if (have[j]) continue;
    // The unit vector with the largest residual against the columns so far.
    int64_t best = 0;
    double best_res = -1;
    for (int64_t i = 0; i < n; ++i) {
      double res = 1;
      for (int64_t c = 0; c < n; ++c)
        if (have[c]) res -= std::norm(q[i * n + c]);
      if (res > best_res + 1e-12) {
        best_res = res;
        best = i;
      }
    }
    std::fill(r.begin(), r.end(), cd(0));
    r[best] = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t c = 0; c < n; ++c) {
        if (!have[c]) continue;
        const cd* col = &qt[c * n];
        const cd dot = Dot(col, r.data(), n);
        for (int64_t i = 0; i < n; ++i) r[i] -= dot * col[i];
      }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += std::norm(r[i]);
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i) q[i * n + j] = qt[j * n + i] = r[i] / norm;
    have[j] = true;
  }
}

// Eigen-decomposition of the full Hermitian n x n row-major h (destroyed), T = double for a
// real matrix, cd otherwise: eigenvalues in d (unordered), the eigenvector of d[j] in row j of
// zt (n x n, i.e. zt = V^T, so that the QL rotations below touch contiguous rows).
// 1. Householder tridiagonalization Q^H H Q = T (as ?sytd2 with uplo 'L': reflector i zeroes
//    column i below the subdiagonal; the beta of ?larfg is real so T is real symmetric).
// 2. Q formed explicitly (backward accumulation of the reflectors), stored transposed in zt.
// 3. Implicit QL with Wilkinson-type shifts on T (the classic tql2 scheme), each Givens rotation
//    applied to two rows of zt.
template <typename T>
void TridiagonalEigen(std::vector<T>& h, int64_t n, std::vector<double>& d, std::vector<T>& zt) {
  std::vector<double> e(n, 0.0);
  std::vector<T> tau(n, T(0)), x(n), xc(n), w(n);
  d.assign(n, 0.0);
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t len = n - i - 1;  // the block rows/cols i+1 .. n-1
    T* col = &x[0];
    for (int64_t k = 0; k < len; ++k) col[k] = h[(i + 1 + k) * n + i];
    double xnorm2 = 0;
    for (int64_t k = 1; k < len; ++k) xnorm2 += Sq(col[k]);
    const T alpha = col[0];
    T t = 0;
    double beta = Re(alpha);
    if (xnorm2 > 0 || Sq(alpha) != Sq(Re(alpha))) {
      // H = I - t v v^H, v = (1, col[1:] / (alpha - beta)), H^H (alpha, col[1:]) = (beta, 0).
      beta = std::sqrt(Sq(alpha) + xnorm2);
      if (Re(alpha) >= 0) beta = -beta;
      t = (T(beta) - alpha) / T(beta);
      const T scale = T(1) / (alpha - T(beta));
      for (int64_t k = 1; k < len; ++k) h[(i + 1 + k) * n + i] = col[k] * scale;
    }
    e[i] = beta;
    tau[i] = t;
    if (t == T(0)) continue;
    // v in x; H^H A H on the trailing block (LAPACK's ?hemv + ?her2 step):
    // p = t A v, q = p - 1/2 t (p^H v) v, A -= v q^H + q v^H.
    x[0] = 1;
    for (int64_t k = 1; k < len; ++k) x[k] = h[(i + 1 + k) * n + i];
    const int64_t off = i + 1;
    // (A v)_r = sum_c conj(vc_c) A_rc with vc = conj(v) (Dot conjugates its first argument).
    for (int64_t k = 0; k < len; ++k) xc[k] = Conj(x[k]);
    for (int64_t r = 0; r < len; ++r) {
      w[r] = t * Dot(&xc[0], &h[(off + r) * n + off], len);
    }
    T dot = 0;
    for (int64_t k = 0; k < len; ++k) dot += Conj(w[k]) * x[k];
    const T a = -0.5 * t * dot;
    for (int64_t k = 0; k < len; ++k) w[k] += a * x[k];
    for (int64_t r = 0; r < len; ++r) {
      T* row = &h[(off + r) * n + off];
      const T vr = x[r], wr = w[r];
      for (int64_t c = 0; c < len; ++c) row[c] -= vr * Conj(w[c]) + wr * Conj(x[c]);
    }
  }
  for (int64_t i = 0; i < n; ++i) d[i] = Re(h[i * n + i]);
  // Q = H(0) H(1) ... H(n-2), built as H(0) (H(1) (... I)) in q (row-major), then transposed.
  std::vector<T> q(n * n, T(0));
  for (int64_t i = 0; i < n; ++i) q[i * n + i] = 1;
  for (int64_t i = n - 2; i >= 0; --i) {
    if (tau[i] == T(0)) continue;
    const int64_t off = i + 1, len = n - off;
    x[0] = 1;
    for (int64_t k = 1; k < len; ++k) x[k] = h[(off + k) * n + i];
    // q(off:, off:) -= t v (v^H q(off:, off:)); columns before off are untouched so far.
    std::fill(w.begin(), w.begin() + len, T(0));
    for (int64_t r = 0; r < len; ++r) {
      const T cv = Conj(x[r]);
      const T* row = &q[(off + r) * n + off];
      for (int64_t c = 0; c < len; ++c) w[c] += cv * row[c];
    }
    for (int64_t r = 0; r < len; ++r) {
      const T f = tau[i] * x[r];
      T* row = &q[(off + r) * n + off];
      for (int64_t c = 0; c < len; ++c) row[c] -= f * w[c];
    }
  }
  zt.assign(n * n, T(0));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c) zt[c * n + r] = q[r * n + c];
  // Implicit QL on (d, e): e[i] couples i and i + 1.
  constexpr double eps = std::numeric_limits<double>::epsilon();
  for (int64_t l = 0; l < n; ++l) {
    for (int iter = 0; iter < 60; ++iter) {
      int64_t m = l;
      for (; m + 1 < n; ++m)
        if (std::abs(e[m]) <= eps * (std::abs(d[m]) + std::abs(d[m + 1]))) break;
      if (m == l) break;
      // Shift: the eigenvalue of the leading 2x2 block closer to d[l].
      double g = (d[l + 1] - d[l]) / (2 * e[l]);
      double r = std::hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + (g >= 0 ? r : -r));
      double s = 1, c = 1, p = 0;
      bool deflated = false;
      for (int64_t i = m - 1; i >= l; --i) {
        const double f = s * e[i], b = c * e[i];
        r = std::hypot(f, g);
        e[i + 1] = r;
        if (r == 0) {  // underflow: split here and restart
          d[i + 1] -= p;
          e[m] = 0;
          deflated = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = d[i + 1] - p;
        r = (d[i] - g) * s + 2 * c * b;
        p = s * r;
        d[i + 1] = g + p;
        g = c * r - b;
        T* zi = &zt[i * n];
        T* zj = &zt[(i + 1) * n];
        for (int64_t k = 0; k < n; ++k) {
          const T fz = zj[k];
          zj[k] = s * zi[k] + c * fz;
          zi[k] = c * zi[k] - s * fz;
        }
      }
      if (deflated) continue;
      d[l] -= p;
      e[l] = g;
      e[m] = 0;
    }
  }
}

template <typename T>
T FromComplex(cd z) {
  if constexpr (std::is_same_v<T, double>) {
    return z.real();
  } else {
    return z;
  }
}

// One-sided Jacobi sweeps on the n columns of an m-row matrix stored transposed (row j of wt,
// m long, is column j), accumulating the rotations in the rows of vt (n x n, row j = column j
// of V). Rotations and the pair's dot products run over contiguous rows.
template <typename T>
void JacobiSweeps(std::vector<T>& wt, int64_t m, int64_t n, std::vector<T>& vt) {
  cd g[4];
  std::vector<double> norm2(n);
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    // Squared column norms, exact at the start of each sweep and updated by each rotation
    // (the rotated pair's Gram matrix becomes diag(alpha - t |gamma|, beta + t |gamma|)).
    for (int64_t j = 0; j < n; ++j) {
      norm2[j] = Re(Dot(&wt[j * m], &wt[j * m], m));
    }
    for (int64_t p = 0; p + 1 < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T* wp = &wt[p * m];
        T* wq = &wt[q * m];
        const double alpha = norm2[p], beta = norm2[q];
        if (!(alpha > 0 && beta > 0)) continue;
        const T gamma = Dot(wp, wq, m);
        const double mag = std::abs(gamma);
        if (mag <= kOffTolerance * std::sqrt(alpha * beta)) continue;
        rotated = true;
        JacobiRotation(alpha, beta, cd(gamma), g);
        // tan of the rotation angle, as JacobiRotation picks it.
        const double t = g[1].real() / g[0].real();
        norm2[p] = std::max(alpha - t * mag, 0.0);
        norm2[q] = std::max(beta + t * mag, 0.0);
        const T g0 = FromComplex<T>(g[0]), g1 = FromComplex<T>(g[1]), g2 = FromComplex<T>(g[2]),
                g3 = FromComplex<T>(g[3]);
        auto rotate = [&](T* xp, T* xq, int64_t len) {
          for (int64_t r = 0; r < len; ++r) {
            const T a = xp[r], b = xq[r];
            xp[r] = a * g0 + b * g2;
            xq[r] = a * g1 + b * g3;
          }
        };
        rotate(wp, wq, m);
        rotate(&vt[p * n], &vt[q * n], n);
      }
    if (!rotated) break;
  }
}

// From this many columns on, the Jacobi sweeps start from A V0 instead of A, V0 the
// eigenvectors of A^H A: its columns are then orthogonal up to rounding (for the well-separated
// part of the spectrum), and the sweeps only polish, in a few sweeps instead of ~10. The result
// is still the Jacobi iteration's fixed point (same stopping rule), V = V0 times its rotations.
constexpr int64_t kPreconditionMin = 48;

// wt (n rows of m: the columns of A) becomes V0^T-combined columns A V0, vt (n x n) becomes
// V0^T (row j = column j of V0).
template <typename T>
void PreconditionColumns(std::vector<T>& wt, int64_t m, int64_t n, std::vector<T>& vt) {
  std::vector<T> gram(n * n);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t q = p; q < n; ++q) {
      const T* wp = &wt[p * m];
      const T* wq = &wt[q * m];
      const T s = Dot(wp, wq, m);
      gram[p * n + q] = s;
      gram[q * n + p] = Conj(s);
    }
  for (int64_t p = 0; p < n; ++p) gram[p * n + p] = Re(gram[p * n + p]);
  std::vector<double> ev;
  TridiagonalEigen(gram, n, ev, vt);
  // Row j of the new wt: sum_k V0[k][j] wt[k] = sum_k vt[j][k] wt[k].
  std::vector<T> out(n * m, T(0));
  for (int64_t j = 0; j < n; ++j) {
    T* o = &out[j * m];
    for (int64_t k = 0; k < n; ++k) {
      const T f = vt[j * n + k];
      const T* src = &wt[k * m];
      for (int64_t r = 0; r < m; ++r) o[r] += f * src[r];
    }
  }
  wt.swap(out);
}

// One-sided Jacobi SVD of the m x n matrix a with m >= n: s (n values, descending), u (m x m,
// full) and v (n x n).
void SvdTall(const cd* a, int64_t m, int64_t n, double* s, cd* u, cd* v) {
  bool finite = true, real = true;
  for (int64_t i = 0; i < m * n; ++i) {
    finite = finite && std::isfinite(a[i].real()) && std::isfinite(a[i].imag());
    real = real && a[i].imag() == 0;
  }
  if (!finite) {
    std::fill(s, s + n, kNaN);
    std::fill(u, u + m * m, cd(kNaN, 0));
    std::fill(v, v + n * n, cd(kNaN, 0));
    return;
  }
  // wt: column j of the rotated A in row j (m long); vt: column j of V in row j.
  std::vector<cd> wt(n * m), vt(n * n, cd(0));
  auto run = [&]<typename T>(T) {
    std::vector<T> w(n * m), z(n * n, T(0));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) w[j * m + r] = FromComplex<T>(a[r * n + j]);
    if (n >= kPreconditionMin) {
      PreconditionColumns(w, m, n, z);
    } else {
      for (int64_t i = 0; i < n; ++i) z[i * n + i] = 1;
    }
    JacobiSweeps(w, m, n, z);
    std::copy(w.begin(), w.end(), wt.begin());
    std::copy(z.begin(), z.end(), vt.begin());
  };
  if (real) {
    run(0.0);
  } else {
    run(cd(0));
  }
  std::vector<double> norms(n);
  for (int64_t j = 0; j < n; ++j) {
    double t = 0;
    for (int64_t r = 0; r < m; ++r) t += std::norm(wt[j * m + r]);
    norms[j] = std::sqrt(t);
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return norms[x] > norms[y]; });
  const double smax = n > 0 ? norms[order[0]] : 0;
  std::fill(u, u + m * m, cd(0));
  std::vector<bool> have(m, false);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t src = order[j];
    s[j] = norms[src];
    for (int64_t r = 0; r < n; ++r) v[r * n + j] = vt[src * n + r];
    if (s[j] > 1e-13 * smax && s[j] > 0) {
      for (int64_t r = 0; r < m; ++r) u[r * m + j] = wt[src * m + r] / s[j];
      have[j] = true;
    }
  }
  // Phase convention on v_j, carried to u_j, before completing U.
  for (int64_t j = 0; j < n; ++j) {
    const cd f = NormalizePhase(v, n, n, j);
    if (have[j])
      for (int64_t r = 0; r < m; ++r) u[r * m + j] *= f;
  }
  std::vector<bool> given = have;
  CompleteBasis(u, m, have);
  for (int64_t j = 0; j < m; ++j)
    if (!given[j]) NormalizePhase(u, m, m, j);
}

// SVD of the m x n matrix a: s (min(m, n), descending), u (m x m), v (n x n), A = U S V^H.
void Svd(const cd* a, int64_t m, int64_t n, double* s, cd* u, cd* v) {
  if (m >= n) {
    SvdTall(a, m, n, s, u, v);
    return;
  }
  // A^H = U' S V'^H, so A = V' S U'^H: U = V', V = U'. The phase convention is then redone on V.
  std::vector<cd> ah(n * m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) ah[j * m + i] = std::conj(a[i * n + j]);
  SvdTall(ah.data(), n, m, s, v, u);
  for (int64_t j = 0; j < m; ++j) {
    const cd f = NormalizePhase(v, n, n, j);
    for (int64_t r = 0; r < m; ++r) u[r * m + j] *= f;
  }
}

bool LapackTarget(std::string_view t, std::string_view op) {
  // lapack_<s|d|c|z><op>_ffi
  if (t.size() != op.size() + 12 || t.substr(0, 7) != "lapack_" || t.substr(t.size() - 4) != "_ffi")
    return false;
  const char p = t[7];
  return (p == 's' || p == 'd' || p == 'c' || p == 'z') && t.substr(8, op.size()) == op;
}

StatusOr<Literal> Gtsv(const HloInstruction& instr, std::span<const Literal* const> ops) {
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 5));
  KILN_ASSIGN_OR_RETURN(GtsvResult r, GtsvSolve(instr, ops));
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), r.dl));
  parts.push_back(StoreTo(Element(instr.shape(), 1), r.d));
  parts.push_back(StoreTo(Element(instr.shape(), 2), r.du));
  parts.push_back(StoreTo(Element(instr.shape(), 3), r.x));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 4), r.info));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace

void HermitianEigen(const std::vector<cd>& a, int64_t batch, int64_t n, bool lower,
                    std::vector<double>& w, std::vector<cd>& v) {
  w.assign(batch * n, 0);
  v.assign(batch * n * n, cd(0));
  std::vector<cd> h(n * n);
  std::vector<double> ev(n);
  for (int64_t b = 0; b < batch; ++b) {
    const cd* x = a.data() + b * n * n;
    double fro = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        // Element (i, j) of the Hermitian matrix the triangle defines.
        const bool stored = lower ? i >= j : i <= j;
        cd e = stored ? x[i * n + j] : std::conj(x[j * n + i]);
        if (i == j) e = e.real();
        h[i * n + j] = e;
        fro += std::norm(e);
      }
    fro = std::sqrt(fro);
    cd* vb = v.data() + b * n * n;
    double* wb = w.data() + b * n;
    if (!std::isfinite(fro)) {
      std::fill(wb, wb + n, kNaN);
      std::fill(vb, vb + n * n, cd(kNaN, 0));
      continue;
    }
    // zt row j: the eigenvector of ev[j].
    bool real = true;
    for (const cd& z : h) real = real && z.imag() == 0;
    std::vector<cd> zt(n * n);
    if (real) {
      std::vector<double> hr(n * n), zr;
      for (int64_t i = 0; i < n * n; ++i) hr[i] = h[i].real();
      TridiagonalEigen(hr, n, ev, zr);
      std::copy(zr.begin(), zr.end(), zt.begin());
    } else {
      TridiagonalEigen(h, n, ev, zt);
    }
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return ev[x] < ev[y]; });
    for (int64_t j = 0; j < n; ++j) {
      wb[j] = ev[order[j]];
      for (int64_t r = 0; r < n; ++r) vb[r * n + j] = zt[order[j] * n + r];
      NormalizePhase(vb, n, n, j);
    }
  }
}

StatusOr<Literal> SyevdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower) {
  if (ops.size() != 1) return InvalidArgument("syevd %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 3));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  if (d.m != d.n) return InvalidArgument("syevd %", instr.name(), ": matrix must be square");
  std::vector<double> w;
  std::vector<cd> v;
  HermitianEigen(LiteralToComplexes(*ops[0]), d.batch, d.n, lower, w, v);
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), v));
  parts.push_back(StoreTo(Element(instr.shape(), 1), std::vector<cd>(w.begin(), w.end())));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 2), std::vector<int64_t>(d.batch, 0)));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> SvdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                            bool compute_uv, SvdOutputs layout) {
  if (ops.size() != 1) return InvalidArgument("svd %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 5));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  const int64_t m = d.m, n = d.n, k = std::min(m, n);
  const Shape& xs = Element(instr.shape(), 2);
  const Shape& ys = Element(instr.shape(), 3);
  if (xs.rank() < 2 || ys.rank() < 2)
    return InvalidArgument("svd %", instr.name(), ": u and v results must be matrices");
  const int64_t xr = xs.dimensions(xs.rank() - 2), xc = xs.dimensions(xs.rank() - 1);
  const int64_t yr = ys.dimensions(ys.rank() - 2), yc = ys.dimensions(ys.rank() - 1);
  // Which factor each result holds, and how many of its columns (U, V) or rows (V^H).
  auto check = [&](bool ok) -> Status {
    if (ok) return OkStatus();
    return InvalidArgument("svd %", instr.name(), " (", instr.attrs().custom_call_target,
                           "): result shapes ", xs.ToString(), ", ", ys.ToString(),
                           " do not fit a ", m, "x", n, " operand");
  };
  if (compute_uv) {
    switch (layout) {
      case SvdOutputs::kUVt:
        KILN_RETURN_IF_ERROR(check(xr == m && xc >= k && xc <= m && yc == n && yr >= k && yr <= n));
        break;
      case SvdOutputs::kVtU:
        KILN_RETURN_IF_ERROR(check(xc == n && xr >= k && xr <= n && yr == m && yc >= k && yc <= m));
        break;
      case SvdOutputs::kUV:
        KILN_RETURN_IF_ERROR(check(xr == m && xc >= k && xc <= m && yr == n && yc >= k && yc <= n));
        break;
    }
  }
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<cd> s(d.batch * k), x(d.batch * xr * xc, cd(0)), y(d.batch * yr * yc, cd(0));
  std::vector<double> sb(k);
  std::vector<cd> u(m * m), v(n * n);
  for (int64_t b = 0; b < d.batch; ++b) {
    Svd(a.data() + b * m * n, m, n, sb.data(), u.data(), v.data());
    for (int64_t j = 0; j < k; ++j) s[b * k + j] = sb[j];
    if (!compute_uv) continue;
    // U's leading `cols` columns, V's leading `cols` columns, V^H's leading `rows` rows.
    auto put_u = [&](cd* out, int64_t cols) {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = u[r * m + c];
    };
    auto put_v = [&](cd* out, int64_t cols) {
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = v[r * n + c];
    };
    auto put_vh = [&](cd* out, int64_t rows) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < n; ++c) out[r * n + c] = std::conj(v[c * n + r]);
    };
    cd* xb = x.data() + b * xr * xc;
    cd* yb = y.data() + b * yr * yc;
    switch (layout) {
      case SvdOutputs::kUVt:
        put_u(xb, xc);
        put_vh(yb, yr);
        break;
      case SvdOutputs::kVtU:
        put_vh(xb, xr);
        put_u(yb, yc);
        break;
      case SvdOutputs::kUV:
        put_u(xb, xc);
        put_v(yb, yc);
        break;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), a));
  parts.push_back(StoreTo(Element(instr.shape(), 1), s));
  parts.push_back(StoreTo(xs, x));
  parts.push_back(StoreTo(ys, y));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 4), std::vector<int64_t>(d.batch, 0)));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<GtsvResult> GtsvSolve(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 4) return InvalidArgument("gtsv %", instr.name(), " takes (dl, d, du, b)");
  for (int64_t i = 0; i < 4; ++i) KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[i], i));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[3], 3));
  const int64_t n = bd.m, nrhs = bd.n, batch = bd.batch;
  for (int64_t i = 0; i < 3; ++i)
    if (ops[i]->element_count() != batch * n)
      return InvalidArgument("gtsv %", instr.name(), ": diagonal ", i, " must have ", batch, " x ",
                             n, " elements");
  const bool complex = IsComplexType(ops[3]->shape().element_type());
  auto mag = [&](cd z) {
    return complex ? std::abs(z.real()) + std::abs(z.imag()) : std::abs(z.real());
  };
  GtsvResult r;
  r.dl = LiteralToComplexes(*ops[0]);
  r.d = LiteralToComplexes(*ops[1]);
  r.du = LiteralToComplexes(*ops[2]);
  r.x = LiteralToComplexes(*ops[3]);
  r.info.assign(batch, 0);
  for (int64_t b = 0; b < batch; ++b) {
    cd* dl = r.dl.data() + b * n + 1;  // LAPACK's DL(i) is JAX's dl[i + 1]
    cd* d = r.d.data() + b * n;
    cd* du = r.du.data() + b * n;
    cd* x = r.x.data() + b * n * nrhs;
    auto row = [&](int64_t i) { return x + i * nrhs; };
    int64_t info = 0;
    for (int64_t i = 0; i + 1 < n && info == 0; ++i) {
      const bool last = i + 2 == n;
      if (mag(d[i]) >= mag(dl[i])) {  // no interchange
        if (d[i] == cd(0)) {
          info = i + 1;
          break;
        }
        const cd fact = dl[i] / d[i];
        d[i + 1] -= fact * du[i];
        for (int64_t c = 0; c < nrhs; ++c) row(i + 1)[c] -= fact * row(i)[c];
        if (!last) dl[i] = 0;
      } else {  // interchange rows i and i + 1
        const cd fact = d[i] / dl[i];
        d[i] = dl[i];
        const cd temp = d[i + 1];
        d[i + 1] = du[i] - fact * temp;
        if (!last) {
          dl[i] = du[i + 1];
          du[i + 1] = -fact * dl[i];
        }
        du[i] = temp;
        for (int64_t c = 0; c < nrhs; ++c) {
          const cd t = row(i)[c];
          row(i)[c] = row(i + 1)[c];
          row(i + 1)[c] = t - fact * row(i + 1)[c];
        }
      }
    }
    if (info == 0 && n > 0 && d[n - 1] == cd(0)) info = n;
    r.info[b] = info;
    if (info != 0) continue;
    for (int64_t c = 0; c < nrhs; ++c) {
      for (int64_t i = n; i-- > 0;) {
        cd t = row(i)[c];
        if (i + 1 < n) t -= du[i] * row(i + 1)[c];
        if (i + 2 < n) t -= dl[i] * row(i + 2)[c];
        row(i)[c] = t / d[i];
      }
    }
  }
  return r;
}

std::optional<StatusOr<Literal>> EvalLapackEigCustomCall(const HloInstruction& instr,
                                                         std::span<const Literal* const> ops) {
  const std::string& t = instr.attrs().custom_call_target;
  if (LapackTarget(t, "syevd") || LapackTarget(t, "heevd"))
    return SyevdKernel(instr, ops, BackendInt(instr, "uplo", 'L') == 'L');
  if (LapackTarget(t, "gesdd") || LapackTarget(t, "gesvd"))
    return SvdKernel(instr, ops, BackendInt(instr, "mode", 'A') != 'N', SvdOutputs::kUVt);
  if (LapackTarget(t, "gtsv")) return Gtsv(instr, ops);
  if (LapackTarget(t, "sytrd") || LapackTarget(t, "hetrd"))
    return SytrdKernel(instr, ops, BackendInt(instr, "uplo", 'L') == 'L');
  if (LapackTarget(t, "gehrd")) return GehrdKernel(instr, ops);
  if (LapackTarget(t, "geqp3")) return Geqp3Kernel(instr, ops);
  return std::nullopt;
}

}  // namespace kiln::eval_internal
