// CUDA C++ source of the flash-attention forward kernel (attention.h says what it computes),
// compiled by NVRTC once per configuration through these macros:
//   KILN_D       head dimension (64 or 128)
//   KILN_WARPS   warps per block
//   KILN_MT      m16 tiles of query rows per warp (1 or 2): a warp owns 16*KILN_MT rows
//   KILN_BN      k/v rows per tile (64 or 128)
//   KILN_F16     1: f16 inputs, 0: bf16
//   KILN_BIAS    0: no bias; an additive bias of 1: f32, 2: bf16, 3: f16
//   KILN_MASK    1: a data mask (pred bytes); dropped scores are the fill, no tile is skipped
// With a bias or a data mask the softmax runs on x = scale*s + bias_scale*bias in natural units
// (exp2 of (x - max) * log2 e), so that a fill of -2.4e38 stays finite until the subtraction;
// otherwise on the raw scores with the scale folded into one FFMA.
//
// Fragment layouts are those of mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
// with g = lane / 4 and t = lane % 4, an A fragment holds rows g and g+8, columns 2t, 2t+1 and
// 2t+8, 2t+9; a B fragment k rows 2t, 2t+1 and 2t+8, 2t+9 of column g; the f32 accumulator rows
// g and g+8, columns 2t, 2t+1. The accumulator of s = q·kᵀ over two n8 tiles is exactly the A
// fragment of p for the next product, so p never leaves registers. Shared-memory tiles are
// [rows][D] with 16-byte chunks XOR-swizzled by (row % 8): the eight rows an ldmatrix phase reads
// fall in eight different bank groups.
#include "kiln/cuda/libs/attention.h"

namespace kiln::cuda::libs {

const char* AttentionKernelSource() {
  return R"cuda(
#define D KILN_D
#define MT KILN_MT
#define BM (16 * MT * KILN_WARPS)
#define BN KILN_BN
#define NT (32 * KILN_WARPS)
#define NEG_INF __int_as_float(0xff800000)
typedef unsigned short elem_t;
typedef unsigned int u32;

struct AttentionParams {
  const elem_t* q;
  const elem_t* k;
  const elem_t* v;
  elem_t* o;
  long long q_batch[3], k_batch[3], v_batch[3], o_batch[3];
  long long q_row, k_row, v_row, o_row;
  long long causal_offset;
  int nb1, nb2;  // sizes of batch dims 1 and 2 (dim 0 is the rest)
  int q_len, kv_len;
  float scale_log2;  // scale * log2(e)
  int causal;
  const void* bias;
  const unsigned char* mask;
  long long bias_batch[3], mask_batch[3];
  long long bias_row, bias_col, mask_row, mask_col;
  float scale, bias_scale, mask_fill;
};

#ifndef KILN_BIAS
#define KILN_BIAS 0
#endif
#ifndef KILN_MASK
#define KILN_MASK 0
#endif
#define KILN_EXTRA (KILN_BIAS != 0 || KILN_MASK != 0)
#define L2E 1.4426950408889634f

#if KILN_BIAS
__device__ __forceinline__ float load_bias(const void* base, long long at) {
#if KILN_BIAS == 1
  return reinterpret_cast<const float*>(base)[at];
#elif KILN_BIAS == 2
  return __uint_as_float(((u32)reinterpret_cast<const unsigned short*>(base)[at]) << 16);
#else
  float r;
  const unsigned short h = reinterpret_cast<const unsigned short*>(base)[at];
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(r) : "h"(h));
  return r;
#endif
}
#endif

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return (u32)__cvta_generic_to_shared(p);
}

