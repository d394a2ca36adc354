// Dense linear algebra on Eigen: the HLO ops cholesky and triangular-solve, and the
// factorizations among the linear-algebra custom calls JAX emits -- the LAPACK targets of its
// CPU lowering and the cuSOLVER / hipSOLVER names of its GPU lowerings (a module dumped on a GPU
// machine, run on the cpu backend). IsNativeLinalg / CreateLinalgKernel also route the calls of
// linalg_reduce.cc and linalg_eig.cc.
//
// Note [Linear-algebra kernels]
//   Contracts are the evaluator's (eval/linalg.cc, eval/lapack.cc, eval/lapack_eig.cc,
//   eval/gpu_solver.cc), which follow LAPACK's / XLA's: results in the operands' element types,
//   info and pivots as LAPACK's 1-based s32s, the other triangle of potrf's result unchanged,
//   geqrf's packed reflectors with LAPACK's tau (Eigen's Householder coefficients are its
//   conjugates), orgqr's Q = H(0) ... H(k-1). Matrices are read in their logical row-major
//   order (the cpu compiler normalizes the column-major layouts JAX gives these calls) and
//   computed in double precision (std::complex<double> for complex types, real arithmetic for
//   real ones), rounded once on the way out, as the evaluator does; leading dimensions are
//   batches, split across threads. The numerics are Eigen's:
//     cholesky / potrf     Eigen's blocked LLT (llt_inplace), failure at the first pivot <= 0;
//     triangular-solve /   Eigen's triangular solves (TriangularView::solveInPlace);
//       trsm
//     getrf                Eigen's blocked partial-pivoting LU (partial_lu_impl) for real types;
//                          for complex ones the unblocked algorithm of LAPACK's ?getf2 with
//                          Eigen block updates, because LAPACK (i?amax) picks the pivot by
//                          |re| + |im| and Eigen by the modulus;
//     geqrf / orgqr        Eigen's HouseholderQR / HouseholderSequence;
//     syevd / heevd        Eigen's SelfAdjointEigenSolver;
//     gesdd / gesvd /      Eigen's BDCSVD;
//       gesvdj
//     gtsv2 (cuSPARSE)     Eigen's partial-pivoting LU of the tridiagonal matrix (x only; a
//                          singular system gives inf/NaN where the evaluator's ?gtsv stops).
//   Eigenvectors and singular vectors are defined up to a unit factor; they get the evaluator's
//   convention (eval/lapack_eig.cc): v_j scaled so that its component of largest magnitude (the
//   first within a relative 1e-9 of it) is real and positive, u_j by the same factor. Vectors of
//   degenerate values, of zero singular values and a full U's completion are Eigen's: only
//   invariants (reconstructions, projectors) of those are comparable.
//   The reductions and updates whose results are unique given LAPACK's conventions (sytrd /
//   hetrd, gehrd, geqp3, LAPACK's gtsv with its modified diagonals, cholesky_update, syrk) are
//   kernels/linalg_reduce.cc's, on the evaluator's algorithms; the general eigenproblem and the
//   Schur forms (geev, cuhybrid_eig, gees), whose eigenvalue order and Schur form are whatever
//   the QR iteration leaves, are kernels/linalg_eig.cc's, running the evaluator's (LAPACK's)
//   iteration step by step (Note [Eigenvalue order] there). Shared helpers: linalg_util.h.
#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <Eigen/Householder>
#include <Eigen/LU>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <complex>
#include <string_view>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/cpu/kernels/linalg_util.h"
#include "kiln/eval/lapack_internal.h"  // BackendInt: the FFI backend_config reader

