// Dense linear algebra on cuSOLVER and cuBLAS (loaded at run time, vendor_apis.h) with the
// contracts of the reference evaluator's linear-algebra custom calls (eval/lapack.cc,
// eval/lapack_eig.cc, eval/lapack_reduce.cc, eval/gpu_solver.cc): what JAX's LAPACK, cuSOLVER and
// hipSOLVER targets compute, on the GPU.
//
//   KILN_ASSIGN_OR_RETURN(std::unique_ptr<SolverPlan> plan, SolverPlan::Create(desc, device, stream));
//   ... allocate plan->workspace_bytes() ...
//   KILN_RETURN_IF_ERROR(plan->Run(inputs, outputs, workspace, stream));
//
// Note [Row-major solver buffers]
//   kiln's buffers are row-major (the GPU compiler normalizes every layout, passes/
//   layout_normalization.h); cuSOLVER and cuBLAS are column-major. A row-major m x n buffer
//   read column-major is the n x m transpose. So:
//     potrf       runs on the buffer itself with the other triangle (A^T = conj(A) for a
//                 Hermitian A, whose upper Cholesky factor is L^T: the row-major L);
//     trsm, syrk  run on the buffers themselves with side / triangle / transpose swapped (what
//                 JAX's own cuBLAS syrk call does: Syrk in eval/gpu_solver.cc);
//     gesvd       of a wide matrix (m < n; cuSOLVER's gesvd takes m >= n only) factors the
//                 buffer itself, B = A^T = U_B S V_B^H: U = conj(V_B) and V^H = U_B^T, whose
//                 row-major buffers are V_B^H and U_B -- plain copies;
//     the others  (getrf, geqrf, orgqr, syevd, sytrd, gesvd of m >= n, gesvdj) transpose the
//                 operand into a column-major copy in the workspace (cuBLAS geam), factor it in
//                 place and transpose the results back.
//   Batches (the leading dimensions) run one matrix after another on the stream, reusing the
//   workspace; results that are per-matrix arrays (info, pivots, tau, eigen/singular values)
//   are written by cuSOLVER straight into the output buffers.
//
// Contracts (the evaluator's; a result is only as unique as the factorization):
//   kPotrf    (a) -> (a', info)        the `lower` (else upper) triangle holds the Cholesky
//             factor, the other is a's; info 0 or the order of the first non-positive minor.
//   kGetrf    (a) -> (lu, ipiv, info)  partial pivoting, 1-based s32 pivots (LAPACK's).
//   kGeqrf    (a) -> (a', tau)         LAPACK's packed Householder QR.
//   kOrgqr    (a, tau) -> q            the first n columns of H(0) ... H(k-1) (m >= n >= k).
//   kSyevd    (a) -> (v, w, info)      eigenvalues ascending, eigenvectors in v's columns (of
//             the `lower` / upper triangle).
//   kSytrd    (a) -> (a', d, e, tau, info)  LAPACK's ?sytrd / ?hetrd.
//   kGesvd    (a) -> (a, s, x, y, info)  cuSOLVER gesvd (QR iterations); x, y per `svd_layout`
//             (kUVt: U and V^H; kVtU: V^H and U), full or thin by their shapes.
//   kGesvdj   (a) -> (a, s, u, v, info)  cuSOLVER gesvdj (Jacobi): U and V itself (kUV).
//             SVDs: singular values descending; compute_uv = false leaves x and y zero; the
//             first result is the input.
//   kTrsm     (a, b) -> x              op(a) x = b (left) or x op(a) = b, a and b batched alike.
//   kSyrk     (a, c, alpha, beta) -> c'  the lower triangle (row-major) of alpha a a^T + beta c
//             (a^T a with syrk_transpose), the strict upper triangle c's; no conjugation.
//   kPivotsToPermutation  (s32 pivots [batch, k]) -> s32 perm [batch, m]: 0-based interchanges
//             applied in order to the identity (a small NVRTC kernel).
//   kCholeskyUpdate  (r, w) -> (r', w')  rank-one update of an upper Cholesky factor by
//             rotations (a small NVRTC kernel, real types, one thread per matrix, in double).
//   kGtsv     (dl, d, du, b) -> x (cuSPARSE's gtsv2 contract), or with `gtsv_lapack`
//             (dl', d', du', x, info) (LAPACK's ?gtsv): the system of m equations with n
//             right-hand sides by Gaussian elimination with partial pivoting exactly as ?gtsv
//             (and the evaluator, eval/lapack_eig.cc GtsvSolve) does it -- a small NVRTC kernel,
//             one thread per system, in double; dl[0] and du[m-1] are not read; a zero pivot
//             stops that system (info its row).
// Vectors (eigenvectors, singular vectors) are cuSOLVER's: each is unique only up to a unit
// factor, and differs from the evaluator's normalization by one; compare invariants.
// Element types: f32, f64, c64, c128 (info, pivots and permutations s32).
//
// Thread safety: Run may be called concurrently on different streams (each gets the stream's
// own handles); runs of one plan on one stream are ordered by the stream.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/hlo/types.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::libs {

enum class SolverOp : uint8_t {
  kPotrf,
  kGetrf,
  kGeqrf,
  kOrgqr,
  kSyevd,
  kSytrd,
  kGesvd,
  kGesvdj,
  kTrsm,
  kSyrk,
  kPivotsToPermutation,
  kCholeskyUpdate,
  kGtsv,
};
std::string_view SolverOpName(SolverOp op);

