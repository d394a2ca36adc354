// Native cpu kernels for the general (non-Hermitian) eigenproblem and the Schur forms
// (Note [Linear-algebra kernels] in kernels/linalg.cc):
//   lapack_{s,d}geev_ffi, {cu,hip}hybrid_eig_real   (a) -> (wr, wi, vl, vr, info)
//   lapack_{c,z}geev_ffi, {cu,hip}hybrid_eig_comp   (a) -> (w, vl, vr, info)
//   lapack_{c,z}gees_ffi   (a) -> (t, z, w, sdim, info)        complex Schur form A = Z T Z^H
//   lapack_{s,d}gees_ffi   (a) -> (t, z, wr, wi, sdim, info)   real Schur form A = Z T Z^T
// (backend_config: geev's compute_left / compute_right = 'V', or left / right = true for the
// hybrid names; gees' mode 'V'/'N'; sort other than 'N' is declined at compile time).
//
// Note [Eigenvalue order]
//   A general matrix's eigenvalues have no canonical order and its Schur form is not unique:
//   both are whatever the QR iteration leaves. The contract is the evaluator's
//   (eval/lapack_geev.cc), which follows LAPACK's routines step by step so that the order is
//   LAPACK's in practice; these kernels run the same steps, so that they leave the same order
//   and the same Schur form (up to rounding, and barring a deflation test that rounding tips
//   the other way):
//     ?gebal's diagonal scaling (no permutations; geev only);
//     the Householder reduction to Hessenberg form (?gehd2), Q accumulated;
//     complex input: ?lahqr's single-shift complex QR (real subdiagonal kept by unitary
//       scalings, Ahues-Tisseur deflation at the input type's ulp, Wilkinson shift, exceptional
//       shifts every 10 stalled steps from the bottom and the top alternately, sweeps started
//       below two small subdiagonal elements);
//     real input: ?lahqr's Francis double-shift QR with the same tests, each converged 2x2
//       block put in ?lanv2's standard form; geev then splits each complex-pair block by the
//       unitary rotation onto its eigenvector, giving a complex triangular T whose pairs are
//       adjacent, the positive imaginary part first.
//   geev's vectors: back substitution in T (a denominator below eps |A|_F raised to it, as
//   ?trevc does) mapped through Z and the balancing; unit 2-norm; complex input: the component
//   of largest modulus (the first within a relative 1e-9) real positive; a real eigenvalue of a
//   real matrix: the sign the back substitution gives; a real matrix's complex pair: ?trevc's
//   scaling in the Schur basis, then ?lartg's rotation (PairPhase). A failed iteration (30 n
//   steps on one eigenvalue, or a non-finite input) sets info to the 1-based index of the last
//   eigenvalue not found and every float result of that matrix to NaN.
//   Arithmetic is double precision, complex only where the input or T is complex, in the
//   evaluator's operation order. That matters beyond the order: a complex Schur form is unique
//   only up to the phases of Z's columns, and the iteration picks them by scaling with the
//   phase of subdiagonal elements that have converged to rounding noise -- so gees' T and Z
//   (and any near-tie in a deflation test) match the evaluator's only where every rounding
//   does. Hence this file is built without fused multiply-adds on x86 (-mno-fma in
//   src/kiln/cpu/CMakeLists.txt, which -march=native would otherwise enable: GCC then fuses
//   std::complex products even under -ffp-contract=off), as the evaluator is built; elsewhere
//   both get the compiler's default contraction. A reference that rounds differently gives
//   gees results that differ by those phases.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/linalg_util.h"
#include "kiln/eval/lapack_internal.h"  // BackendInt: the FFI backend_config reader