namespace kiln::cpu::internal {
namespace {

using linalg::cd;
using linalg::Get;
using linalg::GetInt;
using linalg::IsComplex;
using linalg::IsLinalgType;
using linalg::LapackTarget;
using linalg::Put;
using linalg::PutInt;
using linalg::Unvendored;
using Dims = linalg::MatrixDims;
using linalg::MatrixDimsOf;
template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class Op {
  kCholesky,     // HLO cholesky
  kTriSolve,     // HLO triangular-solve, lapack_?trsm_ffi
  kPotrf,        // (a) -> (a', info)
  kGetrf,        // (a) -> (lu, ipiv, info)
  kPivotsToPermutation,
  kGeqrf,        // (a) -> (a', tau)
  kOrgqr,        // (a, tau) -> q
  kSyevd,        // (a) -> (v, w, info)
  kSvd,          // (a) -> (a, s, x, y, info)
  kGtsv2,        // (dl, d, du, b) -> x
};
enum class SvdLayout { kUVt, kVtU, kUV };

template <class S>
Mat<S> Load(const ArrayView& v, int64_t batch, int64_t rows, int64_t cols) {
  Mat<S> m(rows, cols);
  const int64_t base = batch * rows * cols;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m(r, c) = Get<S>(v, base + r * cols + c);
  return m;
}
template <class M>
void Store(const ArrayView& v, int64_t batch, const M& m) {
  const int64_t rows = m.rows(), cols = m.cols(), base = batch * rows * cols;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) Put(v, base + r * cols + c, m(r, c));
}

// The evaluator's vector convention: x scaled by the unit factor that makes its component of
// largest magnitude (the first within a relative 1e-9 of the largest) real and positive.
template <class S, class V>
S PhaseOf(const V& x) {
  double best = 0;
  for (int64_t i = 0; i < x.size(); ++i) best = std::max(best, std::abs(x(i)));
  if (best == 0) return S(1);
  for (int64_t i = 0; i < x.size(); ++i)
    if (std::abs(x(i)) >= best * (1 - 1e-9)) {
      if constexpr (std::is_same_v<S, cd>) return std::conj(x(i)) / std::abs(x(i));
      else return x(i) < 0 ? -1.0 : 1.0;
    }
  return S(1);
}

class LinalgKernel final : public CpuKernel {
 public:
  Op op_;
  std::string name_;
  bool complex_ = false;
  bool lower_ = true;
  TriangularSolveOptions tri_;
  bool compute_uv_ = true;
  SvdLayout svd_layout_ = SvdLayout::kUVt;
  Dims d_;
  int64_t k_ = 0;  // orgqr's reflectors; trsm's triangle order
  std::vector<Shape> in_shapes_, out_shapes_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != in_shapes_.size() || outputs.size() != out_shapes_.size())
      return InvalidArgument(name_, ": got ", inputs.size(), " inputs and ", outputs.size(), " outputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].shape.dimensions() != in_shapes_[i].dimensions())
        return InvalidArgument(name_, ": input ", i, " does not match");
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].shape.dimensions() != out_shapes_[i].dimensions())
        return InvalidArgument(name_, ": output ", i, " does not match");
    if (op_ == Op::kPivotsToPermutation) {
      PivotsToPermutation(inputs, outputs);
      return OkStatus();
    }
    const int64_t work = std::max<int64_t>(1, d_.m * d_.n * std::max(d_.m, d_.n));
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 16) / work);
    ParallelFor(ctx, d_.batch, chunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (complex_) One<cd>(i, inputs, outputs);
        else One<double>(i, inputs, outputs);
      }
    });
    return OkStatus();
  }

 private:
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    switch (op_) {
      case Op::kCholesky: Cholesky<S>(b, in, out); break;
      case Op::kTriSolve: TriSolve<S>(b, in, out); break;
      case Op::kPotrf: Potrf<S>(b, in, out); break;
      case Op::kGetrf: Getrf<S>(b, in, out); break;
      case Op::kGeqrf: Geqrf<S>(b, in, out); break;
      case Op::kOrgqr: Orgqr<S>(b, in, out); break;
      case Op::kSyevd: Syevd<S>(b, in, out); break;
      case Op::kSvd: Svd<S>(b, in, out); break;
      case Op::kGtsv2: Gtsv2<S>(b, in, out); break;
      default: break;
    }
  }

  // XLA's cholesky: the lower factor of a's lower triangle (upper: of a's transpose, then
  // transposed back); the other triangle zero; a failed factorization all NaN.
  template <class S>
  void Cholesky(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = d_.n;
    Mat<S> a = Load<S>(in[0], b, n, n);
    Mat<S> m = lower_ ? a : Mat<S>(a.transpose());
    const Eigen::Index failed = Eigen::internal::llt_inplace<S, Eigen::Lower>::blocked(m);
    Mat<S> l = Mat<S>::Zero(n, n);
    if (failed >= 0) l.setConstant(S(std::numeric_limits<double>::quiet_NaN()));
    else l.template triangularView<Eigen::Lower>() = m.template triangularView<Eigen::Lower>();
    if (lower_) Store(out[0], b, l);
    else Store(out[0], b, Mat<S>(l.transpose()));
  }

  template <class S>
  void TriSolve(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t k = k_, m = d_.m, n = d_.n;
    Mat<S> a = Load<S>(in[0], b, k, k);
    Mat<S> x = Load<S>(in[1], b, m, n);
    // T = op(the `lower` triangle of a, with a unit diagonal if asked).
    Mat<S> t = Mat<S>::Zero(k, k);
    if (tri_.lower) t.template triangularView<Eigen::Lower>() = a.template triangularView<Eigen::Lower>();
    else t.template triangularView<Eigen::Upper>() = a.template triangularView<Eigen::Upper>();
    if (tri_.unit_diagonal) t.diagonal().setOnes();
    bool t_lower = tri_.lower;
    if (tri_.transpose_a == TriangularTranspose::kTranspose) {
      t = Mat<S>(t.transpose());
      t_lower = !t_lower;
    } else if (tri_.transpose_a == TriangularTranspose::kAdjoint) {
      t = Mat<S>(t.adjoint());
      t_lower = !t_lower;
    }
    if (tri_.left_side) {
      if (t_lower) t.template triangularView<Eigen::Lower>().solveInPlace(x);
      else t.template triangularView<Eigen::Upper>().solveInPlace(x);
    } else {
      if (t_lower) t.template triangularView<Eigen::Lower>().template solveInPlace<Eigen::OnTheRight>(x);
      else t.template triangularView<Eigen::Upper>().template solveInPlace<Eigen::OnTheRight>(x);
    }
    Store(out[0], b, x);
  }

  // LAPACK's ?potrf: the `lower` (or upper) triangle factored in place, the other kept.
  template <class S>
  void Potrf(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = d_.n;
    Mat<S> a = Load<S>(in[0], b, n, n);
    Mat<S> m = lower_ ? a : Mat<S>(a.adjoint());  // the lower-triangle problem
    const Eigen::Index failed = Eigen::internal::llt_inplace<S, Eigen::Lower>::blocked(m);
    if (lower_) a.template triangularView<Eigen::Lower>() = m.template triangularView<Eigen::Lower>();
    else a.template triangularView<Eigen::Upper>() = m.adjoint().template triangularView<Eigen::Upper>();
    Store(out[0], b, a);
    PutInt(out[1], b, failed >= 0 ? failed + 1 : 0);
  }

  template <class S>
  void Getrf(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t m = d_.m, n = d_.n, k = std::min(m, n);
    Mat<S> a = Load<S>(in[0], b, m, n);
    std::vector<int> piv(std::max<int64_t>(k, 1), 0);
    int64_t info = 0;
    if (k > 0) {
      if constexpr (std::is_same_v<S, double>) {
        int transpositions = 0;
        const Eigen::Index zero = Eigen::internal::partial_lu_impl<double, Eigen::RowMajor, int>::blocked_lu(
            m, n, a.data(), n, piv.data(), transpositions);
        info = zero >= 0 ? zero + 1 : 0;
      } else {
        // ?getf2: the pivot is the first row of largest |re| + |im|.
        for (int64_t j = 0; j < k; ++j) {
          int64_t p = j;
          double best = -1;
          for (int64_t i = j; i < m; ++i) {
            const double v = std::abs(a(i, j).real()) + std::abs(a(i, j).imag());
            if (v > best) {
              best = v;
              p = i;
            }
          }
          piv[j] = static_cast<int>(p);
          if (a(p, j) == S(0)) {
            if (info == 0) info = j + 1;
            continue;
          }
          if (p != j) a.row(j).swap(a.row(p));
          const int64_t rest = m - j - 1, cols = n - j - 1;
          if (rest > 0) {
            a.col(j).tail(rest) /= a(j, j);
            if (cols > 0)
              a.bottomRightCorner(rest, cols).noalias() -= a.col(j).tail(rest) * a.row(j).tail(cols);
          }
        }
      }
    }
    Store(out[0], b, a);
    for (int64_t j = 0; j < k; ++j) PutInt(out[1], b * k + j, piv[j] + 1);
    PutInt(out[2], b, info);
  }

  template <class S>
  void Geqrf(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t m = d_.m, n = d_.n, k = std::min(m, n);
    Mat<S> a = Load<S>(in[0], b, m, n);
    Eigen::HouseholderQR<Mat<S>> qr(a);
    Store(out[0], b, qr.matrixQR());
    for (int64_t i = 0; i < k; ++i) {
      S tau = qr.hCoeffs()(i);
      if constexpr (std::is_same_v<S, cd>) tau = std::conj(tau);
      Put(out[1], b * k + i, tau);
    }
  }

  template <class S>
  void Orgqr(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t m = d_.m, n = d_.n, k = k_;
    Mat<S> a = Load<S>(in[0], b, m, n);
    Eigen::Matrix<S, Eigen::Dynamic, 1> tau(k);
    for (int64_t i = 0; i < k; ++i) tau(i) = Get<S>(in[1], b * k + i);
    Mat<S> q = Mat<S>::Identity(m, n);
    if (k > 0) {
      Mat<S> vectors = a.leftCols(k);
      Eigen::HouseholderSequence<Mat<S>, Eigen::Matrix<S, Eigen::Dynamic, 1>> h(vectors, tau);
      q.applyOnTheLeft(h);
    }
    Store(out[0], b, q);
  }

  template <class S>
  void Syevd(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = d_.n;
    Mat<S> a = Load<S>(in[0], b, n, n);
    // The Hermitian matrix of the `lower` (or upper) triangle.
    Mat<S> h(n, n);
    if (lower_) {
      h.template triangularView<Eigen::Lower>() = a.template triangularView<Eigen::Lower>();
      h.template triangularView<Eigen::StrictlyUpper>() = a.adjoint().template triangularView<Eigen::StrictlyUpper>();
    } else {
      h.template triangularView<Eigen::Upper>() = a.template triangularView<Eigen::Upper>();
      h.template triangularView<Eigen::StrictlyLower>() = a.adjoint().template triangularView<Eigen::StrictlyLower>();
    }
    for (int64_t i = 0; i < n; ++i) h(i, i) = S(std::real(h(i, i)));
    Eigen::SelfAdjointEigenSolver<Mat<S>> es(h);
    Mat<S> v = es.eigenvectors();
    for (int64_t j = 0; j < n; ++j) v.col(j) *= PhaseOf<S>(v.col(j));
    Store(out[0], b, v);
    for (int64_t j = 0; j < n; ++j) Put(out[1], b * n + j, es.eigenvalues()(j));
    PutInt(out[2], b, 0);
  }

  template <class S>
  void Svd(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t m = d_.m, n = d_.n, k = std::min(m, n);
    Mat<S> a = Load<S>(in[0], b, m, n);
    Store(out[0], b, a);  // the first result is the input (LAPACK leaves it unspecified)
    Eigen::BDCSVD<Mat<S>> svd(a, compute_uv_ ? (Eigen::ComputeFullU | Eigen::ComputeFullV) : 0);
    const auto& s = svd.singularValues();
    for (int64_t j = 0; j < k; ++j) Put(out[1], b * k + j, s(j));
    PutInt(out[4], b, 0);
    const Shape& xs = out_shapes_[2];
    const Shape& ys = out_shapes_[3];
    const int64_t xr = xs.dimensions(xs.rank() - 2), xc = xs.dimensions(xs.rank() - 1);
    const int64_t yr = ys.dimensions(ys.rank() - 2), yc = ys.dimensions(ys.rank() - 1);
    if (!compute_uv_) {
      Store(out[2], b, Mat<S>::Zero(xr, xc));
      Store(out[3], b, Mat<S>::Zero(yr, yc));
      return;
    }
    Mat<S> u = svd.matrixU(), v = svd.matrixV();
    const double smax = k > 0 ? s(0) : 0;
    for (int64_t j = 0; j < k; ++j) {
      if (!(s(j) > 1e-13 * smax)) continue;
      const S phase = PhaseOf<S>(v.col(j));
      v.col(j) *= phase;
      u.col(j) *= phase;
    }
    switch (svd_layout_) {
      case SvdLayout::kUVt:
        Store(out[2], b, Mat<S>(u.leftCols(xc)));
        Store(out[3], b, Mat<S>(v.leftCols(yr).adjoint()));
        break;
      case SvdLayout::kVtU:
        Store(out[2], b, Mat<S>(v.leftCols(xr).adjoint()));
        Store(out[3], b, Mat<S>(u.leftCols(yc)));
        break;
      case SvdLayout::kUV:
        Store(out[2], b, Mat<S>(u.leftCols(xc)));
        Store(out[3], b, Mat<S>(v.leftCols(yc)));
        break;
    }
  }

  // cuSPARSE's gtsv2: the tridiagonal system (dl[i] below the diagonal in row i, dl[0] unused;
  // du[i] above it, du[n-1] unused) solved by Eigen's partial-pivoting LU of the matrix.
  template <class S>
  void Gtsv2(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = d_.m, nrhs = d_.n;
    Mat<S> t = Mat<S>::Zero(n, n);
    for (int64_t i = 0; i < n; ++i) {
      t(i, i) = Get<S>(in[1], b * n + i);
      if (i > 0) t(i, i - 1) = Get<S>(in[0], b * n + i);
      if (i + 1 < n) t(i, i + 1) = Get<S>(in[2], b * n + i);
    }
    Mat<S> x = Load<S>(in[3], b, n, nrhs);
    if (n > 0) x = Eigen::PartialPivLU<Mat<S>>(t).solve(x);
    Store(out[0], b, x);
  }

  // 0-based row interchanges applied in order to the identity permutation of m; a pivot outside
  // [0, m) is skipped.
  void PivotsToPermutation(std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t k = in_shapes_[0].dimensions().back(), m = out_shapes_[0].dimensions().back();
    std::vector<int64_t> p(m);
    for (int64_t b = 0; b < d_.batch; ++b) {
      for (int64_t i = 0; i < m; ++i) p[i] = i;
      for (int64_t i = 0; i < std::min(k, m); ++i) {
        const int64_t j = GetInt(in[0], b * k + i);
        if (j >= 0 && j < m) std::swap(p[i], p[j]);
      }
      for (int64_t i = 0; i < m; ++i) PutInt(out[0], b * m + i, p[i]);
    }
  }
};

}  // namespace

