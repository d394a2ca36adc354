// kiln's parallel f32 GEMM driver (gemm.h, Note [Parallel GEMM driver]).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kiln/cpu/kernels/simd_f32.h"
#if defined(KILN_SIMD_F32)
#define KILN_PARALLEL_GEMM 1
#endif

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/gemm.h"

namespace kiln::cpu::internal {

#if defined(KILN_PARALLEL_GEMM)
namespace {

using namespace simd;  // kLanes, Vec, Zero, Load, Broadcast, Fma, Store, LoadN, StoreN

// C[MR, NV * kLanes] (+)= Ap[kc][MR] * Bp[kc][NV * kLanes], both operands packed (zero-padded
// past the matrix). Rows >= mr and columns >= ncols are computed but neither read nor stored.
// The full tile, in registers (Note [Register accumulators] in simd_f32.h).
template <int MR, int NV>
inline __attribute__((always_inline)) void FullTile(int64_t kc, const float* __restrict ap,
                                                    const float* __restrict bp, float* __restrict c,
                                                    int64_t ldc, bool acc_in) {
  constexpr int NR = NV * kLanes;
  Regs<MR * NV> acc;
  Unroll<MR * NV>([&](auto i) {
    Get<i>(acc) = acc_in ? Load(c + (i / NV) * ldc + (i % NV) * kLanes) : Zero();
  });
  for (int64_t k = 0; k < kc; ++k) {
    Regs<NV> b;
    Unroll<NV>([&](auto v) { Get<v>(b) = Load(bp + k * NR + v * kLanes); });
    Unroll<MR>([&](auto r) {
      const Vec a = Broadcast(ap + k * MR + r);
      Unroll<NV>([&](auto v) { Get<r * NV + v>(acc) = Fma(a, Get<v>(b), Get<r * NV + v>(acc)); });
    });
  }
  Unroll<MR * NV>([&](auto i) { Store(c + (i / NV) * ldc + (i % NV) * kLanes, Get<i>(acc)); });
}

template <int MR, int NV>
void MicroKernel(int64_t kc, const float* __restrict ap, const float* __restrict bp,
                 float* __restrict c, int64_t ldc, int mr, int ncols, bool acc_in) {
  constexpr int NR = NV * kLanes;
  if (mr == MR && ncols == NR) return FullTile<MR, NV>(kc, ap, bp, c, ldc, acc_in);
  // A partial tile through a full one on the stack (the partial loads and stores kept out of
  // the register tile's function body: with them GCC stored the accumulators every k).
  alignas(64) float tile[MR * NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) tile[r * NR + j] = acc_in && r < mr && j < ncols ? c[r * ldc + j] : 0.0f;
  FullTile<MR, NV>(kc, ap, bp, tile, NR, acc_in);
  for (int r = 0; r < mr; ++r) std::memcpy(c + r * ldc, tile + r * NR, ncols * sizeof(float));
}

using KernelFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int, int, bool);

struct Plan {
  int mr, nv;
  KernelFn fn;
};

// Register tiles by N (accumulators MR x NV plus NV vectors of B within the register file).
Plan ChoosePlan(int64_t n) {
  const int64_t vecs = (n + kLanes - 1) / kLanes;
#if defined(__AVX512F__)
  if (vecs >= 4) return {6, 4, &MicroKernel<6, 4>};
  if (vecs == 3) return {8, 3, &MicroKernel<8, 3>};
  if (vecs == 2) return {12, 2, &MicroKernel<12, 2>};
  return {12, 1, &MicroKernel<12, 1>};
#else
  if (vecs >= 2) return {6, 2, &MicroKernel<6, 2>};
  return {8, 1, &MicroKernel<8, 1>};
#endif
}

// A per-thread scratch buffer that grows and is kept for the next call (uninitialized floats);
// above kKeepFloats it is freed when the Scratch goes. One buffer per Slot and thread.
template <int Slot>
class Scratch {
 public:
  float* Get(int64_t n) {
    static thread_local std::unique_ptr<float[]> kept;
    static thread_local int64_t kept_size = 0;
    constexpr int64_t kKeepFloats = int64_t{4} << 20;  // 16 MiB
    if (n > kKeepFloats) {
      own_.reset(new float[n]);
      return own_.get();
    }
    if (kept_size < n) {
      kept.reset(new float[n]);
      kept_size = n;
    }
    return kept.get();
  }

