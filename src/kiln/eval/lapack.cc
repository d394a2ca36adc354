// The LAPACK custom calls of JAX's CPU lowering (api_version=API_VERSION_TYPED_FFI), for the
// factorizations whose results LAPACK defines uniquely:
//   lapack_{s,d,c,z}potrf_ffi  (a) -> (a', info): Cholesky of the `uplo` triangle (backend_config
//       uplo = 'L' (76) or 'U' (85)); that triangle of a' holds the factor, the other triangle is
//       a's, unchanged. info = 0, or the 1-based order of the first leading minor that is not
//       positive definite (then a' is unspecified; JAX masks it).
//   lapack_{s,d,c,z}getrf_ffi  (a) -> (lu, ipiv, info): LU with partial pivoting: the pivot of
//       column j is the first row i >= j of maximal |a_ij| (|re| + |im| for complex, as LAPACK's
//       i?amax); ipiv holds 1-based row interchanges; info = 0 or the 1-based index of the first
//       zero pivot.
//   lapack_{s,d,c,z}trsm_ffi   (a, b) -> x: op(a) x = b (side 'L') or x op(a) = b (side 'R'),
//       uplo 'L'/'U', trans_x 'N'/'T'/'C', diag 'N'/'U' from backend_config.
//   lapack_{s,d,c,z}geqrf_ffi  (a) -> (a', tau): Householder QR as LAPACK's ?geqr2 (R in the
//       upper triangle, the Householder vectors below it, tau with LAPACK's ?larfg conventions).
//   lapack_{s,d}orgqr_ffi / lapack_{c,z}ungqr_ffi  (a, tau) -> q: the first n columns of
//       H(0) H(1) ... H(k-1).
// Leading dimensions are batch dimensions. Values are computed in double precision and rounded
// once, so results agree with LAPACK's to rounding; a near-tie between pivot candidates may
// resolve differently than LAPACK's single-precision arithmetic. The other linear-algebra
// targets: symmetric eigen/SVD and ?gtsv in lapack_eig.cc, Householder reductions (?sytrd,
// ?gehrd, ?geqp3) in lapack_reduce.cc, general eigenproblems and Schur forms (?geev, ?gees) in
// lapack_geev.cc, the cuSOLVER/hipSOLVER/cuSPARSE names in gpu_solver.cc; they share routines
// through lapack_internal.h, and EvalLapackCustomCall below dispatches to all of them.
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/lapack_internal.h"
#include "kiln/eval/misc_internal.h"

namespace kiln {
namespace eval_internal {

int BackendInt(const HloInstruction& instr, std::string_view key, int fallback) {
  const std::string& t = instr.backend_config().text;
  size_t p = 0;
  while ((p = t.find(key, p)) != std::string::npos) {
    const bool start_ok =
        p == 0 || !(std::isalnum(static_cast<unsigned char>(t[p - 1])) || t[p - 1] == '_');
    size_t q = p + key.size();
    while (q < t.size() && t[q] == ' ') ++q;
    if (start_ok && q < t.size() && t[q] == '=') {
      ++q;
      while (q < t.size() && t[q] == ' ') ++q;
      if (t.compare(q, 4, "true") == 0) return 1;
      if (t.compare(q, 5, "false") == 0) return 0;
      return std::atoi(t.c_str() + q);
    }
    p += key.size();
  }
  return fallback;
}

StatusOr<Batched> MatrixDims(const HloInstruction& instr, const Literal& a, int64_t index) {
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, a, index));
  const Shape& s = a.shape();
  if (s.rank() < 2)
    return InvalidArgument("custom-call %", instr.name(), ": operand ", index,
                           " must be a (batched) matrix");
  Batched b;
  b.m = s.dimensions(s.rank() - 2);
  b.n = s.dimensions(s.rank() - 1);
  for (int64_t d = 0; d + 2 < s.rank(); ++d) b.batch *= s.dimensions(d);
  return b;
}

const Shape& Element(const Shape& s, int64_t i) { return s.IsTuple() ? s.tuple_shapes(i) : s; }