bool IsNativeLinalg(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kCholesky || instr.opcode() == HloOpcode::kTriangularSolve) return true;
  if (instr.opcode() != HloOpcode::kCustomCall) return false;
  if (linalg::IsNativeLinalgReduce(instr) || linalg::IsNativeLinalgEig(instr)) return true;
  const std::string& t = instr.attrs().custom_call_target;
  for (std::string_view op : {"potrf", "getrf", "trsm", "geqrf", "orgqr", "ungqr", "syevd", "heevd", "gesdd", "gesvd"})
    if (LapackTarget(t, op)) return true;
  const std::string_view u = Unvendored(t);
  return u == "solver_getrf_ffi" || u == "solver_potrf_ffi" || u == "solver_geqrf_ffi" ||
         u == "solver_orgqr_ffi" || u == "solver_syevd_ffi" || u == "solver_gesvdj_ffi" ||
         u == "solver_gesvd_ffi" || u == "_lu_pivots_to_permutation" || u == "sparse_gtsv2_ffi";
}

StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgKernel(const HloInstruction& instr, const CpuKernelOptions&) {
  if (!IsNativeLinalg(instr)) return Unimplemented("no native linear-algebra kernel for %", instr.name());
  if (linalg::IsNativeLinalgReduce(instr)) return linalg::CreateLinalgReduceKernel(instr);
  if (linalg::IsNativeLinalgEig(instr)) return linalg::CreateLinalgEigKernel(instr);
  auto k = std::make_unique<LinalgKernel>();
  const std::string& t = instr.attrs().custom_call_target;
  const std::string what = StrCat(t.empty() ? std::string(HloOpcodeString(instr.opcode())) : t, " %", instr.name());
  const std::string_view u = Unvendored(t);
  auto bint = [&](std::string_view key, int fallback) { return eval_internal::BackendInt(instr, key, fallback); };
  int results = 1;  // the tuple's elements (1: an array result)
  int operands = 1;
  if (instr.opcode() == HloOpcode::kCholesky) {
    k->op_ = Op::kCholesky;
    k->lower_ = instr.attrs().cholesky_lower;
  } else if (instr.opcode() == HloOpcode::kTriangularSolve) {
    k->op_ = Op::kTriSolve;
    k->tri_ = instr.attrs().triangular_solve_options;
    operands = 2;
  } else if (LapackTarget(t, "trsm")) {
    k->op_ = Op::kTriSolve;
    k->tri_.left_side = bint("side", 'L') == 'L';
    k->tri_.lower = bint("uplo", 'L') == 'L';
    k->tri_.unit_diagonal = bint("diag", 'N') == 'U';
    const int trans = bint("trans_x", 'N');
    k->tri_.transpose_a = trans == 'T'   ? TriangularTranspose::kTranspose
                          : trans == 'C' ? TriangularTranspose::kAdjoint
                                         : TriangularTranspose::kNoTranspose;
    operands = 2;
  } else if (LapackTarget(t, "potrf") || u == "solver_potrf_ffi") {
    k->op_ = Op::kPotrf;
    k->lower_ = u.empty() ? bint("uplo", 'L') == 'L' : bint("lower", 1) != 0;
    results = 2;
  } else if (LapackTarget(t, "getrf") || u == "solver_getrf_ffi") {
    k->op_ = Op::kGetrf;
    results = 3;
  } else if (LapackTarget(t, "geqrf") || u == "solver_geqrf_ffi") {
    k->op_ = Op::kGeqrf;
    results = 2;
  } else if (LapackTarget(t, "orgqr") || LapackTarget(t, "ungqr") || u == "solver_orgqr_ffi") {
    k->op_ = Op::kOrgqr;
    operands = 2;
  } else if (LapackTarget(t, "syevd") || LapackTarget(t, "heevd") || u == "solver_syevd_ffi") {
    k->op_ = Op::kSyevd;
    k->lower_ = u.empty() ? bint("uplo", 'L') == 'L' : bint("lower", 1) != 0;
    results = 3;
  } else if (LapackTarget(t, "gesdd") || LapackTarget(t, "gesvd")) {
    k->op_ = Op::kSvd;
    k->compute_uv_ = bint("mode", 'A') != 'N';
    k->svd_layout_ = SvdLayout::kUVt;
    results = 5;
  } else if (u == "solver_gesvdj_ffi") {
    k->op_ = Op::kSvd;
    k->compute_uv_ = bint("compute_uv", 1) != 0;
    k->svd_layout_ = SvdLayout::kUV;
    results = 5;
  } else if (u == "solver_gesvd_ffi") {
    k->op_ = Op::kSvd;
    k->compute_uv_ = bint("compute_uv", 1) != 0;
    k->svd_layout_ = bint("transposed", 0) != 0 ? SvdLayout::kVtU : SvdLayout::kUVt;
    results = 5;
  } else if (u == "sparse_gtsv2_ffi") {
    k->op_ = Op::kGtsv2;
    operands = 4;
  } else {
    k->op_ = Op::kPivotsToPermutation;
  }
  if (instr.operand_count() != operands)
    return InvalidArgument(what, ": takes ", operands, " operand", operands == 1 ? "" : "s");
  for (const HloInstruction* o : instr.operands()) {
    if (!o->shape().IsArray()) return InvalidArgument(what, ": operands must be arrays");
    k->in_shapes_.push_back(o->shape());
  }
  if (results > 1 || instr.shape().IsTuple()) {
    if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != results)
      return InvalidArgument(what, ": must return a tuple of ", results);
    for (const Shape& s : instr.shape().tuple_shapes()) {
      if (!s.IsArray()) return InvalidArgument(what, ": results must be arrays");
      k->out_shapes_.push_back(s);
    }
  } else {
    k->out_shapes_.push_back(instr.shape());
  }
  const PrimitiveType type = k->in_shapes_[0].element_type();
  if (k->op_ == Op::kPivotsToPermutation) {
    const Shape& ps = k->in_shapes_[0];
    const Shape& rs = k->out_shapes_[0];
    if (ps.rank() < 1 || rs.rank() != ps.rank() || !IsIntegralType(ps.element_type()) ||
        (ps.element_type() != PrimitiveType::kS32 && ps.element_type() != PrimitiveType::kS64) ||
        (rs.element_type() != PrimitiveType::kS32 && rs.element_type() != PrimitiveType::kS64))
      return Unimplemented("lu_pivots_to_permutation of ", ShapeText(ps), " -> ", ShapeText(rs));
    for (int64_t i = 0; i + 1 < ps.rank(); ++i) {
      if (ps.dimensions(i) != rs.dimensions(i))
        return InvalidArgument(what, ": batch sizes differ");
      k->d_.batch *= ps.dimensions(i);
    }
    k->name_ = StrCat("linalg[", t, " ", ShapeText(instr.shape()), "]");
    return std::unique_ptr<CpuKernel>(std::move(k));
  }
  if (!IsLinalgType(type)) return Unimplemented("no native linear algebra on ", PrimitiveTypeName(type));
  k->complex_ = IsComplex(type);
  // The operand giving (batch, m, n).
  const int matrix = k->op_ == Op::kTriSolve ? 1 : k->op_ == Op::kGtsv2 ? 3 : 0;
  KILN_ASSIGN_OR_RETURN(k->d_, MatrixDimsOf(instr, k->in_shapes_[matrix]));
  const Dims& d = k->d_;
  auto expect = [&](bool ok, std::string_view what) -> Status {
    if (ok) return OkStatus();
    return InvalidArgument(what, ": ", what);
  };
  auto dims_of = [](const Shape& s) { return s.dimensions(); };
  auto batched = [&](const Shape& s, std::vector<int64_t> tail) {
    std::vector<int64_t> v(k->in_shapes_[matrix].dimensions().begin(), k->in_shapes_[matrix].dimensions().end() - 2);
    v.insert(v.end(), tail.begin(), tail.end());
    return dims_of(s) == v;
  };
  const int64_t mn = std::min(d.m, d.n);
  switch (k->op_) {
    case Op::kCholesky:
      KILN_RETURN_IF_ERROR(expect(d.m == d.n && batched(k->out_shapes_[0], {d.n, d.n}), "needs square matrices"));
      break;
    case Op::kTriSolve: {
      const Shape& as = k->in_shapes_[0];
      k->k_ = as.rank() >= 2 ? as.dimensions(as.rank() - 1) : -1;
      KILN_RETURN_IF_ERROR(expect(batched(as, {k->k_, k->k_}) && (k->tri_.left_side ? k->k_ == d.m : k->k_ == d.n),
                                  "a and b do not fit"));
      KILN_RETURN_IF_ERROR(expect(batched(k->out_shapes_[0], {d.m, d.n}), "the result differs from b"));
      break;
    }
    case Op::kPotrf:
      KILN_RETURN_IF_ERROR(expect(d.m == d.n && batched(k->out_shapes_[0], {d.n, d.n}) &&
                                      k->out_shapes_[1].num_elements() == d.batch,
                                  "needs square matrices and one info each"));
      break;
    case Op::kGetrf:
      KILN_RETURN_IF_ERROR(expect(batched(k->out_shapes_[0], {d.m, d.n}) &&
                                      k->out_shapes_[1].num_elements() == d.batch * mn &&
                                      k->out_shapes_[2].num_elements() == d.batch,
                                  "results do not fit the operand"));
      break;
    case Op::kGeqrf:
      KILN_RETURN_IF_ERROR(expect(batched(k->out_shapes_[0], {d.m, d.n}) &&
                                      k->out_shapes_[1].num_elements() == d.batch * mn,
                                  "results do not fit the operand"));
      break;
    case Op::kOrgqr: {
      const Shape& ts = k->in_shapes_[1];
      k->k_ = ts.rank() >= 1 ? ts.dimensions(ts.rank() - 1) : 0;
      KILN_RETURN_IF_ERROR(expect(k->k_ <= d.n && d.n <= d.m && ts.num_elements() == d.batch * k->k_ &&
                                      batched(k->out_shapes_[0], {d.m, d.n}),
                                  "needs m >= n >= k"));
      break;
    }
    case Op::kSyevd:
      KILN_RETURN_IF_ERROR(expect(d.m == d.n && batched(k->out_shapes_[0], {d.n, d.n}) &&
                                      k->out_shapes_[1].num_elements() == d.batch * d.n &&
                                      k->out_shapes_[2].num_elements() == d.batch,
                                  "needs square matrices"));
      break;
    case Op::kSvd: {
      const Shape& xs = k->out_shapes_[2];
      const Shape& ys = k->out_shapes_[3];
      KILN_RETURN_IF_ERROR(expect(xs.rank() >= 2 && ys.rank() >= 2 && batched(k->out_shapes_[0], {d.m, d.n}) &&
                                      k->out_shapes_[1].num_elements() == d.batch * mn &&
                                      k->out_shapes_[4].num_elements() == d.batch,
                                  "results do not fit the operand"));
      const int64_t xr = xs.dimensions(xs.rank() - 2), xc = xs.dimensions(xs.rank() - 1);
      const int64_t yr = ys.dimensions(ys.rank() - 2), yc = ys.dimensions(ys.rank() - 1);
      const int64_t m = d.m, n = d.n;
      bool ok = xs.num_elements() == d.batch * xr * xc && ys.num_elements() == d.batch * yr * yc;
      if (k->compute_uv_) switch (k->svd_layout_) {
          case SvdLayout::kUVt: ok = ok && xr == m && xc >= mn && xc <= m && yc == n && yr >= mn && yr <= n; break;
          case SvdLayout::kVtU: ok = ok && xc == n && xr >= mn && xr <= n && yr == m && yc >= mn && yc <= m; break;
          case SvdLayout::kUV: ok = ok && xr == m && xc >= mn && xc <= m && yr == n && yc >= mn && yc <= n; break;
        }
      KILN_RETURN_IF_ERROR(expect(ok, "u and v results do not fit the operand"));
      break;
    }
    case Op::kGtsv2: {
      bool ok = batched(k->out_shapes_[0], {d.m, d.n});
      for (int i = 0; i < 3; ++i)
        ok = ok && k->in_shapes_[i].num_elements() == d.batch * d.m && k->in_shapes_[i].element_type() == type;
      KILN_RETURN_IF_ERROR(expect(ok, "diagonals or right-hand sides do not fit"));
      break;
    }
    default: break;
  }
  // Integer results (info, pivots) must be s32 or s64; float ones one of the linear-algebra types.
  for (const Shape& s : k->out_shapes_) {
    const PrimitiveType o = s.element_type();
    if (!(IsLinalgType(o) || o == PrimitiveType::kS32 || o == PrimitiveType::kS64))
      return Unimplemented("no native linear algebra with a ", PrimitiveTypeName(o), " result");
  }
  k->name_ = StrCat("linalg[", instr.opcode() == HloOpcode::kCustomCall ? t : std::string(HloOpcodeString(instr.opcode())),
                    " ", ShapeText(k->in_shapes_[matrix]), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

namespace linalg {

StatusOr<MatrixDims> MatrixDimsOf(const HloInstruction& instr, const Shape& s) {
  if (!s.IsArray() || s.rank() < 2)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ", ShapeText(s),
                           " is not a (batched) matrix");
  MatrixDims d;
  d.m = s.dimensions(s.rank() - 2);
  d.n = s.dimensions(s.rank() - 1);
  for (int64_t i = 0; i + 2 < s.rank(); ++i) d.batch *= s.dimensions(i);
  return d;
}

Status InitLinalgKernel(BatchedLinalgKernel& k, const HloInstruction& instr, int operands, int results) {
  const std::string& t = instr.attrs().custom_call_target;
  const std::string what = StrCat(t, " %", instr.name());
  if (instr.operand_count() != operands)
    return InvalidArgument(what, ": takes ", operands, " operand", operands == 1 ? "" : "s");
  auto type_ok = [](const Shape& s) {
    const PrimitiveType p = s.element_type();
    return IsLinalgType(p) || p == PrimitiveType::kS32 || p == PrimitiveType::kS64;
  };
  for (const HloInstruction* o : instr.operands()) {
    if (!o->shape().IsArray()) return InvalidArgument(what, ": operands must be arrays");
    if (!type_ok(o->shape()))
      return Unimplemented(what, ": no native linear algebra on ", PrimitiveTypeName(o->shape().element_type()));
    k.in_shapes_.push_back(o->shape());
  }
  if (instr.shape().IsTuple()) {
    for (const Shape& s : instr.shape().tuple_shapes()) k.out_shapes_.push_back(s);
  } else {
    k.out_shapes_.push_back(instr.shape());
  }
  if (static_cast<int>(k.out_shapes_.size()) != results)
    return InvalidArgument(what, ": must return ", results == 1 ? "an array" : StrCat("a tuple of ", results));
  for (const Shape& s : k.out_shapes_) {
    if (!s.IsArray()) return InvalidArgument(what, ": results must be arrays");
    if (!type_ok(s))
      return Unimplemented(what, ": no native linear algebra with a ", PrimitiveTypeName(s.element_type()), " result");
  }
  const PrimitiveType type = k.in_shapes_[0].element_type();
  if (!IsLinalgType(type)) return Unimplemented(what, ": no native linear algebra on ", PrimitiveTypeName(type));
  k.complex_ = IsComplex(type);
  k.name_ = StrCat("linalg[", t, " ", ShapeText(k.in_shapes_[0]), "]");
  return OkStatus();
}

Status BatchedLinalgKernel::Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
                                const KernelContext& ctx) const {
  if (inputs.size() != in_shapes_.size() || outputs.size() != out_shapes_.size())
    return InvalidArgument(name_, ": got ", inputs.size(), " inputs and ", outputs.size(), " outputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].shape.dimensions() != in_shapes_[i].dimensions() ||
        inputs[i].shape.element_type() != in_shapes_[i].element_type())
      return InvalidArgument(name_, ": input ", i, " does not match");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].shape.dimensions() != out_shapes_[i].dimensions() ||
        outputs[i].shape.element_type() != out_shapes_[i].element_type())
      return InvalidArgument(name_, ": output ", i, " does not match");
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(work_, 1));
  ParallelFor(ctx, batch_, chunk, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) RunBatch(i, inputs, outputs);
  });
  return OkStatus();
}

}  // namespace linalg

}  // namespace kiln::cpu::internal