// Element offset of (row, col) in a swizzled [rows][D] tile.
__device__ __forceinline__ int swz(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies rows [0, valid) of a [R][D] tile from global memory (rows `row_stride` elements apart)
// into shared memory; rows past `valid` are zero-filled.
template <int R>
__device__ __forceinline__ void load_tile(elem_t* tile, const elem_t* g, long long row_stride,
                                          int valid, int tid) {
  constexpr int CH = D / 8;
  static_assert((R * CH) % NT == 0, "tile chunks must divide among the threads");
#pragma unroll
  for (int it = 0; it < R * CH / NT; ++it) {
    const int i = tid + it * NT;
    const int r = i / CH, c = i % CH;
    const bool in = r < valid;
    const elem_t* src = in ? g + (long long)r * row_stride + c * 8 : g;
    const u32 dst = smem_addr(tile + r * D + ((c ^ (r & 7)) << 3));
    const int bytes = in ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void ldsm_x4(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

__device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {
#if KILN_F16
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
#endif
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// lo in the low half, hi in the high half, rounded to nearest even.
__device__ __forceinline__ u32 pack2(float lo, float hi) {
  u32 r;
#if KILN_F16
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

extern "C" __global__ void __launch_bounds__(NT)
kiln_flash_attention_fwd(const AttentionParams p) {
  extern __shared__ __align__(128) elem_t smem[];
  elem_t* sQ = smem;
  elem_t* sK = sQ + BM * D;
  elem_t* sV = sK + BN * D;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // The heaviest (last, under a causal mask) query tiles first.
  const int mblock = (int)gridDim.y - 1 - (int)blockIdx.y;
  const long long b = blockIdx.x;
  const long long b2 = b % p.nb2, b01 = b / p.nb2;
  const long long b1 = b01 % p.nb1, b0 = b01 / p.nb1;
  const int m0 = mblock * BM;
  const elem_t* q = p.q + b0 * p.q_batch[0] + b1 * p.q_batch[1] + b2 * p.q_batch[2] + (long long)m0 * p.q_row;
  const elem_t* k = p.k + b0 * p.k_batch[0] + b1 * p.k_batch[1] + b2 * p.k_batch[2];
  const elem_t* v = p.v + b0 * p.v_batch[0] + b1 * p.v_batch[1] + b2 * p.v_batch[2];
  elem_t* o = p.o + b0 * p.o_batch[0] + b1 * p.o_batch[1] + b2 * p.o_batch[2] + (long long)m0 * p.o_row;
  const int q_valid = min(BM, p.q_len - m0);
#if KILN_BIAS
  const long long bias_b = b0 * p.bias_batch[0] + b1 * p.bias_batch[1] + b2 * p.bias_batch[2];
#endif
#if KILN_MASK
  const unsigned char* mask_b = p.mask + b0 * p.mask_batch[0] + b1 * p.mask_batch[1] + b2 * p.mask_batch[2];
#endif

  int n_end = p.kv_len;
  if (p.causal && !KILN_MASK) {
    const long long last = (long long)m0 + BM - 1 + p.causal_offset + 1;  // keys < last
    if (last < n_end) n_end = last < 0 ? 0 : (int)last;
  }
  const int n_tiles = (n_end + BN - 1) / BN;

  load_tile<BM>(sQ, q, p.q_row, q_valid, tid);
  cp_async_commit();
  if (n_tiles > 0) load_tile<BN>(sK, k, p.k_row, min(BN, p.kv_len), tid);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  // Warp w owns rows [w*16*MT, (w+1)*16*MT) of the tile, MT m16 tiles; the k and v fragments
  // it reads from shared memory serve all MT of them.
  u32 qf[MT][D / 16][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      const int row = (warp * MT + mt) * 16 + (lane & 15), col = ks * 16 + (lane >> 4) * 8;
      ldsm_x4(qf[mt][ks][0], qf[mt][ks][1], qf[mt][ks][2], qf[mt][ks][3], smem_addr(sQ + swz(row, col)));
    }

  float acc[MT][D / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < D / 8; ++i) acc[mt][i][0] = acc[mt][i][1] = acc[mt][i][2] = acc[mt][i][3] = 0.f;
  // Running max of the raw scores (scaled inside exp2 by one FFMA) and sum, per row held.
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    row_max[mt][0] = row_max[mt][1] = NEG_INF;
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }
  const float sl2 = p.scale_log2;
  // Fragment addresses as a per-thread base plus a constant per tile (the XOR swizzle only
  // touches the chunk within a row, and row & 7 is the same for every tile a thread reads).
  const u32 k_base = smem_addr(sK) + ((lane & 7) + ((lane >> 4) & 1) * 8) * D * 2;
  const u32 v_base = smem_addr(sV) + ((lane & 7) + ((lane >> 3) & 1) * 8) * D * 2;
  u32 k_chunk[D / 16], v_chunk[D / 16];
#pragma unroll
  for (int c = 0; c < D / 16; ++c) {
    k_chunk[c] = ((2 * c + ((lane >> 3) & 1)) ^ (lane & 7)) << 4;
    v_chunk[c] = ((2 * c + ((lane >> 4) & 1)) ^ (lane & 7)) << 4;
  }

  for (int j = 0; j < n_tiles; ++j) {
    const int n0 = j * BN;
    cp_async_wait_all();
    __syncthreads();  // k_j is in; every warp is done with v_{j-1}
    load_tile<BN>(sV, v + (long long)n0 * p.v_row, p.v_row, min(BN, p.kv_len - n0), tid);
    cp_async_commit();

    float s[MT][BN / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
#pragma unroll
      for (int nt2 = 0; nt2 < BN / 16; ++nt2) {
        u32 b0, b1, b2, b3;
        ldsm_x4(b0, b1, b2, b3, k_base + k_chunk[ks] + nt2 * 16 * D * 2);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma(s[mt][2 * nt2], qf[mt][ks], b0, b1);
          mma(s[mt][2 * nt2 + 1], qf[mt][ks], b2, b3);
        }
      }
    }

    const bool need_mask = n0 + BN > p.kv_len ||
                           (p.causal && (long long)n0 + BN - 1 > (long long)m0 + p.causal_offset);
    u32 pf[MT][BN / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r_lo = m0 + (warp * MT + mt) * 16 + (lane >> 2);  // rows r_lo and r_lo + 8
#if KILN_EXTRA
      (void)need_mask;
      (void)sl2;
      // x = scale*s + bias, the fill where dropped (Note [Attention bias and masks]); columns
      // past kv_len and rows past q_len do not exist (-inf).
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = n0 + nt * 8 + (lane & 3) * 2 + (e & 1);
          const int row = r_lo + (e >> 1) * 8;
          float x = s[mt][nt][e] * p.scale;
          if (col >= p.kv_len || row >= p.q_len) {
            x = NEG_INF;
          } else {
#if KILN_BIAS
            x = fmaf(p.bias_scale, load_bias(p.bias, bias_b + (long long)row * p.bias_row + (long long)col * p.bias_col), x);
#endif
            bool kept = !(p.causal && (long long)col > (long long)row + p.causal_offset);
#if KILN_MASK
            kept = kept && mask_b[(long long)row * p.mask_row + (long long)col * p.mask_col] != 0;
            if (!kept) x = p.mask_fill;
#else
            if (!kept) x = NEG_INF;
#endif
          }
          s[mt][nt][e] = x;
        }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = NEG_INF;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(row_max[mt][h], mx);
        const float m_use = m_new == NEG_INF ? 0.f : m_new;
        const float alpha = fast_exp2((row_max[mt][h] - m_use) * L2E);
        row_max[mt][h] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
          const float e0 = fast_exp2((s[mt][nt][2 * h] - m_use) * L2E);
          const float e1 = fast_exp2((s[mt][nt][2 * h + 1] - m_use) * L2E);
          s[mt][nt][2 * h] = e0;
          s[mt][nt][2 * h + 1] = e1;
          sum += e0 + e1;
        }
        row_sum[mt][h] = row_sum[mt][h] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          acc[mt][dt][2 * h] *= alpha;
          acc[mt][dt][2 * h + 1] *= alpha;
        }
      }
#else
      if (need_mask) {
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = n0 + nt * 8 + (lane & 3) * 2 + (e & 1);
            const int row = r_lo + (e >> 1) * 8;
            if (col >= p.kv_len || (p.causal && (long long)col > (long long)row + p.causal_offset))
              s[mt][nt][e] = NEG_INF;
          }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = NEG_INF;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(row_max[mt][h], mx);
        const float m_scaled = m_new == NEG_INF ? 0.f : m_new * sl2;
        const float alpha = fast_exp2(fmaf(row_max[mt][h], sl2, -m_scaled));
        row_max[mt][h] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
          const float e0 = fast_exp2(fmaf(s[mt][nt][2 * h], sl2, -m_scaled));
          const float e1 = fast_exp2(fmaf(s[mt][nt][2 * h + 1], sl2, -m_scaled));
          s[mt][nt][2 * h] = e0;
          s[mt][nt][2 * h + 1] = e1;
          sum += e0 + e1;
        }
        row_sum[mt][h] = row_sum[mt][h] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          acc[mt][dt][2 * h] *= alpha;
          acc[mt][dt][2 * h + 1] *= alpha;
        }
      }
