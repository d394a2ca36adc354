// GEMM through Eigen's tensor contraction on kiln's thread pool (see Note [Eigen threads]).
#define EIGEN_USE_THREADS
#include "kiln/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <unsupported/Eigen/CXX11/Tensor>

#include "kiln/cpu/kernels/common.h"

namespace kiln::cpu::internal {
namespace {

// Eigen's thread-pool interface over kiln's ThreadPool.
class EigenPoolAdapter final : public Eigen::ThreadPoolInterface {
 public:
  explicit EigenPoolAdapter(ThreadPool* pool) : pool_(pool) {}
  void Schedule(std::function<void()> fn) override { pool_->Schedule(std::move(fn)); }
  int NumThreads() const override { return pool_->num_threads(); }
  // Eigen's contraction does not use thread ids; -1 ("not a pool thread") is always safe.
  int CurrentThreadId() const override { return -1; }

 private:
  ThreadPool* pool_;
};

}  // namespace

bool CanUsePool(const KernelContext& ctx) {
  return ctx.pool != nullptr && ctx.pool->num_threads() > 1 && !ctx.pool->InWorkerThread();
}

template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* c, const KernelContext& ctx,
          bool threads) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    std::fill(c, c + s.m * s.n, T(0));
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
  if (threads && CanUsePool(ctx)) {
    EigenPoolAdapter adapter(ctx.pool);
    Eigen::ThreadPoolDevice device(&adapter, ctx.pool->num_threads());
    cm.device(device) = am.contract(bm, dims);
  } else {
    cm = am.contract(bm, dims);
  }
}

template void Gemm<float>(const GemmShape&, const float*, const float*, float*,
                          const KernelContext&, bool);
template void Gemm<double>(const GemmShape&, const double*, const double*, double*,
                           const KernelContext&, bool);
template void Gemm<std::complex<float>>(const GemmShape&, const std::complex<float>*,
                                        const std::complex<float>*, std::complex<float>*,
                                        const KernelContext&, bool);
template void Gemm<std::complex<double>>(const GemmShape&, const std::complex<double>*,
                                         const std::complex<double>*, std::complex<double>*,
                                         const KernelContext&, bool);

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
      std::fill(ci, ci + s.n, Acc(0));
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
