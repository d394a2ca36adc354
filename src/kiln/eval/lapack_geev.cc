// Eigenvalues, eigenvectors and Schur forms of general square matrices:
//   lapack_{s,d}geev_ffi, {cu,hip}hybrid_eig_real   (a) -> (wr, wi, vl, vr, info)
//   lapack_{c,z}geev_ffi, {cu,hip}hybrid_eig_comp   (a) -> (w, vl, vr, info)
//   lapack_{c,z}gees_ffi (backend_config mode 'V'/'N', sort 'N')  (a) -> (t, z, w, sdim, info):
//       the complex Schur form A = Z T Z^H, T upper triangular with w on its diagonal, Z
//       unitary (zeros for mode 'N'), sdim = 0. Only unitary-similarity invariants (T's
//       diagonal as a set, Z T Z^H, functions of A such as sqrtm) match LAPACK's; sort = 'S' is
//       Unimplemented.
//   lapack_{s,d}gees_ffi (same attributes)  (a) -> (t, z, wr, wi, sdim, info): the real Schur
//       form A = Z T Z^T by Francis double-shift QR: T quasi upper triangular, each complex
//       pair a 2x2 block in standard form (equal diagonal elements, off-diagonal elements of
//       opposite signs; wr = that diagonal, wi = +-sqrt(|b c|), the positive one first), real
//       eigenvalues on the diagonal; same invariants as above match LAPACK's.
// geev: vl / vr complex (n x n, eigenvectors in columns) whatever a's type. Left vectors are
// computed when backend_config has compute_left = 'V' (86) or left = true, right ones for
// compute_right = 'V' / right = true; the others are zeros (LAPACK leaves them unspecified and
// JAX ignores them). vl's columns u_k satisfy u_k^H A = w_k u_k^H, vr's A v_k = w_k v_k.
// Method (double): Householder reduction to Hessenberg form, then shifted QR iterations
// (Wilkinson shift, an exceptional shift every 10 stalled steps) to the complex Schur form
// A = Z T Z^H (real input: the real Schur form, its 2x2 blocks then split by unitary
// rotations), eigenvectors by back-substitution in T (a tiny denominator is raised to
// eps |T|, as LAPACK's ?trevc does) mapped back through Z.
// Conventions (LAPACK fixes neither the order nor the phase the same way):
//  - eigenvalues (and gees' T) come in the order of the Schur form's diagonal, from QR
//    iterations that follow LAPACK's ?lahqr (see RealSchur, ComplexSchur): in practice
//    LAPACK's ?geev order (checked on random matrices of sizes 2-30: all complex ones, 538 of
//    540 real ones), each real conjugate pair adjacent with the positive imaginary part first;
//    nothing guarantees it (above n = 75 LAPACK uses another QR). geev first balances the
//    matrix as ?gebal scales it (Balance; no permutations), as ?geev does.
//  - vectors are normalized as ?geev does: unit 2-norm; complex types: the component of
//    largest magnitude (the first within a relative 1e-9) real and positive; real types: a real
//    eigenvalue's vector keeps the sign the back-substitution gives it (1 at its own Schur
//    vector), a pair's vector gets ?trevc's scaling and ?lartg's rotation (RealPairPhase). With
//    LAPACK's Schur vectors reproduced (?lanv2's block standardization included), real vectors
//    matched LAPACK's on ~97% of the columns tried (f64), complex ones on all.
//  - for real a, real eigenvalues (the 1x1 blocks of the real Schur form) are exactly real and
//    so are their vectors; conjugate pairs have exactly conjugate eigenvalues.
// info = 0, or (if the QR iteration stalls: 30 n steps on one eigenvalue, or a non-finite
// input) the 1-based index of the last eigenvalue not found; then every output is NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kiln/eval/array_util.h"
#include "kiln/eval/lapack_internal.h"

