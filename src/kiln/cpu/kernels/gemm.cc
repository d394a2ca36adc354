// GEMM through Eigen's tensor contraction on kiln's thread pool (see Note [Eigen threads]).
#define EIGEN_USE_THREADS
#include "kiln/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/conv_indirect.h"

namespace kiln::cpu::internal {
namespace {

// Eigen's thread-pool interface over the Eigen pool behind kiln's ThreadPool (the same workers
// as kiln's parallel loops), denormals flushed in every task (Note [Denormals in GEMMs]).
class EigenPoolAdapter final : public Eigen::ThreadPoolInterface {
 public:
  explicit EigenPoolAdapter(ThreadPool* pool) : pool_(pool->eigen_pool()) {}
  void Schedule(std::function<void()> fn) override {
    pool_->Schedule([fn = std::move(fn)] {
      ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
      fn();
    });
  }
  int NumThreads() const override { return pool_->NumThreads(); }
  int CurrentThreadId() const override { return pool_->CurrentThreadId(); }

 private:
  Eigen::ThreadPoolInterface* pool_;
};

// Note [Eigen's own pool for contractions]
//   Eigen's contraction cuts a mid-sized product into many short tasks with barriers between
//   them; on kiln's old ThreadPool (one mutex-guarded queue, workers sleeping on a condition
//   variable) every task paid a wake-up and the queue's lock. Measured on 16 cores (the H200
//   machine's host, bench/cpu, 2026-11-29): kiln/XLA gemm_f32_odd 3.43 -> 0.90, gemm_f32 1.97 ->
//   1.20, mlp_f32 3.57 -> 1.04 with contractions on an Eigen::ThreadPool (spinning,
//   work-stealing). kiln's ThreadPool is now itself an Eigen::ThreadPool (base/thread_pool.h),
//   so contractions run on its workers (ctx.pool->eigen_pool()): one set of threads for the
//   parallel loops and the GEMMs. CpuKernelOptions::gemm_separate_pool (flag
//   cpu_gemm_pool=separate) runs them on a second, process-wide Eigen::ThreadPool with as many
//   threads (the previous arrangement, for A/B).

// Eigen's interface over a process-wide Eigen::ThreadPool of `n` threads, denormals flushed in
// every task (Note [Denormals in GEMMs]).
class EigenOwnPool final : public Eigen::ThreadPoolInterface {
 public:
  explicit EigenOwnPool(int n) : pool_(n) {}
  void Schedule(std::function<void()> fn) override {
    pool_.Schedule([fn = std::move(fn)] {
      ScopedFlushDenormals flush;
      fn();
    });
  }
  int NumThreads() const override { return pool_.NumThreads(); }
  int CurrentThreadId() const override { return pool_.CurrentThreadId(); }

  static EigenOwnPool* Get(int n) {
    static std::mutex mu;
    static auto* pools = new std::map<int, std::unique_ptr<EigenOwnPool>>();  // never destroyed
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<EigenOwnPool>& p = (*pools)[n];
    if (!p) p = std::make_unique<EigenOwnPool>(n);
    return p.get();
  }

