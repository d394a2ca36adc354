// Householder reductions to condensed form, as LAPACK's unblocked ?sytd2/?hetd2 and ?gehd2
// define them (the blocked ?sytrd/?gehrd compute the same reflectors):
//   lapack_{s,d}sytrd_ffi / lapack_{c,z}hetrd_ffi (backend_config uplo 'L'/'U'),
//   {cu,hip}solver_sytrd_ffi (lower = true|false)    (a) -> (a', d, e, tau, info):
//       Q^H A Q = T tridiagonal (d its real diagonal, e its real off-diagonal), Q a product of
//       n-1 reflectors H(i) = I - tau_i v_i v_i^H (LAPACK's ?larfg convention). For 'L' the
//       diagonal and first subdiagonal of a' hold d and e, the elements below hold v_i(i+2:)
//       (v_i(i+1) = 1, v_i(:i) = 0), and the strictly upper triangle is a's; 'U' mirrors it
//       (Q = H(n-2) ... H(0), v_i(i) = 1 at the end, v_i(:i-1) stored above the superdiagonal).
//   lapack_{s,d,c,z}gehrd_ffi (backend_config low = ilo, high = ihi, 1-based)  (a) ->
//       (a', tau, info): Q^H A Q = H upper Hessenberg; a' holds H on and above the first
//       subdiagonal and v_i(i+2:ihi) below it; tau_i = 0 outside [ilo, ihi).
//   lapack_{s,d,c,z}geqp3_ffi, {cu,hip}hybrid_geqp3  (a, jpvt) -> (a', jpvt', tau): QR with
//       column pivoting, A P = Q R, stored as ?geqrf stores it. Columns with jpvt != 0 on input
//       lead (in order, unpivoted); then each step takes the free column of largest remaining
//       2-norm (the first on ties; norms recomputed, not downdated as LAPACK does, so a near-tie
//       may resolve differently). jpvt' is 1-based: column j of A P is column jpvt'[j] of A.
// info = 0 where there is one. Arithmetic in complex double; results match LAPACK's to the stored
// type's rounding unless a reflector's alpha is near zero (then its sign choice may flip).
#include <algorithm>
#include <string>

#include "kiln/eval/array_util.h"
#include "kiln/eval/lapack_internal.h"

namespace kiln::eval_internal {
namespace {

// sub -= v w^H + w v^H for the Hermitian len x len block of the n x n row-major h at
// (off, off), after w = x - 1/2 tau (x^H v) v with x = tau sub v (LAPACK's ?hemv + ?her2 step).
void HermitianReflect(cd* h, int64_t n, int64_t off, int64_t len, const std::vector<cd>& v,
                      cd tau) {
  std::vector<cd> x(len), w(len);
  for (int64_t r = 0; r < len; ++r) {
    cd s = 0;
    for (int64_t c = 0; c < len; ++c) s += h[(off + r) * n + off + c] * v[c];
    x[r] = tau * s;
  }
  cd dot = 0;
  for (int64_t k = 0; k < len; ++k) dot += std::conj(x[k]) * v[k];
  const cd alpha = -0.5 * tau * dot;
  for (int64_t k = 0; k < len; ++k) w[k] = x[k] + alpha * v[k];
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t c = 0; c < len; ++c)
      h[(off + r) * n + off + c] -= v[r] * std::conj(w[c]) + w[r] * std::conj(v[c]);
    h[(off + r) * n + off + r] = h[(off + r) * n + off + r].real();
  }
}

}  // namespace