namespace kiln::eval_internal {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// The relative precision LAPACK's routines for `t` test convergence against (?lamch('P')).
double TypeSafmin(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kC64 ? std::numeric_limits<float>::min()
                                                              : std::numeric_limits<double>::min();
}

double TypeUlp(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kC64
             ? std::numeric_limits<float>::epsilon()
             : kEps;
}

// Reduces the n x n row-major h to upper Hessenberg form in place, accumulating z := z Q.
void Hessenberg(cd* h, cd* z, int64_t n) {
  std::vector<cd> v(n);
  for (int64_t i = 0; i + 2 < n; ++i) {
    cd alpha = h[(i + 1) * n + i];
    const cd t = HouseholderLarfg(alpha, &h[(i + 2) * n + i], n - i - 2, n, true);
    std::fill(v.begin(), v.end(), cd(0));
    v[i + 1] = 1;
    for (int64_t r = i + 2; r < n; ++r) v[r] = h[r * n + i];
    h[(i + 1) * n + i] = alpha;
    for (int64_t r = i + 2; r < n; ++r) h[r * n + i] = 0;
    if (t == cd(0)) continue;
    // h := H^H h (rows i+1.., columns i+1..), then h := h H and z := z H (columns i+1..).
    for (int64_t c = i + 1; c < n; ++c) {
      cd s = 0;
      for (int64_t r = i + 1; r < n; ++r) s += std::conj(v[r]) * h[r * n + c];
      s *= std::conj(t);
      for (int64_t r = i + 1; r < n; ++r) h[r * n + c] -= v[r] * s;
    }
    for (cd* m : {h, z})
      for (int64_t r = 0; r < n; ++r) {
        cd s = 0;
        for (int64_t c = i + 1; c < n; ++c) s += m[r * n + c] * v[c];
        s *= t;
        for (int64_t c = i + 1; c < n; ++c) m[r * n + c] -= s * std::conj(v[c]);
      }
  }
}

double Cabs1(cd x) { return std::abs(x.real()) + std::abs(x.imag()); }

// Single-shift complex QR on the Hessenberg h (n x n) to upper triangular, accumulating z,
// following the scheme of LAPACK's ?lahqr for complex types so that eigenvalues usually settle
// in LAPACK's order: subdiagonal elements kept real by diagonal unitary scalings, the
// Ahues-Tisseur deflation test at relative precision `ulp`, Wilkinson's shift (exceptional
// shifts every 10 stalled steps, alternately from the bottom and the top), sweeps started
// below two consecutive small subdiagonal elements. Returns 0 or the 1-based index of the last
// eigenvalue not found.
int64_t ComplexSchur(cd* h, cd* z, int64_t n, double ulp) {
  if (n == 0) return 0;
  auto H = [&](int64_t r, int64_t c) -> cd& { return h[r * n + c]; };
  // Scales row j (columns from..n-1) of h by f, column j (rows 0..to) of h and z by conj(f).
  auto scale_row_col = [&](int64_t j, cd f, int64_t from, int64_t to) {
    for (int64_t c = from; c < n; ++c) H(j, c) *= f;
    for (int64_t r = 0; r <= to; ++r) H(r, j) *= std::conj(f);
    for (int64_t r = 0; r < n; ++r) z[r * n + j] *= std::conj(f);
  };
  for (int64_t i = 1; i < n; ++i) {  // real subdiagonal
    if (H(i, i - 1).imag() == 0) continue;
    cd sc = H(i, i - 1) / Cabs1(H(i, i - 1));
    sc = std::conj(sc) / std::abs(sc);
    H(i, i - 1) = std::abs(H(i, i - 1));
    scale_row_col(i, sc, i, std::min(n - 1, i + 1));
  }
  const double smlnum = std::numeric_limits<double>::min() * (static_cast<double>(n) / ulp);
  const int64_t itmax = 30 * std::max<int64_t>(10, n);
  constexpr int64_t kExceptional = 10;
  int64_t i = n - 1, kdefl = 0;
  while (i >= 0) {
    int64_t l = 0;
    bool converged = false;
    for (int64_t its = 0; its <= itmax; ++its) {
      int64_t k = i;
      for (; k > l; --k) {
        if (Cabs1(H(k, k - 1)) <= smlnum) break;
        double tst = Cabs1(H(k - 1, k - 1)) + Cabs1(H(k, k));
        if (tst == 0) {
          if (k >= 2) tst += std::abs(H(k - 1, k - 2).real());
          if (k + 1 < n) tst += std::abs(H(k + 1, k).real());
        }
        if (std::abs(H(k, k - 1).real()) <= ulp * tst) {
          const double ab = std::max(Cabs1(H(k, k - 1)), Cabs1(H(k - 1, k)));
          const double ba = std::min(Cabs1(H(k, k - 1)), Cabs1(H(k - 1, k)));
          const double aa = std::max(Cabs1(H(k, k)), Cabs1(H(k - 1, k - 1) - H(k, k)));
          const double bb = std::min(Cabs1(H(k, k)), Cabs1(H(k - 1, k - 1) - H(k, k)));
          const double s = aa + ab;
          if (ba * (ab / s) <= std::max(smlnum, ulp * (bb * (aa / s)))) break;
        }
      }
      l = k;
      if (l > 0) H(l, l - 1) = 0;
      if (l >= i) {
        converged = true;
        break;
      }
      ++kdefl;
      cd t;
      if (kdefl % (2 * kExceptional) == 0) {
        t = 0.75 * std::abs(H(i, i - 1).real()) + H(i, i);
      } else if (kdefl % kExceptional == 0) {
        t = 0.75 * std::abs(H(l + 1, l).real()) + H(l, l);
      } else {  // Wilkinson's shift
        t = H(i, i);
        const cd u = std::sqrt(H(i - 1, i)) * std::sqrt(H(i, i - 1));
        double s = Cabs1(u);
        if (s != 0) {
          const cd x = 0.5 * (H(i - 1, i - 1) - t);
          const double sx = Cabs1(x);
          s = std::max(s, sx);
          cd y = s * std::sqrt((x / s) * (x / s) + (u / s) * (u / s));
          if (sx > 0 && (x / sx).real() * y.real() + (x / sx).imag() * y.imag() < 0) y = -y;
          t -= u * (u / (x + y));
        }
      }
      // Two consecutive small subdiagonal elements: start the sweep at m.
      int64_t m = i - 1;
      cd v[2];
      for (;; --m) {
        const cd h11 = H(m, m), h22 = H(m + 1, m + 1);
        cd h11s = h11 - t;
        double h21 = H(m + 1, m).real();
        const double s = Cabs1(h11s) + std::abs(h21);
        h11s /= s;
        h21 /= s;
        v[0] = h11s;
        v[1] = h21;
        if (m == l) break;
        const double h10 = H(m, m - 1).real();
        if (std::abs(h10) * std::abs(h21) <= ulp * (Cabs1(h11s) * (Cabs1(h11) + Cabs1(h22)))) break;
      }
      for (int64_t k2 = m; k2 <= i - 1; ++k2) {
        if (k2 > m) {
          v[0] = H(k2, k2 - 1);
          v[1] = H(k2 + 1, k2 - 1);
        }
        cd alpha = v[0];
        const cd t1 = HouseholderLarfg(alpha, &v[1], 1, 1, true);
        v[0] = alpha;
        if (k2 > m) {
          H(k2, k2 - 1) = v[0];
          H(k2 + 1, k2 - 1) = 0;
        }
        const cd v2 = v[1];
        const double t2 = (t1 * v2).real();
        for (int64_t j = k2; j < n; ++j) {
          const cd sum = std::conj(t1) * H(k2, j) + t2 * H(k2 + 1, j);
          H(k2, j) -= sum;
          H(k2 + 1, j) -= sum * v2;
        }
        for (cd* mat : {h, z}) {
          const int64_t rows = mat == h ? std::min(k2 + 2, i) + 1 : n;
          for (int64_t r = 0; r < rows; ++r) {
            const cd sum = t1 * mat[r * n + k2] + t2 * mat[r * n + k2 + 1];
            mat[r * n + k2] -= sum;
            mat[r * n + k2 + 1] -= sum * std::conj(v2);
          }
        }
        if (k2 == m && m > l) {  // keep H(m, m-1) real: rescale rows/columns m..i
          cd temp = 1.0 - t1;
          temp /= std::abs(temp);
          H(m + 1, m) *= std::conj(temp);
          if (m + 2 <= i) H(m + 2, m + 1) *= temp;
          for (int64_t j = m; j <= i; ++j) {
            if (j == m + 1) continue;
            for (int64_t c = j + 1; c < n; ++c) H(j, c) *= temp;
            for (int64_t r = 0; r < j; ++r) H(r, j) *= std::conj(temp);
            for (int64_t r = 0; r < n; ++r) z[r * n + j] *= std::conj(temp);
          }
        }
      }
      cd temp = H(i, i - 1);  // make H(i, i-1) real
      if (temp.imag() != 0) {
        const double rtemp = std::abs(temp);
        H(i, i - 1) = rtemp;
        temp /= rtemp;
        for (int64_t c = i + 1; c < n; ++c) H(i, c) *= std::conj(temp);
        for (int64_t r = 0; r < i; ++r) H(r, i) *= temp;
        for (int64_t r = 0; r < n; ++r) z[r * n + i] *= temp;
      }
    }
    if (!converged) return i + 1;
    kdefl = 0;
    i = l - 1;
  }
  return 0;
}

// Diagonal balancing as LAPACK's ?gebal scales (no permutations): h := D^-1 h D with D = diag(
// scale) of powers of two, row/column pairs brought to comparable 2-norms (to within 0.95 of
// their sum) as ?geev does before its QR. `safmin`/`ulp` are the input type's.
void Balance(cd* h, int64_t n, std::vector<double>& scale, double safmin, double ulp) {
  scale.assign(n, 1.0);
  const double sfmin1 = safmin / ulp, sfmax1 = 1 / sfmin1;
  const double sfmin2 = sfmin1 * 2, sfmax2 = 1 / sfmin2;
  bool noconv = true;
  while (noconv) {
    noconv = false;
    for (int64_t i = 0; i < n; ++i) {
      double c = 0, r = 0, ca = 0, ra = 0, cmax = -1, rmax = -1;
      for (int64_t k = 0; k < n; ++k) {
        c += std::norm(h[k * n + i]);
        r += std::norm(h[i * n + k]);
        // The entries largest in |re| + |im| (?amax), measured by their modulus.
        if (Cabs1(h[k * n + i]) > cmax) {
          cmax = Cabs1(h[k * n + i]);
          ca = std::abs(h[k * n + i]);
        }
        if (Cabs1(h[i * n + k]) > rmax) {
          rmax = Cabs1(h[i * n + k]);
          ra = std::abs(h[i * n + k]);
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
      noconv = true;
      for (int64_t k = 0; k < n; ++k) h[i * n + k] /= f;
      for (int64_t k = 0; k < n; ++k) h[k * n + i] *= f;
    }
  }
}

// Unit 2-norm; then, unless `real` (a real eigenvalue's vector of a real matrix, whose sign is
// left as computed and whose imaginary parts are rounding, dropped), the largest component real
// and positive.
void NormalizeVector(cd* x, int64_t n, bool real) {
  double nrm = 0, big = 0;
  for (int64_t i = 0; i < n; ++i) {
    nrm += std::norm(x[i]);
    big = std::max(big, std::abs(x[i]));
  }
  if (!(nrm > 0)) return;
  cd f = 1.0 / std::sqrt(nrm);
  for (int64_t i = 0; i < n && !real; ++i)
    if (std::abs(x[i]) >= big * (1 - 1e-9)) {
      f *= std::conj(x[i]) / std::abs(x[i]);
      break;
    }
  for (int64_t i = 0; i < n; ++i) {
    x[i] *= f;
    if (real) x[i] = x[i].real();
  }
}

// ?geev's normalization of the eigenvector x (n entries) of the conjugate pair whose real Schur
// block sits at (k, k+1) of t (z its Schur vectors, d the balancing): first the scaling ?trevc
// gives it (in the Schur basis, (1, i s/b) or (-s/c, i) for a right vector, (s/b, i) or
// (1, -i s/c) for a left one, whichever of |b| >= |c| picks), then unit 2-norm and a rotation
// making the component of largest modulus real with the sign of its real part (?lartg).
void RealPairPhase(cd* x, int64_t n, int64_t k, const std::vector<double>& t,
                   const std::vector<double>& z, const std::vector<double>& d, double s,
                   bool left) {
  cd p0 = 0, p1 = 0;  // x in the Schur basis, components k and k+1
  for (int64_t r = 0; r < n; ++r) {
    const cd xr = left ? x[r] * d[r] : x[r] / d[r];
    p0 += z[r * n + k] * xr;
    p1 += z[r * n + k + 1] * xr;
  }
  const double b = t[k * n + k + 1], c = t[(k + 1) * n + k];
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
  for (int64_t r = 0; r < n; ++r) {
    x[r] *= beta;
    nrm += std::norm(x[r]);
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
  for (int64_t r = 0; r < n; ++r) x[r] *= f;
  x[kmax] = x[kmax].real();
}

// The complex Schur form of the Hessenberg h (accumulating z) for geev: complex QR, or for a
// real matrix its real Schur form with each 2x2 block then split by a unitary rotation, so
// that eigenvalues come in the real Schur form's order with each conjugate pair adjacent, the
// positive imaginary part first (LAPACK's ?geev order when the two QR iterations agree).
// For real input, `real_t` and `real_z` receive the real Schur form and vectors.
int64_t GeevSchur(cd* h, cd* z, int64_t n, bool real_input, double ulp, std::vector<double>& real_t,
                  std::vector<double>& real_z);

StatusOr<Literal> Geev(const HloInstruction& instr, std::span<const Literal* const> ops,
                       bool real_outputs, bool left, bool right) {
  if (ops.size() != 1) return InvalidArgument("geev %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, real_outputs ? 5 : 4));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  if (bd.m != bd.n) return InvalidArgument("geev %", instr.name(), ": matrix must be square");
  const int64_t n = bd.n;
  const bool real_input = !IsComplexType(ops[0]->shape().element_type());
  const double ulp = TypeUlp(ops[0]->shape().element_type());
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<cd> w(bd.batch * n), vl(bd.batch * n * n, cd(0)), vr(bd.batch * n * n, cd(0));
  std::vector<int64_t> info(bd.batch, 0);
  std::vector<cd> h(n * n), z(n * n), x(n);
  std::vector<bool> real_value(n);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> balance(n, 1.0), schur_t, schur_z;
  for (int64_t b = 0; b < bd.batch; ++b) {
    std::copy(a.begin() + b * n * n, a.begin() + (b + 1) * n * n, h.begin());
    double norm = 0;
    for (const cd& e : h) norm += std::norm(e);
    norm = std::sqrt(norm);
    cd* wb = w.data() + b * n;
    cd* lb = vl.data() + b * n * n;
    cd* rb = vr.data() + b * n * n;
    for (int64_t i = 0; i < n * n; ++i) z[i] = i / n == i % n ? 1.0 : 0.0;
    int64_t fail = std::isfinite(norm) ? 0 : n;
    if (fail == 0) {
      Balance(h.data(), n, balance, TypeSafmin(ops[0]->shape().element_type()), ulp);
      Hessenberg(h.data(), z.data(), n);
      fail = GeevSchur(h.data(), z.data(), n, real_input, ulp, schur_t, schur_z);
    }
    if (fail != 0) {
      info[b] = fail;
      std::fill(wb, wb + n, cd(nan, nan));
      std::fill(lb, lb + n * n, cd(nan, nan));
      std::fill(rb, rb + n * n, cd(nan, nan));
      continue;
    }
    for (int64_t k = 0; k < n; ++k) {
      wb[k] = h[k * n + k];
      real_value[k] = real_input && wb[k].imag() == 0;
    }
    const double smin = std::max(kEps * norm, std::numeric_limits<double>::min());
    auto safe = [&](cd d) { return std::abs(d) < smin ? cd(smin) : d; };
    for (int64_t k = 0; k < n && right; ++k) {
      std::fill(x.begin(), x.end(), cd(0));
      x[k] = 1;
      for (int64_t j = k - 1; j >= 0; --j) {
        cd s = 0;
        for (int64_t l = j + 1; l <= k; ++l) s += h[j * n + l] * x[l];
        x[j] = -s / safe(h[j * n + j] - h[k * n + k]);
      }
      for (int64_t r = 0; r < n; ++r) {
        cd s = 0;
        for (int64_t l = 0; l <= k; ++l) s += z[r * n + l] * x[l];
        rb[r * n + k] = s * balance[r];
      }
    }
    for (int64_t k = 0; k < n && left; ++k) {
      std::fill(x.begin(), x.end(), cd(0));
      x[k] = 1;
      for (int64_t j = k + 1; j < n; ++j) {
        cd s = 0;
        for (int64_t l = k; l < j; ++l) s += std::conj(h[l * n + j]) * x[l];
        x[j] = -s / safe(std::conj(h[j * n + j] - h[k * n + k]));
      }
      for (int64_t r = 0; r < n; ++r) {
        cd s = 0;
        for (int64_t l = k; l < n; ++l) s += z[r * n + l] * x[l];
        lb[r * n + k] = s / balance[r];
      }
    }
    // Normalize columns (copied out and back: the matrices are row-major).
    for (cd* m : {lb, rb}) {
      if ((m == lb && !left) || (m == rb && !right)) continue;
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t r = 0; r < n; ++r) x[r] = m[r * n + k];
        if (real_input && wb[k].imag() > 0 && k + 1 < n) {
          RealPairPhase(x.data(), n, k, schur_t, schur_z, balance, wb[k].imag(), m == lb);
          for (int64_t r = 0; r < n; ++r) {
            m[r * n + k] = x[r];
            m[r * n + k + 1] = std::conj(x[r]);
          }
          ++k;
          continue;
        }
        NormalizeVector(x.data(), n, real_value[k]);
        for (int64_t r = 0; r < n; ++r) m[r * n + k] = x[r];
      }
    }
  }
  std::vector<Literal> parts;
  int64_t next = 0;
  if (real_outputs) {
    std::vector<cd> wr(w.size()), wi(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      wr[i] = w[i].real();
      wi[i] = w[i].imag();
    }
    parts.push_back(StoreTo(Element(instr.shape(), next++), wr));
    parts.push_back(StoreTo(Element(instr.shape(), next++), wi));
  } else {
    parts.push_back(StoreTo(Element(instr.shape(), next++), w));
  }
  parts.push_back(StoreTo(Element(instr.shape(), next++), vl));
  parts.push_back(StoreTo(Element(instr.shape(), next++), vr));
  parts.push_back(StoreIntsTo(Element(instr.shape(), next++), info));
  return Literal::MakeTuple(std::move(parts));
}

// ---- The real Schur form (real input): Francis double-shift QR in double ----

// The 2x2 block of the n x n row-major t at (p, p) times R from the right, R^T from the left,
// over the whole matrix (t := R^T t R on rows/columns p, p+1), and z := z R.
void RotateReal(double* t, double* z, int64_t n, int64_t p, double c, double s) {
  // R = [[c, -s], [s, c]].
  for (int64_t j = 0; j < n; ++j) {
    const double u = t[p * n + j], v = t[(p + 1) * n + j];
    t[p * n + j] = c * u + s * v;
    t[(p + 1) * n + j] = -s * u + c * v;
  }
  for (double* m : {t, z})
    for (int64_t r = 0; r < n; ++r) {
      const double u = m[r * n + p], v = m[r * n + p + 1];
      m[r * n + p] = c * u + s * v;
      m[r * n + p + 1] = -s * u + c * v;
    }
}

// Rotates the 2x2 diagonal block at (p, p) into LAPACK's standard form (the rotation ?lanv2
// computes, with its values stored for the block): upper triangular when the eigenvalues are
// real (the one on the side of the old top-left first), else equal diagonal elements and
// off-diagonal elements of opposite signs. `ulp` is the input type's precision.
void StandardizeBlock(double* t, double* z, int64_t n, int64_t p, double ulp) {
  double a = t[p * n + p], b = t[p * n + p + 1], c = t[(p + 1) * n + p], d = t[(p + 1) * n + p + 1];
  double cs = 1, sn = 0;
  auto sign = [](double x, double y) { return y >= 0 ? std::abs(x) : -std::abs(x); };
  if (c == 0) {
    return;
  } else if (b == 0) {  // swap rows and columns
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
    double scale = std::max(std::abs(pp), bcmax);
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
    } else {  // complex (or almost equal real) eigenvalues: equal diagonal elements
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
          if (sign(1, b) == sign(1, c)) {  // real after all: make it upper triangular
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
  RotateReal(t, z, n, p, cs, sn);
  t[p * n + p] = a;
  t[p * n + p + 1] = b;
  t[(p + 1) * n + p] = c;
  t[(p + 1) * n + p + 1] = d;
}

// Francis double-shift QR on the Hessenberg t, accumulating z; 2x2 blocks standardized. The
// iteration follows the classic double-shift scheme of LAPACK's ?lahqr (which ?hseqr uses below
// n = 75), so that eigenvalues usually settle in the same order: the Ahues-Tisseur deflation
// test at relative precision `ulp` (the input type's), the two shifts from the trailing 2x2
// block (a real pair replaced by its member nearer the corner, twice), exceptional shifts
// every 10 stalled steps (alternately from the top and the bottom of the active block), and
// the sweep started below two consecutive small subdiagonal elements when there are such.
// Returns 0 or the 1-based index of the last eigenvalue not found.
int64_t RealSchur(double* t, double* z, int64_t n, double ulp) {
  if (n == 0) return 0;
  const double smlnum = std::numeric_limits<double>::min() * (static_cast<double>(n) / ulp);
  const int64_t itmax = 30 * std::max<int64_t>(10, n);
  constexpr int64_t kExceptional = 10;
  auto H = [&](int64_t r, int64_t c) -> double& { return t[r * n + c]; };
  // Applies the reflector I - t1 (1, v2, v3)(1, v2, v3)^T (v3 unused when nr = 2) to rows
  // k..k+nr-1 of t from column `from`, and to the same columns of t (rows 0..last) and z.
  auto reflect = [&](int64_t k, int64_t nr, double t1, double v2, double v3, int64_t from,
                     int64_t last) {
    const double t2 = t1 * v2, t3 = t1 * v3;
    for (int64_t j = from; j < n; ++j) {
      double sum = H(k, j) + v2 * H(k + 1, j);
      if (nr == 3) sum += v3 * H(k + 2, j);
      H(k, j) -= sum * t1;
      H(k + 1, j) -= sum * t2;
      if (nr == 3) H(k + 2, j) -= sum * t3;
    }
    for (double* m : {t, z}) {
      const int64_t rows = m == t ? last + 1 : n;
      for (int64_t r = 0; r < rows; ++r) {
        double* row = m + r * n;
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
      for (; k > l; --k) {  // a negligible subdiagonal element
        if (std::abs(H(k, k - 1)) <= smlnum) break;
        double tst = std::abs(H(k - 1, k - 1)) + std::abs(H(k, k));
        if (tst == 0) {
          if (k >= 2) tst += std::abs(H(k - 1, k - 2));
          if (k + 1 < n) tst += std::abs(H(k + 1, k));
        }
        if (std::abs(H(k, k - 1)) <= ulp * tst) {
          const double ab = std::max(std::abs(H(k, k - 1)), std::abs(H(k - 1, k)));
          const double ba = std::min(std::abs(H(k, k - 1)), std::abs(H(k - 1, k)));
          const double aa = std::max(std::abs(H(k, k)), std::abs(H(k - 1, k - 1) - H(k, k)));
          const double bb = std::min(std::abs(H(k, k)), std::abs(H(k - 1, k - 1) - H(k, k)));
          const double s = aa + ab;
          if (ba * (ab / s) <= std::max(smlnum, ulp * (bb * (aa / s)))) break;
        }
      }
      l = k;
      if (l > 0) H(l, l - 1) = 0;
      if (l >= i - 1) {
        converged = true;
        break;
      }
      ++kdefl;
      double h11, h12, h21, h22;
      if (kdefl % (2 * kExceptional) == 0) {
        const double s = std::abs(H(i, i - 1)) + std::abs(H(i - 1, i - 2));
        h11 = 0.75 * s + H(i, i);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
      } else if (kdefl % kExceptional == 0) {
        const double s = std::abs(H(l + 1, l)) + std::abs(H(l + 2, l + 1));
        h11 = 0.75 * s + H(l, l);
        h12 = -0.4375 * s;
        h21 = s;
        h22 = h11;
      } else {
        h11 = H(i - 1, i - 1);
        h21 = H(i, i - 1);
        h12 = H(i - 1, i);
        h22 = H(i, i);
      }
      double rt1r = 0, rt1i = 0, rt2r = 0, rt2i = 0;
      const double scale = std::abs(h11) + std::abs(h12) + std::abs(h21) + std::abs(h22);
      if (scale != 0) {
        h11 /= scale;
        h21 /= scale;
        h12 /= scale;
        h22 /= scale;
        const double tr = (h11 + h22) / 2;
        const double det = (h11 - tr) * (h22 - tr) - h12 * h21;
        const double rtdisc = std::sqrt(std::abs(det));
        if (det >= 0) {  // a complex conjugate pair
          rt1r = tr * scale;
          rt2r = rt1r;
          rt1i = rtdisc * scale;
          rt2i = -rt1i;
        } else {  // real: the one nearer h22, twice
          rt1r = tr + rtdisc;
          rt2r = tr - rtdisc;
          if (std::abs(rt1r - h22) <= std::abs(rt2r - h22)) {
            rt1r *= scale;
            rt2r = rt1r;
          } else {
            rt2r *= scale;
            rt1r = rt2r;
          }
        }
      }
      // Two consecutive small subdiagonal elements: start the sweep at m.
      int64_t m = i - 2;
      double v[3];
      for (;; --m) {
        double h21s = H(m + 1, m);
        double s = std::abs(H(m, m) - rt2r) + std::abs(rt2i) + std::abs(h21s);
        h21s = H(m + 1, m) / s;
        v[0] = h21s * H(m, m + 1) + (H(m, m) - rt1r) * ((H(m, m) - rt2r) / s) - rt1i * (rt2i / s);
        v[1] = h21s * (H(m, m) + H(m + 1, m + 1) - rt1r - rt2r);
        v[2] = h21s * H(m + 2, m + 1);
        s = std::abs(v[0]) + std::abs(v[1]) + std::abs(v[2]);
        v[0] /= s;
        v[1] /= s;
        v[2] /= s;
        if (m == l) break;
        const double h00 = std::abs(H(m, m - 1)) * (std::abs(v[1]) + std::abs(v[2]));
        const double h01 = std::abs(v[0]) * (std::abs(H(m - 1, m - 1)) + std::abs(H(m, m)) +
                                             std::abs(H(m + 1, m + 1)));
        if (h00 <= ulp * h01) break;
      }
      for (int64_t k2 = m; k2 <= i - 1; ++k2) {
        const int64_t nr = std::min<int64_t>(3, i - k2 + 1);
        if (k2 > m) {
          v[0] = H(k2, k2 - 1);
          v[1] = H(k2 + 1, k2 - 1);
          if (nr == 3) v[2] = H(k2 + 2, k2 - 1);
        }
        // ?larfg on (v[0]; v[1..nr-1]).
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
          H(k2, k2 - 1) = v[0];
          H(k2 + 1, k2 - 1) = 0;
          if (k2 < i - 1) H(k2 + 2, k2 - 1) = 0;
        } else if (m > l) {
          H(k2, k2 - 1) *= 1 - t1;
        }
        if (t1 != 0) reflect(k2, nr, t1, v[1], nr == 3 ? v[2] : 0, k2, std::min(k2 + 3, i));
      }
    }
    if (!converged) return i + 1;
    if (l == i - 1) StandardizeBlock(t, z, n, i - 1, ulp);
    kdefl = 0;
    i = l - 1;
  }
  return 0;
}

int64_t GeevSchur(cd* h, cd* z, int64_t n, bool real_input, double ulp, std::vector<double>& t,
                  std::vector<double>& zr) {
  if (!real_input) return ComplexSchur(h, z, n, ulp);
  t.assign(n * n, 0);
  zr.assign(n * n, 0);
  for (int64_t i = 0; i < n * n; ++i) {
    t[i] = h[i].real();
    zr[i] = z[i].real();
  }
  const int64_t fail = RealSchur(t.data(), zr.data(), n, ulp);
  for (int64_t i = 0; i < n * n; ++i) {
    h[i] = t[i];
    z[i] = zr[i];
  }
  if (fail != 0) return fail;
  for (int64_t p = 0; p + 1 < n; ++p) {
    if (t[(p + 1) * n + p] == 0) continue;
    // A standardized block [[a, b], [c, a]], b c < 0: eigenvalues a +- i s. The unitary g with
    // first column the eigenvector (b, i s) / |.| of a + i s makes g^H B g upper triangular.
    const double a = t[p * n + p], b = t[p * n + p + 1], c = t[(p + 1) * n + p];
    const double s = std::sqrt(std::abs(b) * std::abs(c));
    const double r = std::hypot(b, s);
    const cd u1 = b / r, u2 = cd(0, s / r);
    const cd g[4] = {u1, -std::conj(u2), u2, std::conj(u1)};
    for (int64_t j = 0; j < n; ++j) {  // rows p, p+1: g^H h
      const cd x = h[p * n + j], y = h[(p + 1) * n + j];
      h[p * n + j] = std::conj(g[0]) * x + std::conj(g[2]) * y;
      h[(p + 1) * n + j] = std::conj(g[1]) * x + std::conj(g[3]) * y;
    }
    for (cd* m : {h, z})
      for (int64_t row = 0; row < n; ++row) {  // columns p, p+1: h g, z g
        const cd x = m[row * n + p], y = m[row * n + p + 1];
        m[row * n + p] = x * g[0] + y * g[2];
        m[row * n + p + 1] = x * g[1] + y * g[3];
      }
    h[(p + 1) * n + p] = 0;
    h[p * n + p] = cd(a, s);
    h[(p + 1) * n + p + 1] = cd(a, -s);
    ++p;
  }
  return 0;
}

// The real Schur form A = Z T Z^T: results (t, z, wr, wi, sdim, info); complex pairs as
// standardized 2x2 blocks, wr/wi with the positive imaginary part first (as LAPACK).
StatusOr<Literal> RealGees(const HloInstruction& instr, std::span<const Literal* const> ops,
                           bool vectors) {
  if (ops.size() != 1) return InvalidArgument("gees %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 6));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  if (bd.m != bd.n) return InvalidArgument("gees %", instr.name(), ": matrix must be square");
  if (BackendInt(instr, "sort", 'N') != 'N')
    return Unimplemented("gees %", instr.name(), ": sorted Schur forms (sort = 'S')");
  const int64_t n = bd.n;
  const double ulp = TypeUlp(ops[0]->shape().element_type());
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<cd> tout(a.size()), zout(a.size(), cd(0)), wr(bd.batch * n), wi(bd.batch * n);
  std::vector<int64_t> info(bd.batch, 0);
  std::vector<cd> hc(n * n), zc(n * n);
  std::vector<double> t(n * n), z(n * n);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t b = 0; b < bd.batch; ++b) {
    std::copy(a.begin() + b * n * n, a.begin() + (b + 1) * n * n, hc.begin());
    double norm = 0;
    for (const cd& e : hc) norm += std::norm(e);
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n * n; ++i) zc[i] = i / n == i % n ? 1.0 : 0.0;
    int64_t fail = std::isfinite(norm) ? 0 : n;
    if (fail == 0) {
      Hessenberg(hc.data(), zc.data(), n);  // real input: the arithmetic stays real
      for (int64_t i = 0; i < n * n; ++i) {
        t[i] = hc[i].real();
        z[i] = zc[i].real();
      }
      fail = RealSchur(t.data(), z.data(), n, ulp);
    }
    if (fail != 0) {
      info[b] = fail;
      std::fill(t.begin(), t.end(), nan);
      std::fill(z.begin(), z.end(), nan);
    }
    for (int64_t k = 0; k < n; ++k) {
      wr[b * n + k] = t[k * n + k];
      wi[b * n + k] = 0;
      if (fail == 0 && k + 1 < n && t[(k + 1) * n + k] != 0) {
        const double im = std::sqrt(std::abs(t[k * n + k + 1]) * std::abs(t[(k + 1) * n + k]));
        wr[b * n + k + 1] = t[(k + 1) * n + k + 1];
        wi[b * n + k] = im;
        wi[b * n + k + 1] = -im;
        ++k;
      }
    }
    std::copy(t.begin(), t.end(), tout.begin() + b * n * n);
    if (vectors) std::copy(z.begin(), z.end(), zout.begin() + b * n * n);
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), tout));
  parts.push_back(StoreTo(Element(instr.shape(), 1), zout));
  parts.push_back(StoreTo(Element(instr.shape(), 2), wr));
  parts.push_back(StoreTo(Element(instr.shape(), 3), wi));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 4), std::vector<int64_t>(bd.batch, 0)));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 5), info));
  return Literal::MakeTuple(std::move(parts));
}