Status CheckTuple(const HloInstruction& instr, int64_t n) {
  if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != n)
    return InvalidArgument("custom-call %", instr.name(), " (", instr.attrs().custom_call_target,
                           ") must return a tuple of ", n);
  return OkStatus();
}

Literal StoreTo(const Shape& shape, const std::vector<cd>& v) {
  Literal l(shape);
  eval_internal::StoreComplexes(v, l);
  return l;
}

Literal StoreIntsTo(const Shape& shape, const std::vector<int64_t>& v) {
  Literal l(shape);
  eval_internal::StoreInt64s(v, l);
  return l;
}

}  // namespace eval_internal

namespace {

using eval_internal::BackendInt;
using eval_internal::Batched;
using eval_internal::cd;
using eval_internal::CheckTuple;
using eval_internal::Element;
using eval_internal::MatrixDims;

int BackendChar(const HloInstruction& instr, std::string_view key, int fallback) {
  return BackendInt(instr, key, fallback);
}

Literal MakeTupleOf(std::vector<Literal> parts) { return Literal::MakeTuple(std::move(parts)); }

Literal Store(const Shape& shape, const std::vector<cd>& v) {
  return eval_internal::StoreTo(shape, v);
}

Literal StoreInts(const Shape& shape, const std::vector<int64_t>& v) {
  return eval_internal::StoreIntsTo(shape, v);
}

StatusOr<Literal> Potrf(const HloInstruction& instr, std::span<const Literal* const> ops,
                        bool lower) {
  if (ops.size() != 1) return InvalidArgument("potrf %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 2));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  if (d.m != d.n) return InvalidArgument("potrf %", instr.name(), ": matrix must be square");
  const int64_t n = d.n;
  std::vector<cd> a = eval_internal::LiteralToComplexes(*ops[0]);
  std::vector<int64_t> info(d.batch, 0);
  // Element (i, j) of the lower-triangle problem: a_ij for lower, conj(a_ji) for upper.
  for (int64_t b = 0; b < d.batch; ++b) {
    cd* m = a.data() + b * n * n;
    auto at = [&](int64_t i, int64_t j) -> cd& { return lower ? m[i * n + j] : m[j * n + i]; };
    auto get = [&](int64_t i, int64_t j) { return lower ? at(i, j) : std::conj(at(i, j)); };
    auto set = [&](int64_t i, int64_t j, cd v) { at(i, j) = lower ? v : std::conj(v); };
    for (int64_t j = 0; j < n; ++j) {
      double djj = get(j, j).real();
      for (int64_t k = 0; k < j; ++k) djj -= std::norm(get(j, k));
      if (!(djj > 0)) {
        info[b] = j + 1;
        break;
      }
      const double ljj = std::sqrt(djj);
      set(j, j, ljj);
      for (int64_t i = j + 1; i < n; ++i) {
        cd v = get(i, j);
        for (int64_t k = 0; k < j; ++k) v -= get(i, k) * std::conj(get(j, k));
        set(i, j, v / ljj);
      }
    }
  }
  std::vector<Literal> parts;
  parts.push_back(Store(Element(instr.shape(), 0), a));
  parts.push_back(StoreInts(Element(instr.shape(), 1), info));
  return MakeTupleOf(std::move(parts));
}

double Cabs1(cd v) { return std::abs(v.real()) + std::abs(v.imag()); }

StatusOr<Literal> Getrf(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 1) return InvalidArgument("getrf %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 3));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  const int64_t m = d.m, n = d.n, k = std::min(m, n);
  const bool complex = IsComplexType(ops[0]->shape().element_type());
  std::vector<cd> a = eval_internal::LiteralToComplexes(*ops[0]);
  std::vector<int64_t> ipiv(d.batch * k), info(d.batch, 0);
  for (int64_t b = 0; b < d.batch; ++b) {
    cd* x = a.data() + b * m * n;
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      double best = -1;
      for (int64_t i = j; i < m; ++i) {
        const double v = complex ? Cabs1(x[i * n + j]) : std::abs(x[i * n + j].real());
        if (v > best) {
          best = v;
          p = i;
        }
      }
      ipiv[b * k + j] = p + 1;
      if (x[p * n + j] == cd(0)) {
        if (info[b] == 0) info[b] = j + 1;
        continue;  // LAPACK leaves the column as it is and goes on
      }
      if (p != j)
        for (int64_t c = 0; c < n; ++c) std::swap(x[j * n + c], x[p * n + c]);
      const cd piv = x[j * n + j];
      for (int64_t i = j + 1; i < m; ++i) {
        x[i * n + j] /= piv;
        const cd l = x[i * n + j];
        for (int64_t c = j + 1; c < n; ++c) x[i * n + c] -= l * x[j * n + c];
      }
    }
  }
  std::vector<Literal> parts;
  parts.push_back(Store(Element(instr.shape(), 0), a));
  parts.push_back(StoreInts(Element(instr.shape(), 1), ipiv));
  parts.push_back(StoreInts(Element(instr.shape(), 2), info));
  return MakeTupleOf(std::move(parts));
}

StatusOr<Literal> Trsm(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 2) return InvalidArgument("trsm %", instr.name(), " takes (a, b)");
  TriangularSolveOptions opt;
  opt.left_side = BackendChar(instr, "side", 'L') == 'L';
  opt.lower = BackendChar(instr, "uplo", 'L') == 'L';
  opt.unit_diagonal = BackendChar(instr, "diag", 'N') == 'U';
  const int trans = BackendChar(instr, "trans_x", 'N');
  opt.transpose_a = trans == 'T'   ? TriangularTranspose::kTranspose
                    : trans == 'C' ? TriangularTranspose::kAdjoint
                                   : TriangularTranspose::kNoTranspose;
  return eval_internal::TriangularSolve(instr, *ops[0], *ops[1], opt, Element(instr.shape(), 0));
}

