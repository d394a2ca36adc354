// Small-M f32 GEMM (see gemm.h, Note [Small-M GEMM]).
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <cstring>
#include <vector>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/simd_f32.h"

namespace kiln::cpu::internal {
namespace {

// 16 f32 lanes (GCC/Clang vector extension: one zmm with AVX-512, two ymm with AVX2, ...).
using V = float __attribute__((vector_size(64)));
constexpr int kLanes = 16;
// Rows of C a micro-kernel keeps in registers: 16 one-register accumulators with AVX-512's 32
// zmm registers; without AVX-512 a V is two ymm registers of the 16 there are, so 6 rows (12
// accumulators, B's two halves and a broadcast), the classic 6x16 AVX2 tile -- 16 rows spilled
// the accumulators on every k (an LSTM step's 16x256x768 product ran at ~10 GFLOP/s on two
// AVX2 cores). Groups of more rows read B once per group.
#if defined(__AVX512F__)
constexpr int kMR = 16;
#else
constexpr int kMR = 6;
#endif
// Whether MicroKernel writes the B panel it reads to `pack` (the AVX2 kernel; the generic one
// serves one group of kMR rows, or builds without AVX2, and ignores it).
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
constexpr bool kPacksB = true;
#else
constexpr bool kPacksB = false;
#endif
constexpr int64_t kPrefetchRows = 8;  // most rows of a C tile: 16 accumulators of one vector each

// C[MR, 16] (+)= Ap[k][MR] * Bp[k][16 of ldb]. Ap holds the MR rows of A interleaved by k;
// each k reads one vector of B and MR broadcasts of A for MR multiply-adds. `pack`, when not
// null, receives the 16 columns of B read ([k][16], 64-byte aligned): the panel for the next
// row groups (see SmallMGemm).
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
// AVX2: the 16 columns as two ymm halves, written out (GCC lowers a 64-byte generic vector's
// loads and stores through general registers and the stack without AVX-512: ~7 GFLOP/s), the
// 2 MR accumulators in registers (Note [Register accumulators] in simd_f32.h: as an array GCC
// stored them to the stack on every k, ~30 of the core's ~90 GFLOP/s).
template <int MR>
void MicroKernel(int64_t k, const float* __restrict ap, const float* __restrict bp, int64_t ldb,
                 float* __restrict c, int64_t ldc, bool accumulate, float* __restrict pack) {
  using simd::Get;
  using simd::Unroll;
  simd::Regs<2 * MR> acc;
  Unroll<2 * MR>([&](auto i) {
    Get<i>(acc) = accumulate ? _mm256_loadu_ps(c + (i / 2) * ldc + (i % 2) * 8) : _mm256_setzero_ps();
  });
  auto step = [&](int64_t kk, __m256 b0, __m256 b1) __attribute__((always_inline)) {
    Unroll<MR>([&](auto r) {
      const __m256 a = _mm256_broadcast_ss(ap + kk * MR + r);
      Get<2 * r>(acc) = _mm256_fmadd_ps(a, b0, Get<2 * r>(acc));
      Get<2 * r + 1>(acc) = _mm256_fmadd_ps(a, b1, Get<2 * r + 1>(acc));
    });
  };
  if (pack) {
    for (int64_t kk = 0; kk < k; ++kk) {
      __builtin_prefetch(bp + (kk + kPrefetchRows) * ldb);
      const __m256 b0 = _mm256_loadu_ps(bp + kk * ldb), b1 = _mm256_loadu_ps(bp + kk * ldb + 8);
      _mm256_store_ps(pack + kk * kLanes, b0);
      _mm256_store_ps(pack + kk * kLanes + 8, b1);
      step(kk, b0, b1);
    }
  } else {
    for (int64_t kk = 0; kk < k; ++kk) {
      __builtin_prefetch(bp + (kk + kPrefetchRows) * ldb);
      step(kk, _mm256_loadu_ps(bp + kk * ldb), _mm256_loadu_ps(bp + kk * ldb + 8));
    }
  }
  Unroll<2 * MR>([&](auto i) { _mm256_storeu_ps(c + (i / 2) * ldc + (i % 2) * 8, Get<i>(acc)); });
}
#else
inline V Load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
inline void Store(float* p, V v) { std::memcpy(p, &v, sizeof(V)); }
inline V Splat(float s) {
#if defined(__AVX512F__)
  return _mm512_set1_ps(s);
#else
  return s - V{};  // s - 0 is s for every s (V{} + s would turn -0 into +0)
#endif
}
inline V Fma(V a, V b, V c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}

template <int MR>
void MicroKernel(int64_t k, const float* __restrict ap, const float* __restrict bp, int64_t ldb,
                 float* __restrict c, int64_t ldc, bool accumulate, float* __restrict pack) {
  (void)pack;  // one group of kMR rows here: B is read once
  V r[MR];
  for (int i = 0; i < MR; ++i) r[i] = accumulate ? Load(c + i * ldc) : V{};
  for (int64_t kk = 0; kk < k; ++kk) {
    // B's rows are ldb apart (often a multiple of 4 KiB): the hardware prefetchers do not
    // follow, so fetch a few rows ahead.
    __builtin_prefetch(bp + (kk + kPrefetchRows) * ldb);
    const V b = Load(bp + kk * ldb);
    for (int i = 0; i < MR; ++i) r[i] = Fma(Splat(ap[kk * MR + i]), b, r[i]);
  }
  for (int i = 0; i < MR; ++i) Store(c + i * ldc, r[i]);
}
#endif

using MicroFn = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, bool, float*);
template <size_t... I>
constexpr std::array<MicroFn, sizeof...(I)> MicroTable(std::index_sequence<I...>) {
  return {(I == 0 ? nullptr : &MicroKernel<static_cast<int>(I)>)...};
}
constexpr std::array<MicroFn, kMR + 1> kMicro = MicroTable(std::make_index_sequence<kMR + 1>{});

}  // namespace