// Complex Schur decomposition A = Z T Z^H (T upper triangular, its diagonal the eigenvalues in
// the order the QR iteration leaves them): results (t, z, w, sdim, info).
StatusOr<Literal> Gees(const HloInstruction& instr, std::span<const Literal* const> ops,
                       bool vectors) {
  if (ops.size() != 1) return InvalidArgument("gees %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 5));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  if (bd.m != bd.n) return InvalidArgument("gees %", instr.name(), ": matrix must be square");
  if (BackendInt(instr, "sort", 'N') != 'N')
    return Unimplemented("gees %", instr.name(), ": sorted Schur forms (sort = 'S')");
  const int64_t n = bd.n;
  const double ulp = TypeUlp(ops[0]->shape().element_type());
  std::vector<cd> t = LiteralToComplexes(*ops[0]);
  std::vector<cd> z(t.size(), cd(0)), w(bd.batch * n);
  std::vector<int64_t> info(bd.batch, 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t b = 0; b < bd.batch; ++b) {
    cd* h = t.data() + b * n * n;
    cd* zb = z.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i) zb[i * n + i] = 1;
    double norm = 0;
    for (int64_t i = 0; i < n * n; ++i) norm += std::norm(h[i]);
    norm = std::sqrt(norm);
    int64_t fail = std::isfinite(norm) ? 0 : n;
    if (fail == 0) {
      Hessenberg(h, zb, n);
      fail = ComplexSchur(h, zb, n, ulp);
    }
    if (fail != 0) {
      info[b] = fail;
      std::fill(h, h + n * n, cd(nan, nan));
      std::fill(zb, zb + n * n, cd(nan, nan));
    }
    for (int64_t k = 0; k < n; ++k) w[b * n + k] = h[k * n + k];
    if (!vectors) std::fill(zb, zb + n * n, cd(0));
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), t));
  parts.push_back(StoreTo(Element(instr.shape(), 1), z));
  parts.push_back(StoreTo(Element(instr.shape(), 2), w));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 3), std::vector<int64_t>(bd.batch, 0)));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 4), info));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace

std::optional<StatusOr<Literal>> EvalGeevCustomCall(const HloInstruction& instr,
                                                    std::span<const Literal* const> ops) {
  std::string_view t = instr.attrs().custom_call_target;
  if (t.size() == 16 && t.starts_with("lapack_") && t.ends_with("geev_ffi")) {
    const char p = t[7];
    if (p != 's' && p != 'd' && p != 'c' && p != 'z') return std::nullopt;
    return Geev(instr, ops, p == 's' || p == 'd', BackendInt(instr, "compute_left", 'N') == 'V',
                BackendInt(instr, "compute_right", 'N') == 'V');
  }
  if (t == "lapack_cgees_ffi" || t == "lapack_zgees_ffi")
    return Gees(instr, ops, BackendInt(instr, "mode", 'V') == 'V');
  if (t == "lapack_sgees_ffi" || t == "lapack_dgees_ffi")
    return RealGees(instr, ops, BackendInt(instr, "mode", 'V') == 'V');
  if (t.starts_with("cu"))
    t.remove_prefix(2);
  else if (t.starts_with("hip"))
    t.remove_prefix(3);
  else
    return std::nullopt;
  if (t != "hybrid_eig_real" && t != "hybrid_eig_comp") return std::nullopt;
  return Geev(instr, ops, t == "hybrid_eig_real", BackendInt(instr, "left", 0) != 0,
              BackendInt(instr, "right", 0) != 0);
}

}  // namespace kiln::eval_internal