 private:
  Eigen::ThreadPool pool_;
};

}  // namespace

// Eigen's dense-matrix product on the calling thread for the block [m0, m1) x [n0, n1) of C:
// less per-call overhead than the tensor contraction for small products, and matrix-vector
// products as GEMV.
template <typename T>
void MatrixGemm(const GemmShape& s, const T* a, const T* b, T* c, int64_t m0, int64_t m1,
                int64_t n0, int64_t n1) {
  using Row = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Col = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using Stride = Eigen::OuterStride<>;
  const int64_t m = m1 - m0, n = n1 - n0;
  Eigen::Map<Row, 0, Stride> cm(c + m0 * s.n + n0, m, n, Stride(s.n));
  auto run = [&](const auto& am, const auto& bm) {
    if (s.accumulate) cm.noalias() += am * bm;
    else cm.noalias() = am * bm;
  };
  // A row-major [K, M] buffer is the column-major [M, K] matrix.
  auto with_b = [&](const auto& am) {
    if (s.b_transposed)
      run(am, Eigen::Map<const Col, 0, Stride>(b + n0 * s.k, s.k, n, Stride(s.k)));
    else
      run(am, Eigen::Map<const Row, 0, Stride>(b + n0, s.k, n, Stride(s.n)));
  };
  if (s.a_transposed)
    with_b(Eigen::Map<const Col, 0, Stride>(a + m0, m, s.k, Stride(s.m)));
  else
    with_b(Eigen::Map<const Row, 0, Stride>(a + m0 * s.k, m, s.k, Stride(s.k)));
}

// Products below this many multiply-adds run on the calling thread (MatrixGemm).
constexpr int64_t kSmallGemm = int64_t{1} << 18;

bool CanUsePool(const KernelContext& ctx) {
  return ctx.pool != nullptr && ctx.pool->num_threads() > 1 && !ctx.pool->InWorkerThread();
}

template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* c, const KernelContext& ctx,
          bool threads, const CpuKernelOptions& options) {
  if (s.m == 0 || s.n == 0) return;
  ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
  if (s.k == 0) {
    if (!s.accumulate) std::fill(c, c + s.m * s.n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (UseSmallMGemm(s)) {
      SmallMGemm(s, a, b, c, ctx, threads && CanUsePool(ctx));
      return;
    }
    // Multi-threaded products on kiln's driver (Note [Parallel GEMM driver]) where it beats
    // Eigen; single-threaded ones through the micro-kernel of conv_indirect.h (no packing of
    // A); the rest on Eigen's contraction (Note [Eigen's own pool for contractions]).
    // options.gemm_kiln_kernels false keeps f32 GEMMs on Eigen (A/B runs).
    const bool kiln_kernels = options.gemm_kiln_kernels;
    if (kiln_kernels && threads && CanUsePool(ctx) && ParallelGemmAvailable() &&
        UseParallelGemm(s, ctx.pool->num_threads())) {
      ParallelGemmF32(s, a, b, c, ctx, true);
      return;
    }
    if (kiln_kernels && DirectGemmF32Supported(s) && !(threads && CanUsePool(ctx))) {
      DirectGemmF32(s, a, b, c, ctx, false);
      return;
    }
  }
  if (!threads || !CanUsePool(ctx) || s.m * s.n * s.k < kSmallGemm) {
    MatrixGemm(s, a, b, c, 0, s.m, 0, s.n);
    return;
  }
  if (s.m == 1 || s.n == 1) {
    // Matrix-vector products (memory-bound): GEMVs on slices of the long dimension.
    const bool rows = s.n == 1;
    const int64_t len = rows ? s.m : s.n;
    ParallelFor(ctx, len, std::max<int64_t>(64, len / (4 * ctx.pool->num_threads())),
                [&](int64_t i0, int64_t i1) {
                  ScopedFlushDenormals flush;
                  if (rows) MatrixGemm(s, a, b, c, i0, i1, 0, 1);
                  else MatrixGemm(s, a, b, c, 0, 1, i0, i1);
                });
    return;
  }
  using Index = Eigen::Index;
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Index>> am(
      a, s.a_transposed ? s.k : s.m, s.a_transposed ? s.m : s.k);
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Index>> bm(
      b, s.b_transposed ? s.n : s.k, s.b_transposed ? s.k : s.n);
  Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Index>> cm(c, s.m, s.n);
  const Eigen::array<Eigen::IndexPair<Index>, 1> dims{
      {Eigen::IndexPair<Index>(s.a_transposed ? 0 : 1, s.b_transposed ? 1 : 0)}};
  EigenPoolAdapter adapter(ctx.pool);
  Eigen::ThreadPoolInterface* pool = &adapter;
  if (options.gemm_separate_pool) pool = EigenOwnPool::Get(ctx.pool->num_threads());
  Eigen::ThreadPoolDevice device(pool, ctx.pool->num_threads());
  if (s.accumulate) cm.device(device) += am.contract(bm, dims);
  else cm.device(device) = am.contract(bm, dims);
}

template void Gemm<float>(const GemmShape&, const float*, const float*, float*,
                          const KernelContext&, bool, const CpuKernelOptions&);
template void Gemm<double>(const GemmShape&, const double*, const double*, double*,
                           const KernelContext&, bool, const CpuKernelOptions&);
template void Gemm<std::complex<float>>(const GemmShape&, const std::complex<float>*,
                                        const std::complex<float>*, std::complex<float>*,
                                        const KernelContext&, bool, const CpuKernelOptions&);
template void Gemm<std::complex<double>>(const GemmShape&, const std::complex<double>*,
                                         const std::complex<double>*, std::complex<double>*,
                                         const KernelContext&, bool, const CpuKernelOptions&);

template <typename Acc>
void IntGemm(const GemmShape& s, const Acc* a, const Acc* b, Acc* c, const KernelContext& ctx,
             bool threads) {
  if (s.m == 0 || s.n == 0) return;
  // B as [K, N] rows.
  std::vector<Acc> bt;
  const Acc* brow = b;
  if (s.b_transposed) {
    bt.resize(s.k * s.n);
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t kk = 0; kk < s.k; ++kk) bt[kk * s.n + j] = b[j * s.k + kk];
    brow = bt.data();
  }
  auto rows = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      Acc* __restrict ci = c + i * s.n;
      if (!s.accumulate) std::fill(ci, ci + s.n, Acc(0));
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const Acc aik = s.a_transposed ? a[kk * s.m + i] : a[i * s.k + kk];
        if (aik == 0) continue;
        const Acc* __restrict bk = brow + kk * s.n;
        for (int64_t j = 0; j < s.n; ++j) ci[j] += aik * bk[j];
      }
    }
  };
  const int64_t work = std::max<int64_t>(1, s.n * s.k);
  ParallelFor(threads ? ctx : KernelContext{}, s.m, std::max<int64_t>(1, (1 << 16) / work), rows);
}

template void IntGemm<uint32_t>(const GemmShape&, const uint32_t*, const uint32_t*, uint32_t*,
                                const KernelContext&, bool);
template void IntGemm<uint64_t>(const GemmShape&, const uint64_t*, const uint64_t*, uint64_t*,
                                const KernelContext&, bool);

}  // namespace kiln::cpu::internal