namespace kiln::cpu::internal::linalg {
namespace {

using eval_internal::BackendInt;

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kExceptionalShift = 10;

bool IsSingle(PrimitiveType t) { return t == PrimitiveType::kF32 || t == PrimitiveType::kC64; }
// ?lamch('P') and ?lamch('S') of the input type: the precision of the deflation tests.
double UlpOf(PrimitiveType t) { return IsSingle(t) ? std::numeric_limits<float>::epsilon() : kEps; }
double SafminOf(PrimitiveType t) {
  return IsSingle(t) ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
}

// A row-major n x n matrix.
template <class S>
struct Square {
  int64_t n = 0;
  std::vector<S> v;
  S& operator()(int64_t r, int64_t c) { return v[r * n + c]; }
  const S& operator()(int64_t r, int64_t c) const { return v[r * n + c]; }
  static Square Identity(int64_t n) {
    Square m{n, std::vector<S>(n * n, S(0))};
    for (int64_t i = 0; i < n; ++i) m(i, i) = 1;
    return m;
  }
};

double FrobeniusNorm(const std::vector<cd>& a) {
  double s = 0;
  for (const cd& x : a) s += std::norm(x);
  return std::sqrt(s);
}
double FrobeniusNorm(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

// ?gebal's scaling (job 'S'): h := D^-1 h D, D = diag(scale) of powers of two, until every
// row/column pair's 2-norms are within 0.95 of their sum.
template <class S>
void Balance(Square<S>& h, std::vector<double>& scale, double safmin, double ulp) {
  const int64_t n = h.n;
  scale.assign(n, 1.0);
  const double sfmin1 = safmin / ulp, sfmax1 = 1 / sfmin1;
  const double sfmin2 = sfmin1 * 2, sfmax2 = 1 / sfmin2;
  for (bool again = true; again;) {
    again = false;
    for (int64_t i = 0; i < n; ++i) {
      double c = 0, r = 0, ca = 0, ra = 0, cmax = -1, rmax = -1;
      for (int64_t k = 0; k < n; ++k) {
        const S hc = h(k, i), hr = h(i, k);
        c += std::norm(hc);
        r += std::norm(hr);
        // The modulus of the entry largest in |re| + |im| (i?amax).
        if (Cabs1(hc) > cmax) {
          cmax = Cabs1(hc);
          ca = std::abs(hc);
        }
        if (Cabs1(hr) > rmax) {
          rmax = Cabs1(hr);
          ra = std::abs(hr);
        }
      }
      c = std::sqrt(c);
      r = std::sqrt(r);
      if (c == 0 || r == 0) continue;
      if (!std::isfinite(c + r + ca + ra)) return;
      double g = r / 2, f = 1;
      const double s = c + r;
      while (c < g && std::max({f, c, ca}) < sfmax2 && std::min({r, g, ra}) > sfmin2) {
        f *= 2;
        c *= 2;
        ca *= 2;
        r /= 2;
        g /= 2;
        ra /= 2;
      }
      g = c / 2;
      while (g >= r && std::max(r, ra) < sfmax2 && std::min({f, c, g, ca}) > sfmin2) {
        f /= 2;
        c /= 2;
        g /= 2;
        ca /= 2;
        r *= 2;
        ra *= 2;
      }
      if (c + r >= 0.95 * s) continue;
      if (f < 1 && scale[i] < 1 && f * scale[i] <= sfmin1) continue;
      if (f > 1 && scale[i] > 1 && scale[i] >= sfmax1 / f) continue;
      scale[i] *= f;
      again = true;
      for (int64_t k = 0; k < n; ++k) h(i, k) /= f;
      for (int64_t k = 0; k < n; ++k) h(k, i) *= f;
    }
  }
}

// The reflectors of the Hessenberg reduction: zlarfg's, whose norm of (alpha, x) is
// sqrt(re^2 + im^2 + |x|^2), for real S too -- the evaluator reduces real matrices in complex
// arithmetic, and dlarfg's hypot rounds differently.
template <class S>
S HessenbergLarfg(S& alpha, S* x, int64_t len, int64_t stride) {
  if constexpr (std::is_same_v<S, cd>) {
    return Larfg(alpha, x, len, stride);
  } else {
    double xnorm = 0;
    for (int64_t i = 0; i < len; ++i) xnorm = std::hypot(xnorm, std::abs(x[i * stride]));
    if (xnorm == 0) return 0;
    const double norm = std::sqrt(alpha * alpha + xnorm * xnorm);
    const double beta = alpha >= 0 ? -norm : norm;
    const double tau = (beta - alpha) / beta, scale = 1 / (alpha - beta);
    for (int64_t i = 0; i < len; ++i) x[i * stride] *= scale;
    alpha = beta;
    return tau;
  }
}

// ?gehd2 on the whole matrix: h := Q^H h Q upper Hessenberg, z := z Q.
template <class S>
void Hessenberg(Square<S>& h, Square<S>& z) {
  const int64_t n = h.n;
  std::vector<S> v(n);
  for (int64_t i = 0; i + 2 < n; ++i) {
    S alpha = h(i + 1, i);
    const S tau = HessenbergLarfg(alpha, &h(i + 2, i), n - i - 2, n);
    std::fill(v.begin(), v.end(), S(0));
    v[i + 1] = 1;
    for (int64_t r = i + 2; r < n; ++r) v[r] = h(r, i);
    h(i + 1, i) = alpha;
    for (int64_t r = i + 2; r < n; ++r) h(r, i) = 0;
    if (tau == S(0)) continue;
    // Rows i+1.. := H^H them (columns i+1..); then columns i+1.. of h and z := them H.
    for (int64_t c = i + 1; c < n; ++c) {
      S s = 0;
      for (int64_t r = i + 1; r < n; ++r) s += Conj(v[r]) * h(r, c);
      s *= Conj(tau);
      for (int64_t r = i + 1; r < n; ++r) h(r, c) -= v[r] * s;
    }
    for (Square<S>* m : {&h, &z})
      for (int64_t r = 0; r < n; ++r) {
        S s = 0;
        for (int64_t c = i + 1; c < n; ++c) s += (*m)(r, c) * v[c];
        s *= tau;
        for (int64_t c = i + 1; c < n; ++c) (*m)(r, c) -= s * Conj(v[c]);
      }
  }
}

// The Ahues-Tisseur test of ?lahqr: whether subdiagonal element (k, k-1)
// is negligible (complex h: its real part is measured, the iteration keeps it real).
template <class S>
bool Negligible(const Square<S>& h, int64_t k, double smlnum, double ulp) {
  const int64_t n = h.n;
  if (Cabs1(h(k, k - 1)) <= smlnum) return true;
  double tst = Cabs1(h(k - 1, k - 1)) + Cabs1(h(k, k));
  if (tst == 0) {
    if (k >= 2) tst += std::abs(Re(h(k - 1, k - 2)));
    if (k + 1 < n) tst += std::abs(Re(h(k + 1, k)));
  }
  if (!(std::abs(Re(h(k, k - 1))) <= ulp * tst)) return false;
  const double ab = std::max(Cabs1(h(k, k - 1)), Cabs1(h(k - 1, k)));
  const double ba = std::min(Cabs1(h(k, k - 1)), Cabs1(h(k - 1, k)));
  const double aa = std::max(Cabs1(h(k, k)), Cabs1(h(k - 1, k - 1) - h(k, k)));
  const double bb = std::min(Cabs1(h(k, k)), Cabs1(h(k - 1, k - 1) - h(k, k)));
  const double s = aa + ab;
  return ba * (ab / s) <= std::max(smlnum, ulp * (bb * (aa / s)));
}

// ?lahqr for complex h (Hessenberg, n x n): h := its Schur form T (upper triangular), z := z Q.
// Returns 0 or the 1-based index of the last eigenvalue not found.
int64_t ComplexQr(Square<cd>& h, Square<cd>& z, double ulp) {
  const int64_t n = h.n;
  if (n == 0) return 0;
  // Row j of h from column `from` times f; column j of h (rows 0..to) and of z times conj(f).
  auto scale = [&](int64_t j, cd f, int64_t from, int64_t to) {
    for (int64_t c = from; c < n; ++c) h(j, c) *= f;
    for (int64_t r = 0; r <= to; ++r) h(r, j) *= std::conj(f);
    for (int64_t r = 0; r < n; ++r) z(r, j) *= std::conj(f);
  };
  for (int64_t i = 1; i < n; ++i) {  // a real subdiagonal
    if (h(i, i - 1).imag() == 0) continue;
    cd sc = h(i, i - 1) / Cabs1(h(i, i - 1));
    sc = std::conj(sc) / std::abs(sc);
    h(i, i - 1) = std::abs(h(i, i - 1));
    scale(i, sc, i, std::min(n - 1, i + 1));
  }
  const double smlnum = std::numeric_limits<double>::min() * (static_cast<double>(n) / ulp);
  const int64_t itmax = 30 * std::max<int64_t>(10, n);
  int64_t i = n - 1, kdefl = 0;
  while (i >= 0) {
    int64_t l = 0;
    bool converged = false;
    for (int64_t its = 0; its <= itmax; ++its) {
      int64_t k = i;
      while (k > l && !Negligible(h, k, smlnum, ulp)) --k;
      l = k;
      if (l > 0) h(l, l - 1) = 0;
      if (l >= i) {
        converged = true;
        break;
      }
      ++kdefl;
      cd shift;
      if (kdefl % (2 * kExceptionalShift) == 0) {
        shift = 0.75 * std::abs(h(i, i - 1).real()) + h(i, i);
      } else if (kdefl % kExceptionalShift == 0) {
        shift = 0.75 * std::abs(h(l + 1, l).real()) + h(l, l);
      } else {  // Wilkinson's
        shift = h(i, i);
        const cd u = std::sqrt(h(i - 1, i)) * std::sqrt(h(i, i - 1));
        double s = Cabs1(u);
        if (s != 0) {
          const cd x = 0.5 * (h(i - 1, i - 1) - shift);
          const double sx = Cabs1(x);
          s = std::max(s, sx);
          cd y = s * std::sqrt((x / s) * (x / s) + (u / s) * (u / s));
          if (sx > 0 && (x / sx).real() * y.real() + (x / sx).imag() * y.imag() < 0) y = -y;
          shift -= u * (u / (x + y));
        }
      }
      // The sweep starts at m, below two consecutive small subdiagonal elements if any.
      int64_t m = i - 1;
      cd v[2];
      for (;; --m) {
        const cd h11 = h(m, m), h22 = h(m + 1, m + 1);
        cd h11s = h11 - shift;
        double h21 = h(m + 1, m).real();
        const double s = Cabs1(h11s) + std::abs(h21);
        h11s /= s;
        h21 /= s;
        v[0] = h11s;
        v[1] = h21;
        if (m == l) break;
        const double h10 = h(m, m - 1).real();
        if (std::abs(h10) * std::abs(h21) <= ulp * (Cabs1(h11s) * (Cabs1(h11) + Cabs1(h22)))) break;
      }
      for (int64_t k2 = m; k2 < i; ++k2) {
        if (k2 > m) {
          v[0] = h(k2, k2 - 1);
          v[1] = h(k2 + 1, k2 - 1);
        }
        cd alpha = v[0];
        const cd t1 = Larfg(alpha, &v[1], 1, 1);
        v[0] = alpha;
        if (k2 > m) {
          h(k2, k2 - 1) = v[0];
          h(k2 + 1, k2 - 1) = 0;
        }
        const cd v2 = v[1];
        const double t2 = (t1 * v2).real();
        for (int64_t j = k2; j < n; ++j) {
          const cd sum = std::conj(t1) * h(k2, j) + t2 * h(k2 + 1, j);
          h(k2, j) -= sum;
          h(k2 + 1, j) -= sum * v2;
        }
        const int64_t rows = std::min(k2 + 2, i) + 1;
        for (int64_t r = 0; r < rows; ++r) {
          const cd sum = t1 * h(r, k2) + t2 * h(r, k2 + 1);
          h(r, k2) -= sum;
          h(r, k2 + 1) -= sum * std::conj(v2);
        }
        for (int64_t r = 0; r < n; ++r) {
          const cd sum = t1 * z(r, k2) + t2 * z(r, k2 + 1);
          z(r, k2) -= sum;
          z(r, k2 + 1) -= sum * std::conj(v2);
        }
        if (k2 == m && m > l) {  // h(m, m-1) stays real: rows/columns m..i rescaled
          cd temp = 1.0 - t1;
          temp /= std::abs(temp);
          h(m + 1, m) *= std::conj(temp);
          if (m + 2 <= i) h(m + 2, m + 1) *= temp;
          for (int64_t j = m; j <= i; ++j) {
            if (j == m + 1) continue;
            for (int64_t c = j + 1; c < n; ++c) h(j, c) *= temp;
            for (int64_t r = 0; r < j; ++r) h(r, j) *= std::conj(temp);
            for (int64_t r = 0; r < n; ++r) z(r, j) *= std::conj(temp);
          }
        }
      }
      cd temp = h(i, i - 1);  // h(i, i-1) made real
      if (temp.imag() != 0) {
        const double rtemp = std::abs(temp);
        h(i, i - 1) = rtemp;
        temp /= rtemp;
        for (int64_t c = i + 1; c < n; ++c) h(i, c) *= std::conj(temp);
        for (int64_t r = 0; r < i; ++r) h(r, i) *= temp;
        for (int64_t r = 0; r < n; ++r) z(r, i) *= temp;
      }
    }
    if (!converged) return i + 1;
    kdefl = 0;
    i = l - 1;
  }
  return 0;
}

// t := R^T t R on rows/columns p, p+1 (R = [[c, -s], [s, c]], ?rot), z := z R.
void Rotate(Square<double>& t, Square<double>& z, int64_t p, double c, double s) {
  const int64_t n = t.n;
  for (int64_t j = 0; j < n; ++j) {
    const double u = t(p, j), v = t(p + 1, j);
    t(p, j) = c * u + s * v;
    t(p + 1, j) = -s * u + c * v;
  }
  for (Square<double>* m : {&t, &z})
    for (int64_t r = 0; r < n; ++r) {
      const double u = (*m)(r, p), v = (*m)(r, p + 1);
      (*m)(r, p) = c * u + s * v;
      (*m)(r, p + 1) = -s * u + c * v;
    }
}

// ?lanv2: the 2x2 block at (p, p) rotated into standard form -- upper triangular for real
// eigenvalues, else equal diagonal elements and off-diagonal ones of opposite signs -- with
// the rotation applied to the rest of t and to z.
void Standardize(Square<double>& t, Square<double>& z, int64_t p, double ulp) {
  double a = t(p, p), b = t(p, p + 1), c = t(p + 1, p), d = t(p + 1, p + 1);
  double cs = 1, sn = 0;
  auto sign = [](double x, double y) { return y >= 0 ? std::abs(x) : -std::abs(x); };
  if (c == 0) return;
  if (b == 0) {  // swap rows and columns
    cs = 0;
    sn = 1;
    std::swap(a, d);
    b = -c;
    c = 0;
  } else if (a - d == 0 && sign(1, b) != sign(1, c)) {
    // already standard
  } else {
    double temp = a - d, pp = 0.5 * temp;
    const double bcmax = std::max(std::abs(b), std::abs(c));
    const double bcmis = std::min(std::abs(b), std::abs(c)) * sign(1, b) * sign(1, c);
    const double scale = std::max(std::abs(pp), bcmax);
    double zz = (pp / scale) * pp + (bcmax / scale) * bcmis;
    if (zz >= 4 * ulp) {  // real eigenvalues
      zz = pp + sign(std::sqrt(scale) * std::sqrt(zz), pp);
      a = d + zz;
      d = d - (bcmax / zz) * bcmis;
      const double tau = std::hypot(c, zz);
      cs = zz / tau;
      sn = c / tau;
      b = b - c;
      c = 0;
    } else {  // complex or nearly equal real eigenvalues: equal diagonal elements
      const double sigma = b + c;
      const double tau = std::hypot(sigma, temp);
      cs = std::sqrt(0.5 * (1 + std::abs(sigma) / tau));
      sn = -(pp / (tau * cs)) * sign(1, sigma);
      const double aa = a * cs + b * sn, bb = -a * sn + b * cs;
      const double cc = c * cs + d * sn, dd = -c * sn + d * cs;
      a = aa * cs + cc * sn;
      b = bb * cs + dd * sn;
      c = -aa * sn + cc * cs;
      d = -bb * sn + dd * cs;
      temp = 0.5 * (a + d);
      a = d = temp;
      if (c != 0) {
        if (b != 0) {
          if (sign(1, b) == sign(1, c)) {  // real after all: upper triangular
            const double sab = std::sqrt(std::abs(b)), sac = std::sqrt(std::abs(c));
            pp = sign(sab * sac, c);
            const double tau1 = 1 / std::sqrt(std::abs(b + c));
            a = temp + pp;
            d = temp - pp;
            b = b - c;
            c = 0;
            const double cs1 = sab * tau1, sn1 = sac * tau1;
            const double cs2 = cs * cs1 - sn * sn1;
            sn = cs * sn1 + sn * cs1;
            cs = cs2;
          }
        } else {
          b = -c;
          c = 0;
          const double cs2 = cs;
          cs = -sn;
          sn = cs2;
        }
      }
    }
  }
  Rotate(t, z, p, cs, sn);
  t(p, p) = a;
  t(p, p + 1) = b;
  t(p + 1, p) = c;
  t(p + 1, p + 1) = d;
}

// ?lahqr's Francis double-shift QR for real h (Hessenberg): h := its real Schur form, each
// 2x2 block standardized, z := z Q. Returns 0 or the 1-based index of the last eigenvalue not
// found.
int64_t RealQr(Square<double>& h, Square<double>& z, double ulp) {
  const int64_t n = h.n;
  if (n == 0) return 0;
  const double smlnum = std::numeric_limits<double>::min() * (static_cast<double>(n) / ulp);
  const int64_t itmax = 30 * std::max<int64_t>(10, n);
  // I - t1 (1, v2, v3)(1, v2, v3)^T (v3 unused when nr = 2) on rows k..k+nr-1 of h from column
  // k, on the same columns of h (rows 0..last) and of z.
  auto reflect = [&](int64_t k, int64_t nr, double t1, double v2, double v3, int64_t last) {
    const double t2 = t1 * v2, t3 = t1 * v3;
    for (int64_t j = k; j < n; ++j) {
      double sum = h(k, j) + v2 * h(k + 1, j);
      if (nr == 3) sum += v3 * h(k + 2, j);
      h(k, j) -= sum * t1;
      h(k + 1, j) -= sum * t2;
      if (nr == 3) h(k + 2, j) -= sum * t3;
    }
    for (Square<double>* m : {&h, &z}) {
      const int64_t rows = m == &h ? last + 1 : n;
      for (int64_t r = 0; r < rows; ++r) {
        double* row = &(*m)(r, 0);
        double sum = row[k] + v2 * row[k + 1];
        if (nr == 3) sum += v3 * row[k + 2];
        row[k] -= sum * t1;
        row[k + 1] -= sum * t2;
        if (nr == 3) row[k + 2] -= sum * t3;
      }
    }
  };
  int64_t i = n - 1, kdefl = 0;
  while (i >= 0) {
    int64_t l = 0;
    bool converged = false;
    for (int64_t its = 0; its <= itmax; ++its) {
      int64_t k = i;
      while (k > l && !Negligible(h, k, smlnum, ulp)) --k;
      l = k;
      if (l > 0) h(l, l - 1) = 0;
      if (l >= i - 1) {
        converged = true;
        break;
      }
      ++kdefl;
      double h11, h12, h21, h22;
      if (kdefl % (2 * kExceptionalShift) == 0) {
        const double s = std::abs(h(i, i - 1)) + std::abs(h(i - 1, i - 2));
        h11 = 0.75 * s + h(i, i);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
      } else if (kdefl % kExceptionalShift == 0) {
        const double s = std::abs(h(l + 1, l)) + std::abs(h(l + 2, l + 1));
        h11 = 0.75 * s + h(l, l);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
      } else {
        h11 = h(i - 1, i - 1);
        h21 = h(i, i - 1);
        h12 = h(i - 1, i);
        h22 = h(i, i);
      }
      // The shifts: the trailing 2x2 block's eigenvalues (a real pair: the one nearer h22, twice).
      double rt1r = 0, rt1i = 0, rt2r = 0, rt2i = 0;
      const double s = std::abs(h11) + std::abs(h12) + std::abs(h21) + std::abs(h22);
      if (s != 0) {
        h11 /= s;
        h21 /= s;
        h12 /= s;
        h22 /= s;
        const double tr = (h11 + h22) / 2;
        const double det = (h11 - tr) * (h22 - tr) - h12 * h21;
        const double rtdisc = std::sqrt(std::abs(det));
        if (det >= 0) {
          rt1r = tr * s;
          rt2r = rt1r;
          rt1i = rtdisc * s;
          rt2i = -rt1i;
        } else {
          rt1r = tr + rtdisc;
          rt2r = tr - rtdisc;
          if (std::abs(rt1r - h22) <= std::abs(rt2r - h22)) {
            rt1r *= s;
            rt2r = rt1r;
          } else {
            rt2r *= s;
            rt1r = rt2r;
          }
        }
      }
      int64_t m = i - 2;
      double v[3];
      for (;; --m) {
        double h21s = h(m + 1, m);
        double sc = std::abs(h(m, m) - rt2r) + std::abs(rt2i) + std::abs(h21s);
        h21s = h(m + 1, m) / sc;
        v[0] = h21s * h(m, m + 1) + (h(m, m) - rt1r) * ((h(m, m) - rt2r) / sc) - rt1i * (rt2i / sc);
        v[1] = h21s * (h(m, m) + h(m + 1, m + 1) - rt1r - rt2r);
        v[2] = h21s * h(m + 2, m + 1);
        sc = std::abs(v[0]) + std::abs(v[1]) + std::abs(v[2]);
        v[0] /= sc;
        v[1] /= sc;
        v[2] /= sc;
        if (m == l) break;
        const double h00 = std::abs(h(m, m - 1)) * (std::abs(v[1]) + std::abs(v[2]));
        const double h01 =
            std::abs(v[0]) * (std::abs(h(m - 1, m - 1)) + std::abs(h(m, m)) + std::abs(h(m + 1, m + 1)));
        if (h00 <= ulp * h01) break;
      }
      for (int64_t k2 = m; k2 < i; ++k2) {
        const int64_t nr = std::min<int64_t>(3, i - k2 + 1);
        if (k2 > m) {
          v[0] = h(k2, k2 - 1);
          v[1] = h(k2 + 1, k2 - 1);
          if (nr == 3) v[2] = h(k2 + 2, k2 - 1);
        }
        // dlarfg on (v[0]; v[1..nr-1]).
        double t1 = 0;
        const double xnorm = nr == 3 ? std::hypot(v[1], v[2]) : std::abs(v[1]);
        if (xnorm != 0) {
          const double beta = -std::copysign(std::hypot(v[0], xnorm), v[0]);
          t1 = (beta - v[0]) / beta;
          const double f = 1 / (v[0] - beta);
          v[1] *= f;
          if (nr == 3) v[2] *= f;
          v[0] = beta;
        }
        if (k2 > m) {
          h(k2, k2 - 1) = v[0];
          h(k2 + 1, k2 - 1) = 0;
          if (k2 < i - 1) h(k2 + 2, k2 - 1) = 0;
        } else if (m > l) {
          h(k2, k2 - 1) *= 1 - t1;
        }
        if (t1 != 0) reflect(k2, nr, t1, v[1], nr == 3 ? v[2] : 0, std::min(k2 + 3, i));
      }
    }
    if (!converged) return i + 1;
    if (l == i - 1) Standardize(h, z, i - 1, ulp);
    kdefl = 0;
    i = l - 1;
  }
  return 0;
}

// The complex triangular form of a real Schur form (t, zr): each standardized block
// [[a, b], [c, a]] (b c < 0, eigenvalues a +- i s) turned by the unitary g whose first column
// is the eigenvector (b, i s)/|.| of a + i s into [[a + i s, *], [0, a - i s]].
void SplitPairs(const Square<double>& t, const Square<double>& zr, Square<cd>& h, Square<cd>& z) {
  const int64_t n = t.n;
  h = Square<cd>{n, std::vector<cd>(t.v.begin(), t.v.end())};
  z = Square<cd>{n, std::vector<cd>(zr.v.begin(), zr.v.end())};
  for (int64_t p = 0; p + 1 < n; ++p) {
    if (t(p + 1, p) == 0) continue;
    const double a = t(p, p), b = t(p, p + 1), c = t(p + 1, p);
    const double s = std::sqrt(std::abs(b) * std::abs(c));
    const double r = std::hypot(b, s);
    const cd u1 = b / r, u2 = cd(0, s / r);
    const cd g[4] = {u1, -std::conj(u2), u2, std::conj(u1)};
    for (int64_t j = 0; j < n; ++j) {  // rows p, p+1 := g^H them
      const cd x = h(p, j), y = h(p + 1, j);
      h(p, j) = std::conj(g[0]) * x + std::conj(g[2]) * y;
      h(p + 1, j) = std::conj(g[1]) * x + std::conj(g[3]) * y;
    }
    for (Square<cd>* m : {&h, &z})
      for (int64_t row = 0; row < n; ++row) {  // columns p, p+1 := them g
        const cd x = (*m)(row, p), y = (*m)(row, p + 1);
        (*m)(row, p) = x * g[0] + y * g[2];
        (*m)(row, p + 1) = x * g[1] + y * g[3];
      }
    h(p + 1, p) = 0;
    h(p, p) = cd(a, s);
    h(p + 1, p + 1) = cd(a, -s);
    ++p;
  }
}

// Unit 2-norm; unless `real` (a real eigenvalue's vector of a real matrix: its sign kept, its
// rounding-level imaginary parts dropped), the component of largest modulus (the first within
// a relative 1e-9) made real positive.
void NormalizeVector(std::vector<cd>& x, bool real) {
  double nrm = 0, big = 0;
  for (const cd& e : x) {
    nrm += std::norm(e);
    big = std::max(big, std::abs(e));
  }
  if (!(nrm > 0)) return;
  cd f = 1.0 / std::sqrt(nrm);
  if (!real)
    for (const cd& e : x)
      if (std::abs(e) >= big * (1 - 1e-9)) {
        f *= std::conj(e) / std::abs(e);
        break;
      }
  for (cd& e : x) {
    e *= f;
    if (real) e = e.real();
  }
}

// The normalization ?geev gives the eigenvector x of a real matrix's complex pair whose
// standardized block sits at (k, k) of t (zr its Schur vectors, d the balancing, s the pair's
// imaginary part): ?trevc's scaling in the Schur basis ((1, i s/b) or (-s/c, i) for a right
// vector, (s/b, i) or (1, -i s/c) for a left one, by |b| >= |c|), unit 2-norm, then ?lartg's
// rotation making the component of largest modulus real with the sign of its real part.
void PairPhase(std::vector<cd>& x, int64_t k, const Square<double>& t, const Square<double>& zr,
               const std::vector<double>& d, double s, bool left) {
  const int64_t n = t.n;
  cd p0 = 0, p1 = 0;  // x's components k and k+1 in the Schur basis
  for (int64_t r = 0; r < n; ++r) {
    const cd xr = left ? x[r] * d[r] : x[r] / d[r];
    p0 += zr(r, k) * xr;
    p1 += zr(r, k + 1) * xr;
  }
  const double b = t(k, k + 1), c = t(k + 1, k);
  cd y0, y1;
  if (std::abs(b) >= std::abs(c)) {
    y0 = left ? cd(s / b) : cd(1);
    y1 = left ? cd(0, 1) : cd(0, s / b);
  } else {
    y0 = left ? cd(1) : cd(-s / c);
    y1 = left ? cd(0, -s / c) : cd(0, 1);
  }
  const cd beta = std::abs(p0) >= std::abs(p1) ? y0 / p0 : y1 / p1;
  double nrm = 0;
  for (cd& e : x) {
    e *= beta;
    nrm += std::norm(e);
  }
  if (!(nrm > 0) || !std::isfinite(nrm)) return;
  nrm = std::sqrt(nrm);
  int64_t kmax = 0;
  for (int64_t r = 0; r < n; ++r) {
    x[r] /= nrm;
    if (std::norm(x[r]) > std::norm(x[kmax])) kmax = r;
  }
  const double a = std::abs(x[kmax]);
  if (a == 0) return;
  const cd f = (x[kmax].real() >= 0 ? 1.0 : -1.0) * std::conj(x[kmax]) / a;
  for (cd& e : x) e *= f;
  x[kmax] = x[kmax].real();
}

// ---- geev ----

class GeevKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0;
  bool real_input_ = false, left_ = false, right_ = false;
  double ulp_ = kEps, safmin_ = 0;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    const int64_t n = n_;
    std::vector<cd> w(n), vl(n * n, cd(0)), vr(n * n, cd(0));
    const int64_t info = Solve(b, in[0], w, vl, vr);
    int64_t next = 0;
    if (real_input_) {
      std::vector<double> wr(n), wi(n);
      for (int64_t k = 0; k < n; ++k) {
        wr[k] = w[k].real();
        wi[k] = w[k].imag();
      }
      StoreRun(out[next++], b * n, wr);
      StoreRun(out[next++], b * n, wi);
    } else {
      StoreRun(out[next++], b * n, w);
    }
    StoreRun(out[next++], b * n * n, vl);
    StoreRun(out[next++], b * n * n, vr);
    PutInt(out[next], b, info);
  }

