// Dense linear algebra: cholesky and triangular-solve, batched over leading dimensions.
// Computed in double / std::complex<double>, rounded once to the result type.
//
// cholesky(a), lower=true: the L with a = L L^H, read from the lower triangle of a only; the
//   strict upper triangle of the result is zero. lower=false: the U with a = U^H U, read from the
//   upper triangle (XLA computes it as the transpose of the lower factor of a's transpose).
//   Not positive definite: like XLA's expander, a matrix whose factorization meets a negative
//   (or NaN) pivot comes back entirely NaN. A zero pivot gives inf/NaN entries but is not
//   flagged (XLA's behavior too).
// triangular-solve(a, b): solves op(a) x = b (left_side) or x op(a) = b (right side) for x,
//   where a's `lower` triangle (and diagonal unless unit_diagonal) is used and the other
//   triangle ignored; op is identity, transpose or adjoint (conjugate transpose). A zero
//   diagonal gives inf/NaN, as forward substitution does.
#include <cmath>
#include <complex>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"

namespace kiln {
namespace {

using cd = std::complex<double>;

StatusOr<Literal> EvalCholesky(const HloInstruction& instr, std::span<const Literal* const> ops,
                               Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("cholesky %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, *ops[0], 0));
  const Shape& s = ops[0]->shape();
  const int64_t rank = s.rank();
  if (rank < 2 || s.dimensions(rank - 1) != s.dimensions(rank - 2))
    return InvalidArgument("cholesky %", instr.name(),
                           ": operand must be batched square matrices, got ", s.ToString(false));
  const int64_t n = s.dimensions(rank - 1);
  const bool lower = instr.attrs().cholesky_lower;
  std::vector<cd> a = eval_internal::LiteralToComplexes(*ops[0]);
  std::vector<cd> out(a.size(), 0.0);
  const int64_t batch = n == 0 ? 0 : static_cast<int64_t>(a.size()) / (n * n);
  std::vector<cd> m(n * n), l(n * n);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const cd* src = a.data() + (bi * n * n);
    // Work on the lower-triangle problem: for upper, use the transpose (not conjugated), as
    // XLA does; its lower triangle is a's upper triangle.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) m[i * n + j] = lower ? src[i * n + j] : src[j * n + i];
    std::fill(l.begin(), l.end(), cd(0));
    bool failed = false;
    for (int64_t j = 0; j < n && !failed; ++j) {
      // Diagonal: sqrt(m_jj - sum_k |l_jk|^2), real part only for complex.
      cd d = m[j * n + j];
      for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * std::conj(l[j * n + k]);
      const double piv = std::sqrt(d.real());
      if (std::isnan(piv)) {
        failed = true;
        break;
      }
      l[j * n + j] = piv;
      for (int64_t i = j + 1; i < n; ++i) {
        cd v = m[i * n + j];
        for (int64_t k = 0; k < j; ++k) v -= l[i * n + k] * std::conj(l[j * n + k]);
        l[i * n + j] = v / piv;
      }
    }
    cd* dst = &out[bi * n * n];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        cd v = failed ? cd(NAN, 0.0) : l[i * n + j];
        dst[lower ? i * n + j : j * n + i] = v;
      }
  }
  Literal result(instr.shape());
  if (result.shape().dimensions() != s.dimensions())
    return InvalidArgument("cholesky %", instr.name(), ": result shape differs from the operand");
  eval_internal::StoreComplexes(out, result);
  return result;
}

StatusOr<Literal> SolveTriangular(const HloInstruction& instr, const Literal& a_lit,
                                  const Literal& b_lit, const TriangularSolveOptions& opt,
                                  const Shape& result_shape) {
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, a_lit, 0));
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, b_lit, 1));
  const Shape& as = a_lit.shape();
  const Shape& bs = b_lit.shape();
  const int64_t rank = as.rank();
  if (rank < 2 || bs.rank() != rank || as.dimensions(rank - 1) != as.dimensions(rank - 2))
    return InvalidArgument("triangular-solve %", instr.name(), ": bad operand shapes ",
                           as.ToString(false), ", ", bs.ToString(false));
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (as.dimensions(d) != bs.dimensions(d))
      return InvalidArgument("triangular-solve %", instr.name(), ": batch dimensions differ");
  const int64_t m = bs.dimensions(rank - 2), n = bs.dimensions(rank - 1);
  const int64_t k = as.dimensions(rank - 1);
  if ((opt.left_side && k != m) || (!opt.left_side && k != n))
    return InvalidArgument("triangular-solve %", instr.name(), ": a is ", k, "x", k, " but b is ",
                           m, "x", n);
  std::vector<cd> a = eval_internal::LiteralToComplexes(a_lit);
  std::vector<cd> b = eval_internal::LiteralToComplexes(b_lit);
  const int64_t batch = (m == 0 || n == 0) ? 0 : static_cast<int64_t>(b.size()) / (m * n);
  std::vector<cd> t(k * k);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const cd* A = a.data() + (bi * k * k);
    cd* B = b.data() + (bi * m * n);
    // T = op(triangle of A); after transposition a lower triangle becomes upper.
    bool t_lower = opt.lower;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const bool in_tri = opt.lower ? j <= i : j >= i;
        cd v = in_tri ? A[i * k + j] : cd(0);
        if (i == j && opt.unit_diagonal) v = 1.0;
        switch (opt.transpose_a) {
          case TriangularTranspose::kNoTranspose:
            t[i * k + j] = v;
            break;
          case TriangularTranspose::kTranspose:
            t[j * k + i] = v;
            break;
          case TriangularTranspose::kAdjoint:
            t[j * k + i] = std::conj(v);
            break;
        }
      }
    if (opt.transpose_a != TriangularTranspose::kNoTranspose) t_lower = !t_lower;
    if (opt.left_side) {
      // T X = B, column by column.
      for (int64_t c = 0; c < n; ++c) {
        if (t_lower) {
          for (int64_t i = 0; i < k; ++i) {
            cd v = B[i * n + c];
            for (int64_t j = 0; j < i; ++j) v -= t[i * k + j] * B[j * n + c];
            B[i * n + c] = v / t[i * k + i];
          }
        } else {
          for (int64_t i = k; i-- > 0;) {
            cd v = B[i * n + c];
            for (int64_t j = i + 1; j < k; ++j) v -= t[i * k + j] * B[j * n + c];
            B[i * n + c] = v / t[i * k + i];
          }
        }
      }
    } else {
      // X T = B, row by row: x_j = (b_j - sum_{i != j} x_i t_ij) / t_jj.
      for (int64_t r = 0; r < m; ++r) {
        cd* x = &B[r * n];
        if (t_lower) {
          // Column j of T has entries below the diagonal (i > j): solve from the last column.
          for (int64_t j = k; j-- > 0;) {
            cd v = x[j];
            for (int64_t i = j + 1; i < k; ++i) v -= x[i] * t[i * k + j];
            x[j] = v / t[j * k + j];
          }
        } else {
          for (int64_t j = 0; j < k; ++j) {
            cd v = x[j];
            for (int64_t i = 0; i < j; ++i) v -= x[i] * t[i * k + j];
            x[j] = v / t[j * k + j];
          }
        }
      }
    }
  }
  Literal result(result_shape);
  if (result.shape().dimensions() != bs.dimensions())
    return InvalidArgument("triangular-solve %", instr.name(), ": result shape differs from b");
  eval_internal::StoreComplexes(b, result);
  return result;
}

StatusOr<Literal> EvalTriangularSolve(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 2)
    return InvalidArgument("triangular-solve %", instr.name(), " takes 2 operands");
  return SolveTriangular(instr, *ops[0], *ops[1], instr.attrs().triangular_solve_options,
                         instr.shape());
}

}  // namespace

namespace eval_internal {
StatusOr<Literal> TriangularSolve(const HloInstruction& instr, const Literal& a, const Literal& b,
                                  const TriangularSolveOptions& options,
                                  const Shape& result_shape) {
  return SolveTriangular(instr, a, b, options, result_shape);
}

void RegisterLinalgKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kCholesky, EvalCholesky);
  r.Register(HloOpcode::kTriangularSolve, EvalTriangularSolve);
}
}  // namespace eval_internal

}  // namespace kiln