#endif  // KILN_EXTRA
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        pf[mt][kk][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pf[mt][kk][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pf[mt][kk][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pf[mt][kk][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }

    cp_async_wait_all();
    __syncthreads();  // v_j is in; every warp is done with k_j
    if (j + 1 < n_tiles)
      load_tile<BN>(sK, k + (long long)(n0 + BN) * p.k_row, p.k_row, min(BN, p.kv_len - n0 - BN), tid);
    cp_async_commit();

#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
#pragma unroll
      for (int dt2 = 0; dt2 < D / 16; ++dt2) {
        u32 b0, b1, b2, b3;
        ldsm_x4_t(b0, b1, b2, b3, v_base + v_chunk[dt2] + kk * 16 * D * 2);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma(acc[mt][2 * dt2], pf[mt][kk], b0, b1);
          mma(acc[mt][2 * dt2 + 1], pf[mt][kk], b2, b3);
        }
      }
    }
  }
  cp_async_wait_all();

#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[mt][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      // A row with no kept key under a -inf fill is NaN in the HLO (exp(-inf - -inf)).
      const float inv = l > 0.f ? 1.f / l : (KILN_MASK ? __int_as_float(0x7fc00000) : 0.f);
      const int row = (warp * MT + mt) * 16 + (lane >> 2) + h * 8;
      if (row < q_valid) {
        elem_t* dst = o + (long long)row * p.o_row + (lane & 3) * 2;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt)
          *reinterpret_cast<u32*>(dst + dt * 8) = pack2(acc[mt][dt][2 * h] * inv, acc[mt][dt][2 * h + 1] * inv);
      }
    }
}
)cuda";
}

}  // namespace kiln::cuda::libs