// Which factors an SVD's third and fourth results hold (eval_internal::SvdOutputs).
enum class SvdLayout : uint8_t { kUVt, kVtU, kUV };

struct SolverDesc {
  SolverOp op = SolverOp::kPotrf;
  PrimitiveType type = PrimitiveType::kF32;  // the matrices' element type
  int64_t batch = 1;
  // The (row-major) matrix the op factors: operand 0; trsm's b, syrk's result (n x n).
  // kPivotsToPermutation: m = the permutation's length.
  int64_t m = 0, n = 0;
  // kOrgqr: reflectors; kTrsm: a's order; kSyrk: the inner dimension; kPivotsToPermutation:
  // pivots per batch.
  int64_t k = 0;
  bool lower = true;  // potrf, syevd, sytrd; trsm's a
  // kTrsm
  bool left_side = true;
  int transpose = 0;  // 0 op(a) = a, 1 a^T, 2 a^H
  bool unit_diagonal = false;
  // kSyrk: a is k x n (a^T a) instead of n x k (a a^T).
  bool syrk_transpose = false;
  // kGtsv: LAPACK's five results instead of x alone.
  bool gtsv_lapack = false;
  // SVDs: the x and y results' matrix shapes.
  bool compute_uv = true;
  SvdLayout svd_layout = SvdLayout::kUVt;
  int64_t x_rows = 0, x_cols = 0, y_rows = 0, y_cols = 0;

  std::string ToString() const;  // "solver gesvd c64 batch=2 m=5 n=3 ..."
};

// Whether a run of `op` may be captured into a CUDA graph. cuSOLVER's eigen and singular-value
// routines (syevd, gesvd, gesvdj) iterate to convergence and are not: on an H200 (cuSOLVER
// 12.0.4) the second run of executables calling them -- the one that captures a graph -- failed
// while every other op's passed (Note [Solver calls and CUDA graphs] in
// cuda/compiler/solver_thunk.h).
bool SolverCapturable(SolverOp op);

// InvalidArgument / Unimplemented for descriptors the plan cannot run.
Status ValidateSolverDesc(const SolverDesc& desc);

// Bytes of input `i` / output `i` of `desc` (the order of the contracts above).
int64_t SolverInputCount(const SolverDesc& desc);
int64_t SolverOutputCount(const SolverDesc& desc);
uint64_t SolverInputBytes(const SolverDesc& desc, int64_t i);
uint64_t SolverOutputBytes(const SolverDesc& desc, int64_t i);

class SolverPlan {
 public:
  // Loads cuSOLVER (the ops that call it), cuBLAS, and the kernels the op needs, and queries
  // cuSOLVER's workspace with `stream`'s handle. NotFound naming the library when cuSOLVER or
  // cuBLAS is absent (CusolverApi::Load).
  static StatusOr<std::unique_ptr<SolverPlan>> Create(const SolverDesc& desc, CudaDevice& device,
                                                      runtime::Stream& stream);
  ~SolverPlan();
  SolverPlan(const SolverPlan&) = delete;
  SolverPlan& operator=(const SolverPlan&) = delete;

  const SolverDesc& desc() const { return desc_; }
  uint64_t workspace_bytes() const { return workspace_bytes_; }

  // Enqueues the op. `inputs` are not modified unless an output is the same buffer (JAX's
  // aliasing of results to operands); outputs may be those buffers or others, not overlapping
  // an input otherwise.
  Status Run(std::span<const runtime::DeviceMemory> inputs,
             std::span<const runtime::DeviceMemory> outputs, runtime::DeviceMemory workspace,
             runtime::Stream& stream) const;

 private:
  SolverPlan(const SolverDesc& desc, CudaDevice& device) : desc_(desc), device_(device) {}
  Status Build(runtime::Stream& stream);
  template <class T>
  Status RunTyped(std::span<const runtime::DeviceMemory> in,
                  std::span<const runtime::DeviceMemory> out, runtime::DeviceMemory ws,
                  runtime::Stream& stream) const;

  SolverDesc desc_;
  CudaDevice& device_;
  int lwork_ = 0;  // cuSOLVER's work, in elements
  // Workspace layout: [copy of the matrix][U][V][cuSOLVER work][scratch info], 256-aligned.
  uint64_t a_offset_ = 0, u_offset_ = 0, v_offset_ = 0, work_offset_ = 0, info_offset_ = 0;
  uint64_t cublas_offset_ = 0;
  // cuBLAS's workspace for the trsm / syrk / geam calls (4 MiB, NVIDIA's recommendation for
  // pre-Hopper cuBLAS routines; solver.cc's Note [cuBLAS workspace of solver calls]).
  static constexpr uint64_t kCublasWorkspaceBytes = 4ull << 20;
  uint64_t workspace_bytes_ = 0;
  void* gesvdj_params_ = nullptr;  // gesvdjInfo_t
  runtime::Kernel* kernel_ = nullptr;
};

// The NVRTC source of the pivots-to-permutation, Cholesky-update and tridiagonal-solve kernels
// (for the compile test).
const char* SolverKernelSource();

}  // namespace kiln::cuda::libs
