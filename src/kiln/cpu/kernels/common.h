// Helpers shared by the CPU kernels (internal to src/kiln/cpu/kernels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/base/thread_pool.h"
#include "kiln/cpu/kernel.h"
#include "kiln/hlo/literal.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace kiln::cpu::internal {

// Runs fn(begin, end) over [0, n) on ctx.pool when there is one and the work is worth
// splitting (more than one chunk of `min_chunk`), else on the calling thread.
inline void ParallelFor(const KernelContext& ctx, int64_t n, int64_t min_chunk,
                        const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (ctx.pool == nullptr || n <= min_chunk || ctx.pool->num_threads() <= 1) {
    fn(0, n);
    return;
  }
  ctx.pool->ParallelFor(n, min_chunk, fn);
}

// Note [Parallel grain]
//   CpuKernelOptions::min_parallel_elements is read as an amount of work: elements times the
//   work per element of the kernel's program (ExprProgram::work_per_element: about one unit per
//   elementwise op, more for transcendentals). A kernel goes parallel when its total work is at
//   least 4x that, and splits it into chunks of at least a quarter of it, so that a 43-op fused
//   loop over 4096 elements (LSTM gates) uses several threads and a 128-KiB elementwise loop is
//   cut into enough chunks for 16 threads to balance (the pool takes ~4 chunks per thread) --
//   the old rule (a chunk of 32K elements whatever the op count) ran such kernels on 1-4 of 16
//   cores.
inline bool WorthParallel(const CpuKernelOptions& o, int64_t elements, int64_t work_per_element) {
  return elements * std::max<int64_t>(1, work_per_element) >= 4 * o.min_parallel_elements;
}
// Smallest number of elements worth one chunk of a parallel loop (at least 1).
inline int64_t MinChunkElements(const CpuKernelOptions& o, int64_t work_per_element) {
  return std::max<int64_t>(1, o.min_parallel_elements / (4 * std::max<int64_t>(1, work_per_element)));
}

// Note [Denormals in GEMMs]
//   A product with denormal operands runs ~100x slower on x86 (microcode assists on every
//   multiply-add that sees one): attention probabilities of a few 1e-39 made a batched dot of the
//   transformer block 150x slower than on normal numbers. XLA's CPU client runs everything with
//   denormals flushed to zero (FTZ and DAZ, as TensorFlow does); kiln's GEMMs (dot, convolution)
//   do the same while they run, on every thread that takes part, and leave the rest of the
//   program IEEE. The difference from the evaluator is of the size of a denormal times the other
//   factor.
class ScopedFlushDenormals {
 public:
#if defined(__SSE__)
  ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }  // FTZ | DAZ
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#else
  ScopedFlushDenormals() = default;
#endif
 public:
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;
};

// Number of threads a kernel may use (1 without a pool).
inline int NumThreads(const KernelContext& ctx) {
  return ctx.pool ? std::max(1, ctx.pool->num_threads()) : 1;
}

// The array leaves of `shape` in order (tuples flattened, tokens dropped).
std::vector<Shape> ArrayLeaves(const Shape& shape);

// A literal of `shape` (array, tuple or token) built from consecutive views starting at
// views[*next] (advanced past the leaves used).
StatusOr<Literal> LiteralFromViews(const Shape& shape, std::span<const ArrayView> views,
                                   size_t* next);

// Copies the array leaves of `literal` into consecutive views starting at views[*next].
Status LiteralToViews(const Literal& literal, std::span<const ArrayView> views, size_t* next);

// Checks that `views` match the array leaves of `shapes` (count, element type, dimensions).
Status CheckViews(std::string_view what, std::span<const ArrayView> views,
                  const std::vector<Shape>& leaves);

// Parallel memcpy of `bytes` bytes (no-op when dst == src).
void ParallelCopy(const KernelContext& ctx, void* dst, const void* src, int64_t bytes);

// "f32[8,16]" without layout.
inline std::string ShapeText(const Shape& s) { return s.ToString(false); }

}  // namespace kiln::cpu::internal
