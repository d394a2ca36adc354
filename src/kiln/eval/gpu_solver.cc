// The linear-algebra custom calls of JAX's GPU lowerings, mapped onto the evaluator's routines
// (lapack.cc, lapack_eig.cc). A module dumped on a CUDA or ROCm machine names these targets; the
// evaluator runs them on the host, so every backend that falls back to it runs such modules.
// ROCm spells each target with hipsolver_/hipsparse_/hip_ where CUDA has cusolver_/cusparse_/cu_;
// the contracts are the same. Results match the LAPACK targets' (see those files), except:
//   {cu,hip}solver_getrf_ffi   (a) -> (lu, ipiv, info): as lapack_?getrf_ffi (1-based ipiv).
//   {cu,hip}solver_potrf_ffi   (a) -> (a', info), backend_config lower = true|false.
//   {cu,hip}solver_geqrf_ffi   (a) -> (a', tau); {cu,hip}solver_orgqr_ffi (a, tau) -> q.
//   {cu,hip}solver_syevd_ffi   (a) -> (v, w, info), lower = true|false (algorithm ignored: one
//       method serves all).
//   {cu,hip}solver_gesvdj_ffi  (a) -> (a, s, u, v, info): V itself, not V^H (JAX transposes);
//       u is m x m or m x k, v n x n or n x k (econ); compute_uv = false gives zeros for u, v.
//   {cu,hip}solver_gesvd_ffi   (a) -> (a, s, u, vt, info), or (a, s, vt, u, info) when
//       transposed = true (JAX's m < n case: the call sees A^T, so its U is our V^H).
//   {cu,hip}solver_sytrd_ffi   (a) -> (a', d, e, tau, info), lower = true|false: as LAPACK's
//       ?sytrd/?hetrd (lapack_reduce.cc).
//   {cu,hip}sparse_gtsv2_ffi   (dl, d, du, b) -> x: the solution only (no info; a zero pivot
//       leaves x as ?gtsv leaves b).
//   {cu,hip}solver_syrk_ffi    (a, c, alpha, beta) -> c': symmetric_product; see Syrk below for
//       which triangle is computed.
//   {cu,hip}_cholesky_update_ffi  (r, w) -> (r', w'): rank-one update of an upper Cholesky
//       factor (see CholeskyUpdate below).
//   {cu,hip}hybrid_geqp3      (a, jpvt) -> (a', jpvt', tau): as lapack_?geqp3_ffi.
//   {cu,hip}_lu_pivots_to_permutation  (pivots s32[..., k]) -> perm s32[..., m]: 0-based
//       row interchanges applied in order to the identity permutation of m (the result's last
//       dimension); a pivot outside [0, m) is skipped.
// The cuSOLVER scratch results JAX ignores are deterministic (the input, or zeros).
// {cu,hip}hybrid_eig_real/comp (eig) are lapack_geev.cc's.
#include <string>
#include <string_view>

#include "kiln/eval/array_util.h"
#include "kiln/eval/lapack_internal.h"

