// Matrix multiplication for the dot and convolution kernels (internal to src/kiln/cpu/kernels):
// Eigen's tensor contraction (its GEBP kernel, as XLA's CPU runtime uses) for f32, f64, c64 and
// c128, and a blocked loop for integers.
//
// Note [Eigen threads]
//   Eigen's contraction runs on the Eigen::ThreadPool behind ctx.pool (ctx.pool->eigen_pool():
//   the same workers as kiln's parallel loops; Note [Eigen's own pool for contractions] in
//   gemm.cc), or with KILN_CPU_GEMM_POOL=separate on a second, process-wide Eigen::ThreadPool as
//   large. Either way it is only used when ctx.pool may be. Eigen's contraction
//   blocks the calling thread until its tasks are done, so it must not be called from a worker of the same pool with the pool's other workers
//   possibly blocked the same way (a deadlock): called from a worker of ctx.pool -- or without a
//   pool -- a GEMM runs single-threaded (Eigen::DefaultDevice), which is also what kiln's
//   ThreadPool::ParallelFor does for nested parallelism.
#pragma once

#include <complex>
#include <cstdint>

#include "kiln/cpu/kernel.h"

namespace kiln::cpu::internal {

// One GEMM: C[M, N] = op(A) * op(B), all row-major, where A is [M, K] (or [K, M] when
// a_transposed) and B is [K, N] (or [N, K] when b_transposed). C is overwritten, or added to
// when `accumulate`.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool a_transposed = false;
  bool b_transposed = false;
  bool accumulate = false;
};

// T is float, double, std::complex<float> or std::complex<double>. `threads`: use ctx.pool
// (when it is safe, see the note) or run on the calling thread.
template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* c, const KernelContext& ctx, bool threads);

// Note [Small-M GEMM]
//   Products with few rows (an LSTM step's [16, K] x [K, N]) spend more in Eigen's packing of
//   all of B, and in its micro-kernel's padding of M, than in the product. SmallMGemm
//   (gemm_small.cc) packs only A (M x K, small, interleaved by k) and reads B in place: C is cut
//   into panels of 16 columns; for each, a register-blocked kernel keeps all M rows x 16 columns
//   in M vector accumulators and, per k, loads one vector of B's row and M broadcasts of A, so
//   B is read exactly once, with software prefetch a few rows ahead (B's row stride is often a
//   multiple of 4 KiB, which the hardware prefetchers do not follow). Panels are split across
//   threads; the last, partial panel goes through a zero-padded copy. A transposed B stays on
//   Eigen (its rows would need a transposing copy), and so does M = 1 (Eigen's GEMV streams B).
constexpr int64_t kSmallGemmMaxM = 16;
// Whether SmallMGemm takes this f32 shape (2 <= M <= kSmallGemmMaxM, N >= 16, B not transposed).
bool UseSmallMGemm(const GemmShape& s);
void SmallMGemm(const GemmShape& s, const float* a, const float* b, float* c,
                const KernelContext& ctx, bool threads);

// Integer GEMM with wrapping arithmetic in Acc (uint32_t or uint64_t): A and B hold the
// operand values already converted to Acc; C receives Acc values.
template <typename Acc>
void IntGemm(const GemmShape& s, const Acc* a, const Acc* b, Acc* c, const KernelContext& ctx,
             bool threads);

// Whether Eigen may use ctx.pool from this thread (see Note [Eigen threads]).
bool CanUsePool(const KernelContext& ctx);

}  // namespace kiln::cpu::internal
