// Matrix multiplication for the dot and convolution kernels (internal to src/kiln/cpu/kernels):
// Eigen's tensor contraction (its GEBP kernel, as XLA's CPU runtime uses) for f32, f64, c64 and
// c128, kiln's own f32 kernels where they measured faster (small M, single-threaded products,
// and the parallel driver of Note [Parallel GEMM driver]), and a blocked loop for integers.
//
// Note [Eigen threads]
//   Eigen's contraction runs on the Eigen::ThreadPool behind ctx.pool (ctx.pool->eigen_pool():
//   the same workers as kiln's parallel loops; Note [Eigen's own pool for contractions] in
//   gemm.cc), or with CpuKernelOptions::gemm_separate_pool (flag cpu_gemm_pool=separate) on a
//   second, process-wide Eigen::ThreadPool as large. Either way it is only used when ctx.pool may be. Eigen's contraction
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
// (when it is safe, see the note) or run on the calling thread. `options`: the kernel's
// (gemm_kiln_kernels, gemm_separate_pool).
template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* c, const KernelContext& ctx, bool threads,
          const CpuKernelOptions& options);

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

// Note [Parallel GEMM driver]
//   kiln's own multi-threaded f32 GEMM (gemm_parallel.cc), around a register-blocked
//   micro-kernel: MR rows x NR = 16 * NV columns of C in vector accumulators; per k, NV vectors of
//   packed B and MR broadcasts of packed A (6 x 64 with AVX-512 when N >= 64, taller and
//   narrower tiles for narrow C; AVX2 builds use 8-lane vectors). Three phases, each a set of
//   tasks that ctx.pool's workers pull from a shared counter while the calling thread sleeps
//   (it would be a 17th thread on 16 cores); from a pool worker, or with `threads` false,
//   everything runs on the calling thread (Note [Eigen threads]: a worker never waits for
//   other workers).
//   1. Packing, in parallel: B into a buffer shared by all tasks (a per-thread scratch of the
//      calling thread, kept between calls up to 16 MiB): K cut into blocks of kc rows (one
//      panel's block, kc x NR floats, fits ~32 KiB of L1), N into panels of NR columns
//      zero-padded past N; block-major, then panel-major, [kc][NR] inside. A likewise into
//      [tile of MR rows][K] with [kc][MR] per block, zeros past M. Transposed operands are
//      gathered here, so the compute phase sees one layout.
//   2. C partitioned in 2D into tasks of whole tiles x whole panels. A task of mc x nc over a K
//      slice of length kk reads (mc + nc) kk values for mc nc kk multiply-adds, so blocks start
//      at 96 x 256 and are halved along the longer side down to 96 x 128 while there are fewer
//      than ~3 tasks per worker; if still too few, K is split into up to 8 slices of at least
//      two blocks (split-K): slice 0 writes C itself, slice q > 0 a partial M x N buffer of its
//      own (calling thread's scratch); then blocks are halved again down to 48 x 64. Each C
//      value of a slice is written by one task alone.
//   3. With split-K, C += the partial buffers, in slice order, elements split over the workers.
//   `accumulate` is honoured by slice 0's first K block (C loaded into the accumulators). The
//   sum order over K differs from Eigen's (blocks of kc, and slices): f32 rounding, not
//   semantics. Denormals are flushed on every thread that takes part (Note [Denormals in
//   GEMMs]). Gemm<float> takes a multi-threaded product here only where UseParallelGemm says
//   it beats Eigen's contraction (measured on 16 cores, bench/RESULTS.md: small C with long K);
//   CpuKernelOptions::gemm_kiln_kernels false (flag cpu_gemm_kernel=eigen) keeps f32 GEMMs off
//   it (A/B runs). ParallelGemmAvailable() is false
//   without AVX-512 or AVX2+FMA.
bool ParallelGemmAvailable();
// Whether the driver should take this f32 product with `workers` threads.
bool UseParallelGemm(const GemmShape& s, int workers);
// C (+)= op(A) op(B) on the driver; `split_k` > 0 forces that many K slices (at most one per K
// block; tests), 0 chooses. Uses ctx.pool when `threads` and CanUsePool(ctx); else (called
// from one of the pool's workers, say) runs on the calling thread.
void ParallelGemmF32(const GemmShape& s, const float* a, const float* b, float* c,
                     const KernelContext& ctx, bool threads, int split_k = 0);

// Integer GEMM with wrapping arithmetic in Acc (uint32_t or uint64_t): A and B hold the
// operand values already converted to Acc; C receives Acc values.
template <typename Acc>
void IntGemm(const GemmShape& s, const Acc* a, const Acc* b, Acc* c, const KernelContext& ctx,
             bool threads);

// Whether Eigen may use ctx.pool from this thread (see Note [Eigen threads]).
bool CanUsePool(const KernelContext& ctx);

}  // namespace kiln::cpu::internal
