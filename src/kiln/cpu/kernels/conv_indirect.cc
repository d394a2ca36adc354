// Indirect f32 convolution (Note [Indirect convolution] in conv_indirect.h).
#include "kiln/cpu/kernels/conv_indirect.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/cpu/kernels/simd_f32.h"
#if defined(KILN_SIMD_F32)
#define KILN_INDIRECT_CONV 1
#endif

#include "kiln/cpu/kernels/common.h"

namespace kiln::cpu::internal {

#if defined(KILN_INDIRECT_CONV)
namespace {

using namespace simd;  // kLanes, Vec, Zero, Load, Broadcast, Fma, Store, LoadN, StoreN
#if defined(__AVX512F__)
// Register budget (32 vector registers): MR x NV accumulators + NV kernel vectors + 1.
constexpr int kMaxNv = 4;
#else
// 16 vector registers.
constexpr int kMaxNv = 2;
#endif

// One MR x (NV * kLanes) output tile over taps [t0, t1) and features [c0, c1).
// ptrs[t * MR + r]: row r's input features for tap t (a zero row when the tap reads nothing).
// bp: the packed kernel panel, [taps][C][NV * kLanes]. Rows >= mr and columns >= ncols are
// computed but not stored. acc_in: add to the values already in `out`.
// The full tile, in registers (Note [Register accumulators] in simd_f32.h).
template <int MR, int NV>
inline __attribute__((always_inline)) void FullTile(const float* const* ptrs, int64_t t0, int64_t t1,
                                                    int64_t c0, int64_t c1, int64_t C,
                                                    const float* bp, float* out, int64_t ldo,
                                                    bool acc_in) {
  constexpr int NR = NV * kLanes;
  Regs<MR * NV> acc;
  Unroll<MR * NV>([&](auto i) {
    Get<i>(acc) = acc_in ? Load(out + (i / NV) * ldo + (i % NV) * kLanes) : Zero();
  });
  const int64_t nc = c1 - c0;
  for (int64_t t = t0; t < t1; ++t) {
    const float* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = ptrs[t * MR + r] + c0;
    const float* b = bp + (t * C + c0) * NR;
    for (int64_t c = 0; c < nc; ++c) {
      Regs<NV> bv;
      Unroll<NV>([&](auto v) { Get<v>(bv) = Load(b + c * NR + v * kLanes); });
      Unroll<MR>([&](auto r) {
        const Vec av = Broadcast(a[r] + c);
        Unroll<NV>([&](auto v) { Get<r * NV + v>(acc) = Fma(av, Get<v>(bv), Get<r * NV + v>(acc)); });
      });
    }
  }
  Unroll<MR * NV>([&](auto i) { Store(out + (i / NV) * ldo + (i % NV) * kLanes, Get<i>(acc)); });
}

template <int MR, int NV>
void Tile(const float* const* ptrs, int64_t t0, int64_t t1, int64_t c0, int64_t c1, int64_t C,
          const float* bp, float* out, int64_t ldo, int mr, int ncols, bool acc_in) {
  constexpr int NR = NV * kLanes;
  if (mr == MR && ncols == NR) return FullTile<MR, NV>(ptrs, t0, t1, c0, c1, C, bp, out, ldo, acc_in);
  // A partial tile through a full one on the stack (the partial loads and stores kept out of
  // the register tile's function body: with them GCC stored the accumulators every k).
  alignas(64) float tile[MR * NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) tile[r * NR + j] = acc_in && r < mr && j < ncols ? out[r * ldo + j] : 0.0f;
  FullTile<MR, NV>(ptrs, t0, t1, c0, c1, C, bp, tile, NR, acc_in);
  for (int r = 0; r < mr; ++r) std::memcpy(out + r * ldo, tile + r * NR, ncols * sizeof(float));
}

using TileFn = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, int64_t,
                        const float*, float*, int64_t, int, int, bool);

struct Plan {
  int mr, nv;
  TileFn fn;
};

Plan ChoosePlan(int64_t out_features) {
  const int64_t vecs = (out_features + kLanes - 1) / kLanes;
#if defined(__AVX512F__)
  if (vecs >= 4) return {6, 4, &Tile<6, 4>};
  if (vecs == 3) return {8, 3, &Tile<8, 3>};
  if (vecs == 2) return {12, 2, &Tile<12, 2>};
  return {12, 1, &Tile<12, 1>};
#else
  if (vecs >= 2) return {6, 2, &Tile<6, 2>};
  return {8, 1, &Tile<8, 1>};
#endif
}

// The kernel matrix [K = taps * C, O] (row-major, or [O, K] when `transposed`) in panels of NR
// columns: [panel][k][NR], zero-padded past O.
std::vector<float> PackPanels(const float* kern, int64_t K, int64_t O, int64_t NR,
                              bool transposed) {
  const int64_t panels = (O + NR - 1) / NR;
  std::vector<float> packed(panels * K * NR, 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j0 = p * NR, nj = std::min(NR, O - j0);
    float* dst = &packed[p * K * NR];
    if (!transposed) {
      for (int64_t kc = 0; kc < K; ++kc)
        std::memcpy(dst + kc * NR, kern + kc * O + j0, nj * sizeof(float));
    } else {
      for (int64_t j = 0; j < nj; ++j) {
        const float* src = kern + (j0 + j) * K;
        for (int64_t kc = 0; kc < K; ++kc) dst[kc * NR + j] = src[kc];
      }
    }
  }
  return packed;
}

// The blocked loops around the micro-kernel, shared by convolutions and GEMMs: rows in chunks
// of whole tiles (split over the pool), then panels, K blocks, tiles. fill(tile0, tile1, ptrs)
// writes the pointer table [tile][tap][MR] of a chunk. `accumulate`: the first K block adds to
// `out` too.
template <class Fill>
void Drive(const Plan& plan, int64_t rows, int64_t taps, int64_t C, int64_t O,
           const float* packed, float* out, int64_t ldo, bool accumulate,
           const KernelContext& ctx, bool threads, const Fill& fill) {
  const int MR = plan.mr;
  const int64_t NR = int64_t{plan.nv} * kLanes;
  const int64_t panels = (O + NR - 1) / NR;
  // K blocks: whole taps while a block of the packed panel fits ~32 KiB (L1), else one tap's
  // features in slices of that size.
  constexpr int64_t kBlockBytes = 32 * 1024;
  const int64_t tap_bytes = C * NR * int64_t{sizeof(float)};
  const int64_t taps_per_block = std::max<int64_t>(1, kBlockBytes / tap_bytes);
  const int64_t c_block = tap_bytes <= kBlockBytes
                              ? C
                              : std::max<int64_t>(16, kBlockBytes / (NR * int64_t{sizeof(float)}));
  struct KBlock {
    int64_t t0, t1, c0, c1;
  };
  std::vector<KBlock> kblocks;
  if (c_block >= C) {
    for (int64_t t = 0; t < taps; t += taps_per_block)
      kblocks.push_back({t, std::min(taps, t + taps_per_block), 0, C});
  } else {
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < C; c += c_block)
        kblocks.push_back({t, t + 1, c, std::min(C, c + c_block)});
  }
  // Tasks: (panel, chunk of rows) pairs, panel-major, so that consecutive tasks (and the
  // threads working side by side) share one panel of the packed kernel in L2 while the chunks'
  // rows come and go. A chunk is whole tiles, ~96 rows (its inputs and outputs stay in L2 while
  // the K blocks pass over them), fewer when that leaves threads idle.
  const int nthreads = threads ? NumThreads(ctx) : 1;
  const int64_t tiles = (rows + MR - 1) / MR;
  int64_t tiles_per_chunk = std::max<int64_t>(1, 96 / MR);
  if (nthreads > 1)
    tiles_per_chunk =
        std::clamp<int64_t>(tiles * panels / (4 * int64_t{nthreads}), 1, tiles_per_chunk);
  const int64_t chunks = (tiles + tiles_per_chunk - 1) / tiles_per_chunk;
  auto task = [&](int64_t t0, int64_t t1) {
    ScopedFlushDenormals flush;  // Note [Denormals in GEMMs]
    std::vector<const float*> ptrs(tiles_per_chunk * taps * MR);
    int64_t filled = -1;  // the chunk whose pointers are in ptrs
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = t / chunks, ch = t % chunks;
      const int64_t tile0 = ch * tiles_per_chunk;
      const int64_t tile1 = std::min(tiles, tile0 + tiles_per_chunk);
      if (filled != ch) {
        fill(tile0, tile1, ptrs.data());
        filled = ch;
      }
      const float* bp = packed + p * taps * C * NR;
      const int ncols = static_cast<int>(std::min(NR, O - p * NR));
      for (size_t kb = 0; kb < kblocks.size(); ++kb) {
        const KBlock& b = kblocks[kb];
        for (int64_t tl = tile0; tl < tile1; ++tl) {
          const int64_t r0 = tl * MR;
          const int mr = static_cast<int>(std::min<int64_t>(MR, rows - r0));
          plan.fn(&ptrs[(tl - tile0) * taps * MR], b.t0, b.t1, b.c0, b.c1, C, bp,
                  out + r0 * ldo + p * NR, ldo, mr, ncols, accumulate || kb > 0);
        }
      }
    }
  };
  const int64_t tasks = panels * chunks;
  if (nthreads > 1 && tasks > 1) {
    ParallelFor(ctx, tasks, 1, task);
  } else {
    task(0, tasks);
  }
}

}  // namespace