// ?larfg: the Householder reflector H = I - tau v v^H with v = [1, x'] that maps (alpha, x) to
// (beta, 0). Returns tau; alpha becomes beta and x becomes x'.
cd Larfg(cd& alpha, cd* x, int64_t len, int64_t stride, bool complex) {
  double xnorm = 0;
  for (int64_t i = 0; i < len; ++i) xnorm = std::hypot(xnorm, std::abs(x[i * stride]));
  if (xnorm == 0 && (!complex || alpha.imag() == 0)) return 0;
  const double ar = alpha.real(), ai = complex ? alpha.imag() : 0.0;
  const double norm =
      complex ? std::sqrt(ar * ar + ai * ai + xnorm * xnorm) : std::hypot(ar, xnorm);
  const double beta = ar >= 0 ? -norm : norm;
  const cd tau = complex ? cd((beta - ar) / beta, -ai / beta) : cd((beta - ar) / beta, 0);
  const cd scale = 1.0 / (alpha - beta);
  for (int64_t i = 0; i < len; ++i) x[i * stride] *= scale;
  alpha = beta;
  return tau;
}

StatusOr<Literal> Geqrf(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 1) return InvalidArgument("geqrf %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 2));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  const int64_t m = d.m, n = d.n, k = std::min(m, n);
  const bool complex = IsComplexType(ops[0]->shape().element_type());
  std::vector<cd> a = eval_internal::LiteralToComplexes(*ops[0]);
  std::vector<cd> tau(d.batch * k);
  std::vector<cd> w(n);
  for (int64_t b = 0; b < d.batch; ++b) {
    cd* x = a.data() + b * m * n;
    for (int64_t i = 0; i < k; ++i) {
      cd alpha = x[i * n + i];
      const cd t = Larfg(alpha, x + (i + 1) * n + i, m - i - 1, n, complex);
      tau[b * k + i] = t;
      x[i * n + i] = 1;
      // Apply H^H = I - conj(t) v v^H to the columns right of i: A -= conj(t) v (v^H A).
      for (int64_t c = i + 1; c < n; ++c) {
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
  parts.push_back(Store(Element(instr.shape(), 0), a));
  parts.push_back(Store(Element(instr.shape(), 1), tau));
  return MakeTupleOf(std::move(parts));
}

StatusOr<Literal> Orgqr(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 2) return InvalidArgument("orgqr %", instr.name(), " takes (a, tau)");
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  const int64_t m = d.m, n = d.n;
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, *ops[1], 1));
  const Shape& ts = ops[1]->shape();
  const int64_t k = ts.rank() >= 1 ? ts.dimensions(ts.rank() - 1) : 0;
  if (k > n || n > m)
    return InvalidArgument("orgqr %", instr.name(), ": needs m >= n >= k, got ", m, ", ", n, ", ",
                           k);
  std::vector<cd> a = eval_internal::LiteralToComplexes(*ops[0]);
  std::vector<cd> tau = eval_internal::LiteralToComplexes(*ops[1]);
  std::vector<cd> q(a.size()), v(m), w(n);
  for (int64_t b = 0; b < d.batch; ++b) {
    const cd* x = a.data() + b * m * n;
    cd* y = q.data() + b * m * n;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) y[r * n + c] = r == c ? 1.0 : 0.0;
    for (int64_t i = k; i-- > 0;) {
      const cd t = tau[b * k + i];
      v[i] = 1;
      for (int64_t r = i + 1; r < m; ++r) v[r] = x[r * n + i];
      // Q[i:, :] = (I - t v v^H) Q[i:, :]
      for (int64_t c = 0; c < n; ++c) {
        cd s = 0;
        for (int64_t r = i; r < m; ++r) s += std::conj(v[r]) * y[r * n + c];
        w[c] = s;
      }
      for (int64_t c = 0; c < n; ++c)
        for (int64_t r = i; r < m; ++r) y[r * n + c] -= t * v[r] * w[c];
    }
  }
  return Store(Element(instr.shape(), 0), q);
}