StatusOr<Literal> SytrdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower) {
  if (ops.size() != 1) return InvalidArgument("sytrd %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 5));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  if (bd.m != bd.n) return InvalidArgument("sytrd %", instr.name(), ": matrix must be square");
  const int64_t n = bd.n, nm1 = std::max<int64_t>(n - 1, 0);
  const bool complex = IsComplexType(ops[0]->shape().element_type());
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<cd> out = a, d(bd.batch * n), e(bd.batch * nm1), tau(bd.batch * nm1);
  std::vector<cd> h(n * n), v;
  for (int64_t b = 0; b < bd.batch; ++b) {
    const cd* x = a.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const bool stored = lower ? i >= j : i <= j;
        h[i * n + j] = stored ? x[i * n + j] : std::conj(x[j * n + i]);
        if (i == j) h[i * n + i] = h[i * n + i].real();
      }
    cd* db = d.data() + b * n;
    cd* eb = e.data() + b * nm1;
    cd* tb = tau.data() + b * nm1;
    cd* ob = out.data() + b * n * n;
    if (lower) {
      for (int64_t i = 0; i + 1 < n; ++i) {
        cd alpha = h[(i + 1) * n + i];
        const int64_t len = n - i - 2;
        const cd t =
            HouseholderLarfg(alpha, len > 0 ? &h[(i + 2) * n + i] : nullptr, len, n, complex);
        eb[i] = alpha.real();
        if (t != cd(0)) {
          v.assign(n - i - 1, cd(0));
          v[0] = 1;
          for (int64_t k = 1; k < n - i - 1; ++k) v[k] = h[(i + 1 + k) * n + i];
          HermitianReflect(h.data(), n, i + 1, n - i - 1, v, t);
        }
        db[i] = h[i * n + i].real();
        tb[i] = t;
      }
      if (n > 0) db[n - 1] = h[(n - 1) * n + n - 1].real();
      for (int64_t j = 0; j < n; ++j) {
        ob[j * n + j] = db[j];
        if (j + 1 < n) ob[(j + 1) * n + j] = eb[j];
        for (int64_t r = j + 2; r < n; ++r) ob[r * n + j] = h[r * n + j];
      }
    } else {
      for (int64_t i = n - 2; i >= 0; --i) {
        cd alpha = h[i * n + i + 1];
        const cd t = HouseholderLarfg(alpha, i > 0 ? &h[i + 1] : nullptr, i, n, complex);
        eb[i] = alpha.real();
        if (t != cd(0)) {
          v.assign(i + 1, cd(0));
          for (int64_t k = 0; k < i; ++k) v[k] = h[k * n + i + 1];
          v[i] = 1;
          HermitianReflect(h.data(), n, 0, i + 1, v, t);
        }
        db[i + 1] = h[(i + 1) * n + i + 1].real();
        tb[i] = t;
      }
      if (n > 0) db[0] = h[0].real();
      for (int64_t j = 0; j < n; ++j) {
        ob[j * n + j] = db[j];
        if (j + 1 < n) ob[j * n + j + 1] = eb[j];
        for (int64_t k = 0; k + 1 < j; ++k) ob[k * n + j] = h[k * n + j];
      }
    }
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), out));
  parts.push_back(StoreTo(Element(instr.shape(), 1), d));
  parts.push_back(StoreTo(Element(instr.shape(), 2), e));
  parts.push_back(StoreTo(Element(instr.shape(), 3), tau));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 4), std::vector<int64_t>(bd.batch, 0)));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> GehrdKernel(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 1) return InvalidArgument("gehrd %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 3));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  if (bd.m != bd.n) return InvalidArgument("gehrd %", instr.name(), ": matrix must be square");
  const int64_t n = bd.n, nm1 = std::max<int64_t>(n - 1, 0);
  const int64_t ilo = BackendInt(instr, "low", 1) - 1, ihi = BackendInt(instr, "high", n) - 1;
  if (n > 0 && (ilo < 0 || ihi < ilo || ihi >= n))
    return InvalidArgument("gehrd %", instr.name(), ": needs 1 <= low <= high <= ", n);
  const bool complex = IsComplexType(ops[0]->shape().element_type());
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<cd> tau(bd.batch * nm1, cd(0)), v(n), w(n);
  for (int64_t b = 0; b < bd.batch; ++b) {
    cd* x = a.data() + b * n * n;
    for (int64_t i = ilo; i < ihi; ++i) {
      cd alpha = x[(i + 1) * n + i];
      const int64_t len = ihi - i - 1;
      const cd t =
          HouseholderLarfg(alpha, len > 0 ? &x[(i + 2) * n + i] : nullptr, len, n, complex);
      // v lives in rows i+1..ihi of column i (v(i+1) = 1).
      std::fill(v.begin(), v.end(), cd(0));
      v[i + 1] = 1;
      for (int64_t r = i + 2; r <= ihi; ++r) v[r] = x[r * n + i];
      // Right: A(0:ihi, i+1:ihi) -= t (A v) v^H.
      for (int64_t r = 0; r <= ihi; ++r) {
        cd s = 0;
        for (int64_t c = i + 1; c <= ihi; ++c) s += x[r * n + c] * v[c];
        for (int64_t c = i + 1; c <= ihi; ++c) x[r * n + c] -= t * s * std::conj(v[c]);
      }
      // Left with H^H: A(i+1:ihi, i+1:n) -= conj(t) v (v^H A).
      for (int64_t c = i + 1; c < n; ++c) {
        cd s = 0;
        for (int64_t r = i + 1; r <= ihi; ++r) s += std::conj(v[r]) * x[r * n + c];
        w[c] = s;
      }
      for (int64_t r = i + 1; r <= ihi; ++r)
        for (int64_t c = i + 1; c < n; ++c) x[r * n + c] -= std::conj(t) * v[r] * w[c];
      x[(i + 1) * n + i] = alpha;
      tau[b * nm1 + i] = t;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), a));
  parts.push_back(StoreTo(Element(instr.shape(), 1), tau));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 2), std::vector<int64_t>(bd.batch, 0)));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> Geqp3Kernel(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 2) return InvalidArgument("geqp3 %", instr.name(), " takes (a, jpvt)");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 3));
  KILN_ASSIGN_OR_RETURN(Batched bd, MatrixDims(instr, *ops[0]));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[1], 1));
  const int64_t m = bd.m, n = bd.n, k = std::min(m, n);
  if (ops[1]->element_count() != bd.batch * n)
    return InvalidArgument("geqp3 %", instr.name(), ": jpvt must hold ", n, " entries per matrix");
  const bool complex = IsComplexType(ops[0]->shape().element_type());
  std::vector<cd> a = LiteralToComplexes(*ops[0]);
  std::vector<int64_t> jpvt = LiteralToInt64s(*ops[1]);
  std::vector<cd> tau(bd.batch * k), w(n);
  std::vector<double> norms(n);
  for (int64_t b = 0; b < bd.batch; ++b) {
    cd* x = a.data() + b * m * n;
    int64_t* p = jpvt.data() + b * n;
    auto swap_columns = [&](int64_t i, int64_t j) {
      for (int64_t r = 0; r < m; ++r) std::swap(x[r * n + i], x[r * n + j]);
    };
    // Columns with a nonzero jpvt entry go first, in order (LAPACK's "leading" columns).
    int64_t fixed = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (p[j] != 0) {
        if (j != fixed) {
          swap_columns(j, fixed);
          p[j] = p[fixed];
          p[fixed] = j + 1;
        } else {
          p[j] = j + 1;
        }
        ++fixed;
      } else {
        p[j] = j + 1;
      }
    }
    for (int64_t i = 0; i < k; ++i) {
      if (i >= fixed) {  // pivot: the free column of largest remaining norm (the first such)
        int64_t best = i;
        for (int64_t j = i; j < n; ++j) {
          double t = 0;
          for (int64_t r = i; r < m; ++r) t += std::norm(x[r * n + j]);
          norms[j] = std::sqrt(t);
          if (norms[j] > norms[best]) best = j;
        }
        if (best != i) {
          swap_columns(i, best);
          std::swap(p[i], p[best]);
        }
      }
      cd alpha = x[i * n + i];
      const int64_t len = m - i - 1;
      const cd t =
          HouseholderLarfg(alpha, len > 0 ? &x[(i + 1) * n + i] : nullptr, len, n, complex);
      tau[b * k + i] = t;
      x[i * n + i] = 1;
      for (int64_t c = i + 1; c < n; ++c) {  // A := H^H A on the trailing columns
        cd s = 0;
        for (int64_t r = i; r < m; ++r) s += std::conj(x[r * n + i]) * x[r * n + c];
        w[c] = s;
      }
      for (int64_t c = i + 1; c < n; ++c)
        for (int64_t r = i; r < m; ++r) x[r * n + c] -= std::conj(t) * x[r * n + i] * w[c];
      x[i * n + i] = alpha;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), a));
  parts.push_back(StoreIntsTo(Element(instr.shape(), 1), jpvt));
  parts.push_back(StoreTo(Element(instr.shape(), 2), tau));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace kiln::eval_internal