bool IndirectConvAvailable() { return true; }

bool IndirectConvWorthIt(const IndirectConvGeometry& g) {
  return g.channels >= 16 && g.out_features >= kLanes && g.channels == g.in_stride &&
         g.pos != nullptr;
}

void IndirectConvF32(const IndirectConvGeometry& g, const float* in, const float* kern,
                     float* out, const KernelContext& ctx, bool threads) {
  const int64_t nsp = static_cast<int64_t>(g.in_sp.size());
  const int64_t C = g.channels, O = g.out_features;
  int64_t in_spatial = 1, taps = 1, out_spatial = 1;
  for (int64_t i = 0; i < nsp; ++i) {
    in_spatial *= g.in_sp[i];
    taps *= g.k_sp[i];
    out_spatial *= g.out_sp[i];
  }
  const int64_t rows = g.batch * out_spatial;
  if (rows == 0 || O == 0) return;
  if (taps == 0 || C == 0) {
    std::fill(out, out + rows * O, 0.0f);
    return;
  }
  const Plan plan = ChoosePlan(O);
  const int MR = plan.mr;
  const std::vector<float> packed =
      PackPanels(kern, taps * C, O, int64_t{plan.nv} * kLanes, false);
  const std::vector<float> zeros(C, 0.0f);
  // Input strides of the canonical input (in positions).
  std::vector<int64_t> in_str(nsp, 1);
  for (int64_t i = nsp - 1; i > 0; --i) in_str[i - 1] = in_str[i] * g.in_sp[i];
  const std::vector<std::vector<int64_t>>& pos = *g.pos;
  auto fill = [&](int64_t tile0, int64_t tile1, const float** ptrs) {
    std::vector<int64_t> x(nsp), k(nsp);
    for (int64_t tl = tile0; tl < tile1; ++tl) {
      const float** tp = ptrs + (tl - tile0) * taps * MR;
      for (int r = 0; r < MR; ++r) {
        const int64_t row = tl * MR + r;
        if (row >= rows) {
          for (int64_t t = 0; t < taps; ++t) tp[t * MR + r] = zeros.data();
          continue;
        }
        const int64_t n = row / out_spatial;
        int64_t rem = row % out_spatial;
        for (int64_t i = nsp - 1; i >= 0; --i) {
          x[i] = rem % g.out_sp[i];
          rem /= g.out_sp[i];
        }
        std::fill(k.begin(), k.end(), 0);
        const float* base = in + n * in_spatial * g.in_stride;
        for (int64_t t = 0; t < taps; ++t) {
          int64_t off = 0;
          bool ok = true;
          for (int64_t i = 0; i < nsp; ++i) {
            const int64_t p = pos[i][x[i] * g.k_sp[i] + k[i]];
            if (p < 0) {
              ok = false;
              break;
            }
            off += p * in_str[i];
          }
          tp[t * MR + r] = ok ? base + off * g.in_stride : zeros.data();
          for (int64_t i = nsp - 1; i >= 0; --i) {
            if (++k[i] < g.k_sp[i]) break;
            k[i] = 0;
          }
        }
      }
    }
  };
  Drive(plan, rows, taps, C, O, packed.data(), out, O, false, ctx, threads, fill);
}