 private:
  std::unique_ptr<float[]> own_;
};

// Runs fn(t) for every t in [0, n) on `workers` threads of ctx.pool (workers > 1; the caller
// is not one of the pool's workers): each pulls the next t from a shared counter until none is
// left, denormals flushed; the caller sleeps until all are done. Unlike ThreadPool::ParallelFor
// the calling thread does not compute: with as many workers as cores it would be a 17th thread
// on 16 cores, slowing whichever tasks share its core (Eigen's contraction also sleeps through
// its products), and one task per pull balances better than ParallelFor's chunks of ~n / 68.
template <class Fn>
void RunTasks(const KernelContext& ctx, int workers, int64_t n, const Fn& fn) {
  if (workers <= 1 || n <= 1) {
    for (int64_t t = 0; t < n; ++t) fn(t);
    return;
  }
  const int w = static_cast<int>(std::min<int64_t>(workers, n));
  std::atomic<int64_t> next{0};
  Eigen::Barrier done(static_cast<unsigned>(w));
  Eigen::ThreadPoolInterface* pool = ctx.pool->eigen_pool();
  for (int i = 0; i < w; ++i) {
    pool->Schedule([&] {
      ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
      for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n;
           t = next.fetch_add(1, std::memory_order_relaxed))
        fn(t);
      done.Notify();
    });
  }
  done.Wait();
}

// The partition of one product (Note [Parallel GEMM driver]).
struct Partition {
  Plan plan;
  int64_t nr = 0;                   // columns per panel
  int64_t m_tiles = 0, panels = 0;  // MR-row tiles and NR-column panels of C
  int64_t kc = 0, kblocks = 0;      // K blocks (all kc long except the last)
  int64_t mc_tiles = 0, nc_panels = 0;  // tiles and panels per task
  int64_t m_chunks = 0, n_chunks = 0;
  int64_t slices = 1;  // K slices (split-K)
};

Partition Choose(const GemmShape& s, int workers, int forced_slices) {
  Partition p;
  p.plan = ChoosePlan(s.n);
  p.nr = int64_t{p.plan.nv} * kLanes;
  const int64_t mr = p.plan.mr;
  p.m_tiles = (s.m + mr - 1) / mr;
  p.panels = (s.n + p.nr - 1) / p.nr;
  // K blocks: a panel's block (kc x NR floats) stays in L1 (~32 KiB) while the tiles of a task's
  // rows pass over it; blocks of equal length.
  const int64_t kc_max = std::clamp<int64_t>((32 * 1024) / (p.nr * 4), 64, 512);
  p.kblocks = (s.k + kc_max - 1) / kc_max;
  p.kc = (s.k + p.kblocks - 1) / p.kblocks;
  p.kblocks = (s.k + p.kc - 1) / p.kc;
  // Tasks (Note [Parallel GEMM driver]): a task of mc rows x nc columns over a K slice of kk
  // reads (mc + nc) kk values of A and B for mc nc kk multiply-adds, so blocks stay large and
  // squarish: at most 96 x 256 (its A and C blocks stay in L2), halved along the longer side
  // down to 96 x 128 while there are fewer than ~3 tasks per worker; then K split into slices
  // (of at least two K blocks, at most 8 slices); then blocks halved again down to 48 x 64.
  p.mc_tiles = std::min<int64_t>(p.m_tiles, std::max<int64_t>(1, 96 / mr));
  p.nc_panels = std::min<int64_t>(p.panels, std::max<int64_t>(1, 256 / p.nr));
  const int64_t target = workers > 1 ? 3 * int64_t{workers} : 1;
  auto mn = [&] {
    return ((p.m_tiles + p.mc_tiles - 1) / p.mc_tiles) *
           ((p.panels + p.nc_panels - 1) / p.nc_panels);
  };
  // Halves the longer side of the blocks down to min_rows x min_cols; false when both are there.
  auto shrink = [&](int64_t min_rows, int64_t min_cols) {
    const int64_t min_tiles = std::max<int64_t>(1, (min_rows + mr - 1) / mr);
    const int64_t min_panels = std::max<int64_t>(1, min_cols / p.nr);
    const bool can_n = p.nc_panels > min_panels, can_m = p.mc_tiles > min_tiles;
    if (can_n && (!can_m || p.nc_panels * p.nr >= p.mc_tiles * mr)) {
      p.nc_panels = std::max(min_panels, (p.nc_panels + 1) / 2);
    } else if (can_m) {
      p.mc_tiles = std::max(min_tiles, (p.mc_tiles + 1) / 2);
    } else {
      return false;
    }
    return true;
  };
  while (mn() < target && shrink(96, 128)) {
  }
  if (forced_slices > 0) {
    p.slices = std::min<int64_t>(forced_slices, p.kblocks);
  } else if (workers > 1 && mn() < target && p.kblocks >= 4) {
    p.slices = std::min<int64_t>({(target + mn() - 1) / mn(), p.kblocks / 2, 8});
  }
  while (mn() * p.slices < target && shrink(48, 64)) {
  }
  p.m_chunks = (p.m_tiles + p.mc_tiles - 1) / p.mc_tiles;
  p.n_chunks = (p.panels + p.nc_panels - 1) / p.nc_panels;
  return p;
}

}  // namespace