bool UseSmallMGemm(const GemmShape& s) {
  return s.m >= 2 && s.m <= kSmallGemmMaxM && s.n >= kLanes && s.k >= 4 && !s.b_transposed;
}

// Per-thread scratch kept between calls (the loop body of an RNN runs this every step): at
// least n floats, 64-byte aligned. Slot 0: packed A (calling thread), 1: a B panel (each task).
float* Scratch(int slot, int64_t n) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < n + 16) b.resize(static_cast<size_t>(n + 16));
  const uintptr_t p = reinterpret_cast<uintptr_t>(b.data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
}

void SmallMGemm(const GemmShape& s, const float* a, const float* b, float* c,
                const KernelContext& ctx, bool threads) {
  const int64_t m = s.m, n = s.n, k = s.k;
  // Row groups of at most kMR rows (two even ones above kMR), A packed per group as [k][rows].
  const int64_t groups = (m + kMR - 1) / kMR, per_group = (m + groups - 1) / groups;
  float* ap = Scratch(0, m * k);
  for (int64_t g0 = 0; g0 < m; g0 += per_group) {
    const int64_t mr = std::min<int64_t>(per_group, m - g0);
    float* dst = ap + g0 * k;
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t i = 0; i < mr; ++i)
        dst[kk * mr + i] = s.a_transposed ? a[kk * m + g0 + i] : a[(g0 + i) * k + kk];
  }
  // Panels of 16 columns, the first `lead` columns apart: when B's rows are all 64-byte aligned
  // alike (n a multiple of 16), full panels then start on a cache line, so no vector load of B
  // splits two lines (a B 16 bytes off a line made the whole product ~40% slower). The columns
  // before `lead` and after the last full panel are partial panels.
  int64_t lead = 0;
  if (n % kLanes == 0) {
    const int64_t off = static_cast<int64_t>(reinterpret_cast<uintptr_t>(b) % 64);
    if (off % sizeof(float) == 0) lead = ((64 - off) % 64) / static_cast<int64_t>(sizeof(float));
  }
  const int64_t full = (n - lead) / kLanes;
  const int64_t panels = full + (lead > 0) + ((n - lead) % kLanes > 0);
  // A panel is 2*m*16*k flops; tasks of at least ~1M flops.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 20) / (2 * m * kLanes * k));
  // With several row groups, the first reads the panel's B rows (ldb apart: in L2 or L3, and
  // with a row stride of 4 KiB all in one L1 set) and copies them into a [k][16] panel that
  // the other groups read from L1 (16x256x1024 on one Zen 3 core: 37 -> 63 GFLOP/s).
  const bool pack_b = kPacksB && groups > 1;
  ParallelFor(threads ? ctx : KernelContext{}, panels, min_chunk, [&](int64_t p0, int64_t p1) {
    ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
    float* panel = Scratch(1, k * kLanes);
    for (int64_t p = p0; p < p1; ++p) {
      // Panel p: the lead panel [0, lead) first when there is one, then full ones, then the tail.
      int64_t j0, nc;
      const int64_t q = lead > 0 ? p - 1 : p;
      if (q < 0) {
        j0 = 0;
        nc = lead;
      } else {
        j0 = lead + q * kLanes;
        nc = std::min<int64_t>(kLanes, n - j0);
      }
      if (nc == kLanes) {
        // B read in place: one vector per k, each used by every row of the group.
        for (int64_t g0 = 0; g0 < m; g0 += per_group) {
          const int64_t mr = std::min<int64_t>(per_group, m - g0);
          const bool first = g0 == 0;
          if (!pack_b || first)
            kMicro[mr](k, ap + g0 * k, b + j0, n, c + g0 * n + j0, n, s.accumulate, pack_b ? panel : nullptr);
          else
            kMicro[mr](k, ap + g0 * k, panel, kLanes, c + g0 * n + j0, n, s.accumulate, nullptr);
        }
        continue;
      }
      // A partial panel: B's columns copied into a zero-padded [k][16] panel, C through a tile.
      std::fill(panel, panel + k * kLanes, 0.0f);
      for (int64_t kk = 0; kk < k; ++kk)
        std::memcpy(&panel[kk * kLanes], b + kk * n + j0, nc * sizeof(float));
      float tile[kMR * kLanes];
      for (int64_t g0 = 0; g0 < m; g0 += per_group) {
        const int64_t mr = std::min<int64_t>(per_group, m - g0);
        float* cg = c + g0 * n + j0;
        for (int64_t i = 0; i < mr; ++i)
          for (int64_t j = 0; j < kLanes; ++j)
            tile[i * kLanes + j] = s.accumulate && j < nc ? cg[i * n + j] : 0.0f;
        kMicro[mr](k, ap + g0 * k, panel, kLanes, tile, kLanes, true, nullptr);
        for (int64_t i = 0; i < mr; ++i) std::memcpy(cg + i * n, tile + i * kLanes, nc * sizeof(float));
      }
    }
  });
}

}  // namespace kiln::cpu::internal