bool Target(std::string_view t, std::string_view op) {
  // lapack_<s|d|c|z><op>_ffi
  if (t.size() != op.size() + 12 || t.substr(0, 7) != "lapack_" || t.substr(t.size() - 4) != "_ffi")
    return false;
  const char p = t[7];
  return (p == 's' || p == 'd' || p == 'c' || p == 'z') && t.substr(8, op.size()) == op;
}

}  // namespace

namespace eval_internal {

StatusOr<Literal> PotrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower) {
  return Potrf(instr, ops, lower);
}
StatusOr<Literal> GetrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops) {
  return Getrf(instr, ops);
}
StatusOr<Literal> GeqrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops) {
  return Geqrf(instr, ops);
}
StatusOr<Literal> OrgqrKernel(const HloInstruction& instr, std::span<const Literal* const> ops) {
  return Orgqr(instr, ops);
}
cd HouseholderLarfg(cd& alpha, cd* x, int64_t len, int64_t stride, bool complex) {
  return Larfg(alpha, x, len, stride, complex);
}

std::optional<StatusOr<Literal>> EvalLapackCustomCall(const HloInstruction& instr,
                                                      std::span<const Literal* const> ops) {
  const std::string& t = instr.attrs().custom_call_target;
  if (Target(t, "potrf")) return Potrf(instr, ops, BackendChar(instr, "uplo", 'L') == 'L');
  if (Target(t, "getrf")) return Getrf(instr, ops);
  if (Target(t, "trsm")) return Trsm(instr, ops);
  if (Target(t, "geqrf")) return Geqrf(instr, ops);
  if (Target(t, "orgqr") || Target(t, "ungqr")) return Orgqr(instr, ops);
  if (auto r = EvalLapackEigCustomCall(instr, ops)) return r;
  if (auto r = EvalGeevCustomCall(instr, ops)) return r;
  return EvalGpuSolverCustomCall(instr, ops);
}

}  // namespace eval_internal

}  // namespace kiln