namespace kiln::eval_internal {
namespace {

// The solver/sparse name of `t` without its vendor prefix: "cusolver_getrf_ffi" and
// "hipsolver_getrf_ffi" both give "solver_getrf_ffi"; "cu_lu_pivots_to_permutation" gives
// "_lu_pivots_to_permutation". Empty when t has neither prefix.
std::string_view Unvendored(std::string_view t) {
  if (t.starts_with("cu")) return t.substr(2);
  if (t.starts_with("hip")) return t.substr(3);
  return {};
}

StatusOr<Literal> PivotsToPermutation(const HloInstruction& instr,
                                      std::span<const Literal* const> ops) {
  if (ops.size() != 1)
    return InvalidArgument("lu_pivots_to_permutation %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  const Shape& ps = ops[0]->shape();
  const Shape& rs = instr.shape();
  if (ps.rank() < 1 || rs.IsTuple() || rs.rank() != ps.rank())
    return InvalidArgument("lu_pivots_to_permutation %", instr.name(),
                           ": operand and result must be arrays of the same rank");
  const int64_t k = ps.dimensions(ps.rank() - 1), m = rs.dimensions(rs.rank() - 1);
  int64_t batches = 1;
  for (int64_t d = 0; d + 1 < ps.rank(); ++d) {
    if (ps.dimensions(d) != rs.dimensions(d))
      return InvalidArgument("lu_pivots_to_permutation %", instr.name(), ": batch sizes differ");
    batches *= ps.dimensions(d);
  }
  std::vector<int64_t> piv = LiteralToInt64s(*ops[0]);
  std::vector<int64_t> perm(rs.num_elements());
  for (int64_t b = 0; b < batches; ++b) {
    int64_t* p = perm.data() + b * m;
    for (int64_t i = 0; i < m; ++i) p[i] = i;
    for (int64_t i = 0; i < std::min(k, m); ++i) {
      const int64_t j = piv[b * k + i];
      if (j >= 0 && j < m) std::swap(p[i], p[j]);
    }
  }
  return StoreIntsTo(rs, perm);
}

// syrk as JAX's GPU symmetric_product calls it: operands (a, c, alpha, beta) with row-major
// buffers that cuBLAS reads as column-major, fill mode upper there -- so, in the logical
// (row-major) view, the lower triangle and diagonal of the result are alpha a a^T + beta c
// (a^T a with transpose = true; no conjugation for complex types) and the strictly upper
// triangle is c's.
StatusOr<Literal> Syrk(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 4) return InvalidArgument("syrk %", instr.name(), " takes (a, c, alpha, beta)");
  KILN_ASSIGN_OR_RETURN(Batched ad, MatrixDims(instr, *ops[0], 0));
  KILN_ASSIGN_OR_RETURN(Batched cd_, MatrixDims(instr, *ops[1], 1));
  const bool transpose = BackendInt(instr, "transpose", 0) != 0;
  const int64_t n = transpose ? ad.n : ad.m, k = transpose ? ad.m : ad.n;
  if (cd_.m != n || cd_.n != n || cd_.batch != ad.batch || ops[2]->element_count() != 1 ||
      ops[3]->element_count() != 1)
    return InvalidArgument("syrk %", instr.name(), ": shapes do not fit (a ",
                           ops[0]->shape().ToString(), ", c ", ops[1]->shape().ToString(), ")");
  std::vector<cd> a = LiteralToComplexes(*ops[0]), c = LiteralToComplexes(*ops[1]);
  const cd alpha = LiteralToComplexes(*ops[2])[0], beta = LiteralToComplexes(*ops[3])[0];
  for (int64_t b = 0; b < ad.batch; ++b) {
    const cd* x = a.data() + b * ad.m * ad.n;
    cd* y = c.data() + b * n * n;
    // Row i of op(a) (n x k): a[i, :] or column i of a.
    auto at = [&](int64_t i, int64_t l) { return transpose ? x[l * ad.n + i] : x[i * ad.n + l]; };
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        cd s = 0;
        for (int64_t l = 0; l < k; ++l) s += at(i, l) * at(j, l);
        y[i * n + j] = alpha * s + beta * y[i * n + j];
      }
  }
  return StoreTo(instr.shape(), c);
}

// cholesky_update: (r, w) -> (r', w'): r upper triangular with A = r^H r; r' the Cholesky factor
// of A + w w^H (positive diagonal), by the usual sequence of rotations; only the upper triangle
// is written (the strictly lower one is r's). w' is what the rotations leave of w (JAX ignores
// it).
StatusOr<Literal> CholeskyUpdate(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.size() != 2) return InvalidArgument("cholesky_update %", instr.name(), " takes (r, w)");
  KILN_RETURN_IF_ERROR(CheckTuple(instr, 2));
  KILN_ASSIGN_OR_RETURN(Batched d, MatrixDims(instr, *ops[0]));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[1], 1));
  const int64_t n = d.n;
  if (d.m != n || ops[1]->element_count() != d.batch * n)
    return InvalidArgument("cholesky_update %", instr.name(), ": needs an n x n r and n-vector w");
  std::vector<cd> r = LiteralToComplexes(*ops[0]), w = LiteralToComplexes(*ops[1]);
  for (int64_t b = 0; b < d.batch; ++b) {
    cd* x = r.data() + b * n * n;
    cd* v = w.data() + b * n;
    for (int64_t k = 0; k < n; ++k) {
      const double rkk = std::abs(x[k * n + k]);
      const double nrm = std::hypot(rkk, std::abs(v[k]));
      const cd c = nrm / x[k * n + k], s = v[k] / x[k * n + k];
      x[k * n + k] = nrm;
      for (int64_t j = k + 1; j < n; ++j) {
        x[k * n + j] = (x[k * n + j] + std::conj(s) * v[j]) / std::conj(c);
        v[j] = std::conj(c) * v[j] - s * x[k * n + j];
      }
      v[k] = 0;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(StoreTo(Element(instr.shape(), 0), r));
  parts.push_back(StoreTo(Element(instr.shape(), 1), w));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> Gtsv2(const HloInstruction& instr, std::span<const Literal* const> ops) {
  KILN_ASSIGN_OR_RETURN(GtsvResult r, GtsvSolve(instr, ops));
  return StoreTo(Element(instr.shape(), 0), r.x);
}

}  // namespace

std::optional<StatusOr<Literal>> EvalGpuSolverCustomCall(const HloInstruction& instr,
                                                         std::span<const Literal* const> ops) {
  const std::string_view t = Unvendored(instr.attrs().custom_call_target);
  if (t.empty()) return std::nullopt;
  if (t == "solver_getrf_ffi") return GetrfKernel(instr, ops);
  if (t == "solver_potrf_ffi") return PotrfKernel(instr, ops, BackendInt(instr, "lower", 1) != 0);
  if (t == "solver_geqrf_ffi") return GeqrfKernel(instr, ops);
  if (t == "solver_orgqr_ffi") return OrgqrKernel(instr, ops);
  if (t == "solver_syevd_ffi") return SyevdKernel(instr, ops, BackendInt(instr, "lower", 1) != 0);
  if (t == "solver_gesvdj_ffi")
    return SvdKernel(instr, ops, BackendInt(instr, "compute_uv", 1) != 0, SvdOutputs::kUV);
  if (t == "solver_gesvd_ffi")
    return SvdKernel(instr, ops, BackendInt(instr, "compute_uv", 1) != 0,
                     BackendInt(instr, "transposed", 0) != 0 ? SvdOutputs::kVtU : SvdOutputs::kUVt);
  if (t == "solver_sytrd_ffi") return SytrdKernel(instr, ops, BackendInt(instr, "lower", 1) != 0);
  if (t == "sparse_gtsv2_ffi") return Gtsv2(instr, ops);
  if (t == "solver_syrk_ffi") return Syrk(instr, ops);
  if (t == "_cholesky_update_ffi") return CholeskyUpdate(instr, ops);
  if (t == "hybrid_geqp3") return Geqp3Kernel(instr, ops);
  if (t == "_lu_pivots_to_permutation") return PivotsToPermutation(instr, ops);
  return std::nullopt;
}

}  // namespace kiln::eval_internal