bool DirectGemmF32Supported(const GemmShape& s) {
  // Measured single-threaded against Eigen's product (bench/cpu, 2026-11-29): faster when B is
  // row-major and at most ~1 MiB (transformer_f32 -8%), slower with a transposed B (packing is
  // a transposing gather) and with big B (mlp_f32's 4 MiB weights: A's rows 8 KiB apart
  // and B panels streamed from L3; Eigen's blocking does better there). M >= 64 amortizes
  // packing B.
  return !s.a_transposed && !s.b_transposed && s.k >= 16 && s.n >= kLanes && s.m >= 64 &&
         s.k * s.n <= (int64_t{1} << 18);
}

void DirectGemmF32(const GemmShape& s, const float* a, const float* b, float* c,
                   const KernelContext& ctx, bool threads) {
  const Plan plan = ChoosePlan(s.n);
  const int MR = plan.mr;
  const std::vector<float> packed =
      PackPanels(b, s.k, s.n, int64_t{plan.nv} * kLanes, s.b_transposed);
  const std::vector<float> zeros(s.k, 0.0f);
  auto fill = [&](int64_t tile0, int64_t tile1, const float** ptrs) {
    for (int64_t tl = tile0; tl < tile1; ++tl)
      for (int r = 0; r < MR; ++r) {
        const int64_t row = tl * MR + r;
        ptrs[(tl - tile0) * MR + r] = row < s.m ? a + row * s.k : zeros.data();
      }
  };
  Drive(plan, s.m, 1, s.k, s.n, packed.data(), c, s.n, s.accumulate, ctx, threads, fill);
}

#else  // no micro-kernel for this instruction set

bool IndirectConvAvailable() { return false; }
bool IndirectConvWorthIt(const IndirectConvGeometry&) { return false; }
void IndirectConvF32(const IndirectConvGeometry&, const float*, const float*, float*,
                     const KernelContext&, bool) {}
bool DirectGemmF32Supported(const GemmShape&) { return false; }
void DirectGemmF32(const GemmShape&, const float*, const float*, float*, const KernelContext&,
                   bool) {}

#endif

}  // namespace kiln::cpu::internal