 private:
  int64_t Solve(int64_t b, const ArrayView& a, std::vector<cd>& w, std::vector<cd>& vl, std::vector<cd>& vr) const {
    const int64_t n = n_;
    Square<cd> h, z;  // the complex Schur form and vectors
    Square<double> t, zr;  // real input: the real Schur form and vectors
    std::vector<double> scale;
    double norm = 0;
    int64_t fail = 0;
    if (real_input_) {
      Square<double> hr{n, LoadRun<double>(a, b * n * n, n * n)};
      norm = FrobeniusNorm(hr.v);
      fail = std::isfinite(norm) ? 0 : n;
      if (fail == 0) {
        zr = Square<double>::Identity(n);
        Balance(hr, scale, safmin_, ulp_);
        Hessenberg(hr, zr);
        fail = RealQr(hr, zr, ulp_);
        t = std::move(hr);
        if (fail == 0) SplitPairs(t, zr, h, z);
      }
    } else {
      h = Square<cd>{n, LoadRun<cd>(a, b * n * n, n * n)};
      norm = FrobeniusNorm(h.v);
      fail = std::isfinite(norm) ? 0 : n;
      if (fail == 0) {
        z = Square<cd>::Identity(n);
        Balance(h, scale, safmin_, ulp_);
        Hessenberg(h, z);
        fail = ComplexQr(h, z, ulp_);
      }
    }
    if (fail != 0) {
      std::fill(w.begin(), w.end(), cd(kNaN, kNaN));
      std::fill(vl.begin(), vl.end(), cd(kNaN, kNaN));
      std::fill(vr.begin(), vr.end(), cd(kNaN, kNaN));
      return fail;
    }
    for (int64_t k = 0; k < n; ++k) w[k] = h(k, k);
    const double smin = std::max(kEps * norm, std::numeric_limits<double>::min());
    auto safe = [&](cd d) { return std::abs(d) < smin ? cd(smin) : d; };
    std::vector<cd> x(n);
    if (right_)
      for (int64_t k = 0; k < n; ++k) {  // T x = w_k x, x_k = 1, x_j = 0 below k
        std::fill(x.begin(), x.end(), cd(0));
        x[k] = 1;
        for (int64_t j = k - 1; j >= 0; --j) {
          cd s = 0;
          for (int64_t l = j + 1; l <= k; ++l) s += h(j, l) * x[l];
          x[j] = -s / safe(h(j, j) - h(k, k));
        }
        for (int64_t r = 0; r < n; ++r) {
          cd s = 0;
          for (int64_t l = 0; l <= k; ++l) s += z(r, l) * x[l];
          vr[r * n + k] = s * scale[r];
        }
      }
    if (left_)
      for (int64_t k = 0; k < n; ++k) {  // x^H T = w_k x^H, x_k = 1, x_j = 0 above k
        std::fill(x.begin(), x.end(), cd(0));
        x[k] = 1;
        for (int64_t j = k + 1; j < n; ++j) {
          cd s = 0;
          for (int64_t l = k; l < j; ++l) s += std::conj(h(l, j)) * x[l];
          x[j] = -s / safe(std::conj(h(j, j) - h(k, k)));
        }
        for (int64_t r = 0; r < n; ++r) {
          cd s = 0;
          for (int64_t l = k; l < n; ++l) s += z(r, l) * x[l];
          vl[r * n + k] = s / scale[r];
        }
      }
    for (std::vector<cd>* m : {&vl, &vr}) {
      const bool is_left = m == &vl;
      if (!(is_left ? left_ : right_)) continue;
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t r = 0; r < n; ++r) x[r] = (*m)[r * n + k];
        if (real_input_ && w[k].imag() > 0 && k + 1 < n) {
          PairPhase(x, k, t, zr, scale, w[k].imag(), is_left);
          for (int64_t r = 0; r < n; ++r) {
            (*m)[r * n + k] = x[r];
            (*m)[r * n + k + 1] = std::conj(x[r]);
          }
          ++k;
          continue;
        }
        NormalizeVector(x, real_input_ && w[k].imag() == 0);
        for (int64_t r = 0; r < n; ++r) (*m)[r * n + k] = x[r];
      }
    }
    return 0;
  }
};

