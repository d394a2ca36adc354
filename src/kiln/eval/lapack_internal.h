// Shared pieces of the linear-algebra custom calls (internal to src/kiln/eval): the LAPACK
// targets of JAX's CPU lowering (lapack.cc, lapack_eig.cc, lapack_reduce.cc, lapack_geev.cc)
// and the cuSOLVER / hipSOLVER / cuSPARSE / hybrid targets of its GPU lowerings
// (gpu_solver.cc, lapack_geev.cc), which share one set of routines.
//
// Matrices are handled in their logical (row-major index) order: LiteralToComplexes reads an
// array literal whatever its layout, so the column-major {0,1} layouts JAX gives these calls
// need no special care. Leading dimensions are batch dimensions. Values are computed in double
// precision (complex<double> throughout; real types have zero imaginary parts) and rounded once
// when stored.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/eval/kernels.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"

namespace kiln::eval_internal {

using cd = std::complex<double>;

// `key = 76 : ui8` (or `key = true`, `key = 4 : i32`) from an FFI backend_config: the integer
// value (true -> 1, false -> 0); `fallback` when absent.
int BackendInt(const HloInstruction& instr, std::string_view key, int fallback);

struct Batched {
  int64_t batch = 1, m = 0, n = 0;
};

// The (batch, m, n) of operand `index` = `a`, a matrix with leading batch dimensions.
StatusOr<Batched> MatrixDims(const HloInstruction& instr, const Literal& a, int64_t index = 0);

// Element i of a tuple shape; the shape itself when it is not a tuple.
const Shape& Element(const Shape& s, int64_t i);

// Fails unless `instr` returns a tuple of `n` elements.
Status CheckTuple(const HloInstruction& instr, int64_t n);

Literal StoreTo(const Shape& shape, const std::vector<cd>& v);
Literal StoreIntsTo(const Shape& shape, const std::vector<int64_t>& v);

// The factorizations of lapack.cc, with their attributes passed in (the LAPACK and cuSOLVER
// targets spell them differently). Results as the LAPACK targets define them (lapack.cc).
StatusOr<Literal> PotrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower);
StatusOr<Literal> GetrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops);
StatusOr<Literal> GeqrfKernel(const HloInstruction& instr, std::span<const Literal* const> ops);
StatusOr<Literal> OrgqrKernel(const HloInstruction& instr, std::span<const Literal* const> ops);

// LAPACK's ?larfg: the reflector H = I - tau v v^H, v = [1, x'], with H^H (alpha, x) = (beta, 0)
// for real beta. Returns tau; alpha becomes beta and x (len elements `stride` apart) becomes x'.
cd HouseholderLarfg(cd& alpha, cd* x, int64_t len, int64_t stride, bool complex);

// lapack_?sytrd_ffi / ?hetrd_ffi, {cu,hip}solver_sytrd_ffi: (a) -> (a', d, e, tau, info)
// (lapack_reduce.cc); lapack_?gehrd_ffi: (a) -> (a', tau, info) with backend_config low/high.
StatusOr<Literal> SytrdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower);
StatusOr<Literal> GehrdKernel(const HloInstruction& instr, std::span<const Literal* const> ops);
// lapack_?geqp3_ffi, {cu,hip}hybrid_geqp3: (a, jpvt) -> (a', jpvt', tau) (lapack_reduce.cc).
StatusOr<Literal> Geqp3Kernel(const HloInstruction& instr, std::span<const Literal* const> ops);

// Hermitian eigendecomposition of the `lower` (or upper) triangle of each n x n matrix `a`
// (row-major, batch after batch): eigenvalues ascending in `w` (batch x n), eigenvectors as the
// columns of `v` (row-major, same layout as `a`), each scaled so that its component of largest
// magnitude (the first such within a relative 1e-9) is real and positive. Householder
// tridiagonalization + implicit QL (lapack_eig.cc), in real arithmetic when `a` has no imaginary
// parts.
void HermitianEigen(const std::vector<cd>& a, int64_t batch, int64_t n, bool lower,
                    std::vector<double>& w, std::vector<cd>& v);

// lapack_?syevd_ffi / ?heevd_ffi, cusolver_syevd_ffi: (a) -> (v, w, info) (lapack_eig.cc).
StatusOr<Literal> SyevdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                              bool lower);

// The SVD targets (lapack_eig.cc): (a) -> (a, s, x, y, info). `layout` says what x and y are:
enum class SvdOutputs {
  kUVt,  // x = U (m x ucols), y = V^H (vrows x n): LAPACK ?gesdd/?gesvd, cusolver gesvd
  kVtU,  // x = V^H, y = U: cusolver gesvd with transposed = true (m < n)
  kUV,   // x = U, y = V (n x vcols): cusolver gesvdj
};
// compute_uv false: x and y are zeros. Their shapes pick full or thin factors (the leading
// columns of U / V, rows of V^H). Singular values descending.
StatusOr<Literal> SvdKernel(const HloInstruction& instr, std::span<const Literal* const> ops,
                            bool compute_uv, SvdOutputs layout);

// The cuSOLVER / hipSOLVER / cuSPARSE targets and cu/hip_lu_pivots_to_permutation
// (gpu_solver.cc), or nullopt when `instr`'s target is not one of them.
std::optional<StatusOr<Literal>> EvalGpuSolverCustomCall(const HloInstruction& instr,
                                                         std::span<const Literal* const> ops);

// lapack_?geev_ffi and {cu,hip}hybrid_eig_{real,comp} (lapack_geev.cc), or nullopt.
std::optional<StatusOr<Literal>> EvalGeevCustomCall(const HloInstruction& instr,
                                                    std::span<const Literal* const> ops);

// The LAPACK eigen/SVD targets and gtsv (lapack_eig.cc), or nullopt.
std::optional<StatusOr<Literal>> EvalLapackEigCustomCall(const HloInstruction& instr,
                                                         std::span<const Literal* const> ops);

// Tridiagonal solve as LAPACK's ?gtsv (Gaussian elimination with partial pivoting) of operands
// (dl, d, du, b), each with leading batch dimensions; dl[0] and du[n-1] are not read (JAX's
// convention). Returns (dl', d', du', x, info) in `out` order of LAPACK (lapack_eig.cc).
struct GtsvResult {
  std::vector<cd> dl, d, du, x;
  std::vector<int64_t> info;
};
StatusOr<GtsvResult> GtsvSolve(const HloInstruction& instr, std::span<const Literal* const> ops);

}  // namespace kiln::eval_internal