bool ParallelGemmAvailable() { return true; }

bool UseParallelGemm(const GemmShape& s, int workers) {
  // Measured on the device machine's 16 cores (bench/RESULTS.md, "Multi-threaded GEMM driver"):
  // the driver wins clearly only where Eigen's contraction cannot spread the product, a small C
  // with a long K (256 x 256 x 1024: 0.29-0.31 ms against Eigen's 0.51-0.70 ms, all transpose
  // forms); on bigger outputs it ties or loses (1024^3: 2.2 ms against 1.95 ms; 300 x 500 x
  // 700: 0.43 against 0.34; 256 x 512 x 2048: 0.86 against 0.75), and on small products its
  // phases' wake-ups cost more than the product (128 x 64 x 128: 48 us against 26 us).
  return workers > 1 && s.m >= 32 && s.n >= 32 && s.k >= 512 &&
         s.m * s.n <= (int64_t{1} << 16) && s.m * s.n * s.k >= (int64_t{1} << 24);
}

void ParallelGemmF32(const GemmShape& s, const float* a, const float* b, float* c,
                     const KernelContext& ctx, bool threads, int split_k) {
  if (s.m == 0 || s.n == 0) return;
  ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
  if (s.k == 0) {
    if (!s.accumulate) std::fill(c, c + s.m * s.n, 0.0f);
    return;
  }
  // From a worker of ctx.pool (or without one) everything runs on the calling thread.
  const int workers = threads && CanUsePool(ctx) ? NumThreads(ctx) : 1;
  const Partition p = Choose(s, workers, split_k);
  const int MR = p.plan.mr;
  const int64_t NR = p.nr, kc = p.kc, npad = p.panels * NR;

  // 1. A and B packed once, shared by all tasks. B: block kb (rows [kb*kc, kb*kc + kcb)) at
  //    kb*kc*npad, its panel j at + j*kcb*NR, [kcb][NR] with zeros past N. A: tile tl at
  //    tl*MR*K, its block kb at + kb*kc*MR, [kcb][MR] with zeros past M.
  Scratch<0> b_scratch;
  float* packed_b = b_scratch.Get(s.k * npad);
  Scratch<2> a_scratch;
  float* packed_a = a_scratch.Get(p.m_tiles * MR * s.k);
  const int64_t b_pieces = p.kblocks * p.panels;
  constexpr int64_t kTilesPerPiece = 2;
  const int64_t a_pieces = (p.m_tiles + kTilesPerPiece - 1) / kTilesPerPiece;
  RunTasks(ctx, workers, b_pieces + a_pieces, [&](int64_t t) {
    {
      if (t >= b_pieces) {
        const int64_t tile0 = (t - b_pieces) * kTilesPerPiece;
        const int64_t tile1 = std::min(p.m_tiles, tile0 + kTilesPerPiece);
        for (int64_t tl = tile0; tl < tile1; ++tl) {
          float* dst = packed_a + tl * MR * s.k;
          const int64_t r0 = tl * MR, nr = std::min<int64_t>(MR, s.m - r0);
          if (nr < MR) std::fill(dst, dst + MR * s.k, 0.0f);
          for (int64_t kb = 0; kb < p.kblocks; ++kb) {
            const int64_t k0 = kb * kc, kcb = std::min(kc, s.k - k0);
            float* d = dst + k0 * MR;
            if (!s.a_transposed) {
              for (int64_t r = 0; r < nr; ++r) {
                const float* src = a + (r0 + r) * s.k + k0;
                for (int64_t k = 0; k < kcb; ++k) d[k * MR + r] = src[k];
              }
            } else {
              for (int64_t k = 0; k < kcb; ++k) {
                const float* src = a + (k0 + k) * s.m + r0;
                for (int64_t r = 0; r < nr; ++r) d[k * MR + r] = src[r];
              }
            }
          }
        }
        return;
      }
      const int64_t kb = t / p.panels, j = t % p.panels;
      const int64_t k0 = kb * kc, kcb = std::min(kc, s.k - k0);
      const int64_t j0 = j * NR, nj = std::min(NR, s.n - j0);
      float* dst = packed_b + k0 * npad + j * kcb * NR;
      if (!s.b_transposed) {
        for (int64_t k = 0; k < kcb; ++k) {
          const float* src = b + (k0 + k) * s.n + j0;
          float* d = dst + k * NR;
          for (int64_t jj = 0; jj < nj; ++jj) d[jj] = src[jj];
          for (int64_t jj = nj; jj < NR; ++jj) d[jj] = 0.0f;
        }
      } else {
        // B is [N, K]: column j of the panel is a contiguous run of B's row j0 + j.
        if (nj < NR)
          for (int64_t k = 0; k < kcb; ++k) std::fill(dst + k * NR + nj, dst + (k + 1) * NR, 0.0f);
        for (int64_t jj = 0; jj < nj; ++jj) {
          const float* src = b + (j0 + jj) * s.k + k0;
          for (int64_t k = 0; k < kcb; ++k) dst[k * NR + jj] = src[k];
        }
      }
    }
  });

  // 2. Tasks (K slice, column chunk, row chunk), row chunks fastest: the tasks running side by
  //    side share the column chunk's panels of B. Slice 0 writes C (accumulating when the
  //    product does), slice q > 0 its partial buffer q - 1.
  Scratch<1> part_scratch;
  float* partial = p.slices > 1 ? part_scratch.Get((p.slices - 1) * s.m * s.n) : nullptr;
  const int64_t tasks = p.slices * p.n_chunks * p.m_chunks;
  RunTasks(ctx, workers, tasks, [&](int64_t t) {
    {
      const int64_t mch = t % p.m_chunks;
      const int64_t nch = (t / p.m_chunks) % p.n_chunks;
      const int64_t q = t / (p.m_chunks * p.n_chunks);
      const int64_t kb0 = q * p.kblocks / p.slices, kb1 = (q + 1) * p.kblocks / p.slices;
      float* out = q == 0 ? c : partial + (q - 1) * s.m * s.n;
      const int64_t tile0 = mch * p.mc_tiles, tile1 = std::min(p.m_tiles, tile0 + p.mc_tiles);
      const int64_t pan0 = nch * p.nc_panels, pan1 = std::min(p.panels, pan0 + p.nc_panels);
      for (int64_t kb = kb0; kb < kb1; ++kb) {
        const int64_t k0 = kb * kc, kcb = std::min(kc, s.k - k0);
        const bool acc = kb > kb0 || (q == 0 && s.accumulate);
        for (int64_t j = pan0; j < pan1; ++j) {
          const float* bp = packed_b + k0 * npad + j * kcb * NR;
          const int ncols = static_cast<int>(std::min(NR, s.n - j * NR));
          for (int64_t tl = tile0; tl < tile1; ++tl) {
            const int64_t r0 = tl * MR;
            const int mr = static_cast<int>(std::min<int64_t>(MR, s.m - r0));
            p.plan.fn(kcb, packed_a + tl * MR * s.k + k0 * MR, bp, out + r0 * s.n + j * NR, s.n,
                      mr, ncols, acc);
          }
        }
      }
    }
  });

  // 3. Split-K: C += the partial buffers, in slice order, rows split over the workers.
  if (p.slices > 1) {
    const int64_t total = s.m * s.n;
    constexpr int64_t kPiece = int64_t{1} << 14;
    RunTasks(ctx, workers, (total + kPiece - 1) / kPiece, [&](int64_t t) {
      const int64_t i0 = t * kPiece, i1 = std::min(total, i0 + kPiece);
      for (int64_t q = 1; q < p.slices; ++q) {
        const float* __restrict src = partial + (q - 1) * total;
        float* __restrict dst = c;
        for (int64_t i = i0; i < i1; ++i) dst[i] += src[i];
      }
    });
  }
}

#else  // no micro-kernel for this instruction set

bool ParallelGemmAvailable() { return false; }
bool UseParallelGemm(const GemmShape&, int) { return false; }
void ParallelGemmF32(const GemmShape&, const float*, const float*, float*, const KernelContext&,
                     bool, int) {}

#endif

}  // namespace kiln::cpu::internal