// ---- gees ----

class GeesKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0;
  bool real_form_ = false;  // lapack_{s,d}gees: the real Schur form
  bool vectors_ = true;
  double ulp_ = kEps;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (real_form_) Real(b, in, out);
    else Complex(b, in, out);
  }

 private:
  void Complex(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_;
    Square<cd> h{n, LoadRun<cd>(in[0], b * n * n, n * n)};
    Square<cd> z = Square<cd>::Identity(n);
    int64_t fail = std::isfinite(FrobeniusNorm(h.v)) ? 0 : n;
    if (fail == 0) {
      Hessenberg(h, z);
      fail = ComplexQr(h, z, ulp_);
    }
    if (fail != 0) {
      std::fill(h.v.begin(), h.v.end(), cd(kNaN, kNaN));
      std::fill(z.v.begin(), z.v.end(), cd(kNaN, kNaN));
    }
    std::vector<cd> w(n);
    for (int64_t k = 0; k < n; ++k) w[k] = h(k, k);
    if (!vectors_) std::fill(z.v.begin(), z.v.end(), cd(0));
    StoreRun(out[0], b * n * n, h.v);
    StoreRun(out[1], b * n * n, z.v);
    StoreRun(out[2], b * n, w);
    PutInt(out[3], b, 0);
    PutInt(out[4], b, fail);
  }

  void Real(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_;
    Square<double> t{n, LoadRun<double>(in[0], b * n * n, n * n)};
    Square<double> z = Square<double>::Identity(n);
    int64_t fail = std::isfinite(FrobeniusNorm(t.v)) ? 0 : n;
    if (fail == 0) {
      Hessenberg(t, z);
      fail = RealQr(t, z, ulp_);
    }
    if (fail != 0) {
      std::fill(t.v.begin(), t.v.end(), kNaN);
      std::fill(z.v.begin(), z.v.end(), kNaN);
    }
    // wr, wi: a standardized block's pair with the positive imaginary part first.
    std::vector<double> wr(n), wi(n, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      wr[k] = t(k, k);
      if (fail == 0 && k + 1 < n && t(k + 1, k) != 0) {
        const double im = std::sqrt(std::abs(t(k, k + 1)) * std::abs(t(k + 1, k)));
        wr[k + 1] = t(k + 1, k + 1);
        wi[k] = im;
        wi[k + 1] = -im;
        ++k;
      }
    }
    if (!vectors_) std::fill(z.v.begin(), z.v.end(), 0.0);
    StoreRun(out[0], b * n * n, t.v);
    StoreRun(out[1], b * n * n, z.v);
    StoreRun(out[2], b * n, wr);
    StoreRun(out[3], b * n, wi);
    PutInt(out[4], b, 0);
    PutInt(out[5], b, fail);
  }
};

enum class Family { kNone, kGeev, kHybridEig, kComplexGees, kRealGees };

Family FamilyOf(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kCustomCall) return Family::kNone;
  const std::string& t = instr.attrs().custom_call_target;
  if (LapackTarget(t, "geev")) return Family::kGeev;
  if (t == "lapack_cgees_ffi" || t == "lapack_zgees_ffi") return Family::kComplexGees;
  if (t == "lapack_sgees_ffi" || t == "lapack_dgees_ffi") return Family::kRealGees;
  const std::string_view u = Unvendored(t);
  if (u == "hybrid_eig_real" || u == "hybrid_eig_comp") return Family::kHybridEig;
  return Family::kNone;
}

Status Expect(bool ok, const HloInstruction& instr, std::string_view what) {
  if (ok) return OkStatus();
  return InvalidArgument(instr.attrs().custom_call_target, " %", instr.name(), ": ", what);
}

}  // namespace

bool IsNativeLinalgEig(const HloInstruction& instr) { return FamilyOf(instr) != Family::kNone; }

StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgEigKernel(const HloInstruction& instr) {
  const std::string& target = instr.attrs().custom_call_target;
  const Family family = FamilyOf(instr);
  auto bint = [&](std::string_view key, int fallback) { return BackendInt(instr, key, fallback); };
  if (family == Family::kGeev || family == Family::kHybridEig) {
    const bool real = family == Family::kGeev ? (target[7] == 's' || target[7] == 'd')
                                              : target.ends_with("hybrid_eig_real");
    auto k = std::make_unique<GeevKernel>();
    KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 1, real ? 5 : 4));
    KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
    KILN_RETURN_IF_ERROR(Expect(real != k->complex_, instr, "the operand's type does not fit the target"));
    const int values = real ? 2 : 1;
    bool ok = d.m == d.n && k->out_shapes_[values + 2].num_elements() == d.batch;
    for (int i = 0; i < values; ++i) ok = ok && k->out_shapes_[i].num_elements() == d.batch * d.n;
    for (int i = values; i < values + 2; ++i)
      ok = ok && k->out_shapes_[i].num_elements() == d.batch * d.n * d.n;
    KILN_RETURN_IF_ERROR(Expect(ok, instr, "needs square matrices and results that fit"));
    k->n_ = d.n;
    k->batch_ = d.batch;
    k->work_ = 30 * d.n * d.n * d.n;
    k->real_input_ = real;
    if (family == Family::kGeev) {
      k->left_ = bint("compute_left", 'N') == 'V';
      k->right_ = bint("compute_right", 'N') == 'V';
    } else {
      k->left_ = bint("left", 0) != 0;
      k->right_ = bint("right", 0) != 0;
    }
    k->ulp_ = UlpOf(k->in_shapes_[0].element_type());
    k->safmin_ = SafminOf(k->in_shapes_[0].element_type());
    return std::unique_ptr<CpuKernel>(std::move(k));
  }
  if (family == Family::kComplexGees || family == Family::kRealGees) {
    const bool real = family == Family::kRealGees;
    if (bint("sort", 'N') != 'N') return Unimplemented(target, " %", instr.name(), ": sorted Schur forms (sort = 'S')");
    auto k = std::make_unique<GeesKernel>();
    KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 1, real ? 6 : 5));
    KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
    KILN_RETURN_IF_ERROR(Expect(real != k->complex_, instr, "the operand's type does not fit the target"));
    const int values = real ? 2 : 1;
    bool ok = d.m == d.n && k->out_shapes_[0].num_elements() == d.batch * d.n * d.n &&
              k->out_shapes_[1].num_elements() == d.batch * d.n * d.n &&
              k->out_shapes_[values + 2].num_elements() == d.batch &&
              k->out_shapes_[values + 3].num_elements() == d.batch;
    for (int i = 2; i < 2 + values; ++i) ok = ok && k->out_shapes_[i].num_elements() == d.batch * d.n;
    KILN_RETURN_IF_ERROR(Expect(ok, instr, "needs square matrices and results that fit"));
    k->n_ = d.n;
    k->batch_ = d.batch;
    k->work_ = 30 * d.n * d.n * d.n;
    k->real_form_ = real;
    k->vectors_ = bint("mode", 'V') == 'V';
    k->ulp_ = UlpOf(k->in_shapes_[0].element_type());
    return std::unique_ptr<CpuKernel>(std::move(k));
  }
  return Unimplemented("no native linear-algebra kernel for %", instr.name());
}

}  // namespace kiln::cpu::internal::linalg
