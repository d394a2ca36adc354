// CUDA C++ sources of the sort kernels (see sort.h for the algorithms), compiled by NVRTC.
//
// The key module is specialized by macros, one compile per key configuration:
//   KILN_KEY_IN_T    storage type of the input keys (unsigned char/short/int/long long)
//   KILN_RADIX_T     transformed key type (unsigned int, or unsigned long long for 64-bit keys)
//   KILN_KEY_BITS    meaningful bits (8, 16, 32, 64)
//   KILN_KEY_CLASS   0 unsigned, 1 signed, 2 IEEE-like float (sign bit on top)
//   KILN_FLOAT_INF   bits of +inf (floats); larger magnitudes are NaNs
//   KILN_FLOAT_NAN   bits of the canonical +NaN (floats)
//   KILN_CANONICAL   1: -0 -> +0 and NaN -> +NaN before ordering
//   KILN_DESCENDING  1: invert the transformed key (descending order)
// The transformed key orders exactly as XLA's TOTALORDER (or reversed): for floats, positive
// values get the sign bit set, negative values are bitwise inverted, so -NaN < -inf < ... < -0
// < +0 < ... < +NaN as unsigned integers. Ties are broken by the original index everywhere,
// which makes every path stable.
#include "kiln/cuda/libs/sort.h"

namespace kiln::cuda::libs {

const char* SortKeyKernelSource() {
  return R"cuda(
typedef KILN_KEY_IN_T key_in_t;
typedef KILN_RADIX_T radix_t;

// The meaningful bits of a transformed key.
#if KILN_KEY_BITS == 32 || KILN_KEY_BITS == 64
#define KILN_KEY_MASK (~(radix_t)0)
#else
#define KILN_KEY_MASK ((((radix_t)1) << KILN_KEY_BITS) - 1)
#endif

// The order-preserving unsigned key of an input element.
__device__ __forceinline__ radix_t Transform(key_in_t raw) {
  radix_t bits = (radix_t)raw & KILN_KEY_MASK;
#if KILN_KEY_CLASS == 1
  bits ^= (radix_t)1 << (KILN_KEY_BITS - 1);
#elif KILN_KEY_CLASS == 2
  const radix_t sign = (radix_t)1 << (KILN_KEY_BITS - 1);
#if KILN_CANONICAL
  if ((bits & ~sign) > (radix_t)KILN_FLOAT_INF) bits = (radix_t)KILN_FLOAT_NAN;
  if (bits == sign) bits = 0;
#endif
  bits = (bits & sign) ? (~bits & KILN_KEY_MASK) : (bits | sign);
#endif
#if KILN_DESCENDING
  bits = ~bits & KILN_KEY_MASK;
#endif
  return bits;
}

// One block per row (grid-stride over rows): a bitonic sort of (key, index) pairs in shared
// memory, padded to p (a power of two) with sentinels that sort last. Writes the first out_len
// original indices of each sorted row to perm[row * out_len + j].
extern "C" __global__ void kiln_sort_small(const key_in_t* __restrict__ keys,
                                           unsigned* __restrict__ perm, long long rows, int n,
                                           int p, int out_len) {
  extern __shared__ unsigned long long kiln_smem[];
  radix_t* sk = (radix_t*)kiln_smem;
  unsigned* si = (unsigned*)(sk + p);
  const int tid = threadIdx.x;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const key_in_t* in = keys + row * n;
    for (int i = tid; i < p; i += blockDim.x) {
      if (i < n) {
        sk[i] = Transform(in[i]);
        si[i] = (unsigned)i;
      } else {
        sk[i] = ~(radix_t)0;
        si[i] = 0xFFFFFFFFu;
      }
    }
    __syncthreads();
    for (int size = 2; size <= p; size <<= 1) {
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int t = tid; t < (p >> 1); t += blockDim.x) {
          const int lo = 2 * t - (t & (stride - 1));
          const int hi = lo + stride;
          const bool ascending = (lo & size) == 0;
          const radix_t a = sk[lo], b = sk[hi];
          const unsigned ia = si[lo], ib = si[hi];
          const bool greater = a > b || (a == b && ia > ib);
          if (greater == ascending) {
            sk[lo] = b;
            sk[hi] = a;
            si[lo] = ib;
            si[hi] = ia;
          }
        }
        __syncthreads();
      }
    }
    for (int j = tid; j < out_len; j += blockDim.x) perm[row * out_len + j] = si[j];
    __syncthreads();
  }
}

// Radix path, step 0: transformed keys and original indices.
extern "C" __global__ void kiln_radix_init(const key_in_t* __restrict__ keys,
                                           radix_t* __restrict__ rk, unsigned* __restrict__ ri,
                                           long long total, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    rk[i] = Transform(keys[i]);
    ri[i] = (unsigned)(i % n);
  }
}

#define KILN_RADIX_THREADS 256
#define KILN_RADIX_ITEMS 8
#define KILN_RADIX_TILE (KILN_RADIX_THREADS * KILN_RADIX_ITEMS)

// Radix path, step 1 (per digit): per (row, tile) digit counts, written digit-major per row:
// hist[(row * 256 + digit) * tiles + tile]. Launched with 256 threads, one block per (row, tile)
// (grid-stride).
extern "C" __global__ void kiln_radix_hist(const radix_t* __restrict__ rk,
                                           unsigned* __restrict__ hist, long long rows,
                                           long long n, long long tiles, int shift) {
  __shared__ unsigned counts[256];
  const int tid = threadIdx.x;
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long row = b / tiles, tile = b % tiles;
    counts[tid] = 0;
    __syncthreads();
    const long long start = tile * KILN_RADIX_TILE;
    for (int r = 0; r < KILN_RADIX_ITEMS; ++r) {
      const long long i = start + r * KILN_RADIX_THREADS + tid;
      if (i < n) atomicAdd(&counts[(unsigned)(rk[row * n + i] >> shift) & 0xFFu], 1u);
    }
    __syncthreads();
    hist[(row * 256 + tid) * tiles + tile] = counts[tid];
    __syncthreads();
  }
}

// Radix path, step 3 (per digit): stable scatter by the digit. Each tile is processed in rounds
// of 256 consecutive elements; an element's destination is the row's offset for its digit and
// tile (the scanned histogram) plus the number of earlier elements of the tile with the same
// digit (earlier rounds, earlier warps of this round, earlier lanes of its warp).
extern "C" __global__ void kiln_radix_scatter(const radix_t* __restrict__ rk_in,
                                              const unsigned* __restrict__ ri_in,
                                              radix_t* __restrict__ rk_out,
                                              unsigned* __restrict__ ri_out,
                                              const unsigned* __restrict__ offsets_in,
                                              long long rows, long long n, long long tiles,
                                              int shift) {
  const int kWarps = KILN_RADIX_THREADS / 32;
  __shared__ unsigned running[256];
  __shared__ unsigned base[256];
  __shared__ unsigned warp_counts[kWarps][256];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (long long b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    const long long row = b / tiles, tile = b % tiles;
    running[tid] = 0;
    base[tid] = offsets_in[(row * 256 + tid) * tiles + tile];
    const long long start = tile * KILN_RADIX_TILE;
    for (int r = 0; r < KILN_RADIX_ITEMS; ++r) {
      for (int w = 0; w < kWarps; ++w) warp_counts[w][tid] = 0;
      __syncthreads();
      const long long i = start + r * KILN_RADIX_THREADS + tid;
      const bool valid = i < n;
      radix_t key = 0;
      unsigned idx = 0;
      unsigned digit = 256;  // invalid elements form their own group
      if (valid) {
        key = rk_in[row * n + i];
        idx = ri_in[row * n + i];
        digit = (unsigned)(key >> shift) & 0xFFu;
      }
      const unsigned peers = __match_any_sync(0xFFFFFFFFu, digit);
      const unsigned rank = __popc(peers & ((1u << lane) - 1u));
      if (valid && lane == __ffs(peers) - 1) warp_counts[warp][digit] = __popc(peers);
      __syncthreads();
      {
        unsigned sum = running[tid];
        for (int w = 0; w < kWarps; ++w) {
          const unsigned c = warp_counts[w][tid];
          warp_counts[w][tid] = sum;
          sum += c;
        }
        running[tid] = sum;
      }
      __syncthreads();
      if (valid) {
        const long long pos = (long long)base[digit] + warp_counts[warp][digit] + rank;
        rk_out[row * n + pos] = key;
        ri_out[row * n + pos] = idx;
      }
      __syncthreads();
    }
  }
}
)cuda";
}

const char* SortCommonKernelSource() {
  return R"cuda(
struct kiln_u128 {
  unsigned long long lo, hi;
};

// out[row, j] = in[row, perm[row * perm_stride + j]] for j < out_len (grid-stride).
template <typename T>
__device__ void kiln_gather(const T* __restrict__ in, T* __restrict__ out,
                            const unsigned* __restrict__ perm, long long rows, long long n,
                            long long out_len, long long perm_stride) {
  const long long total = rows * out_len;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long long row = i / out_len, j = i % out_len;
    out[i] = in[row * n + perm[row * perm_stride + j]];
  }
}
#define KILN_GATHER(name, T)                                                                  \
  extern "C" __global__ void name(const T* in, T* out, const unsigned* perm, long long rows,  \
                                  long long n, long long out_len, long long perm_stride) {    \
    kiln_gather(in, out, perm, rows, n, out_len, perm_stride);                                \
  }
KILN_GATHER(kiln_sort_gather_w1, unsigned char)
KILN_GATHER(kiln_sort_gather_w2, unsigned short)
KILN_GATHER(kiln_sort_gather_w4, unsigned int)
KILN_GATHER(kiln_sort_gather_w8, unsigned long long)
KILN_GATHER(kiln_sort_gather_w16, kiln_u128)

// indices[row, j] = perm[row * perm_stride + j] as a 32- or 64-bit integer.
template <typename T>
__device__ void kiln_indices(const unsigned* __restrict__ perm, T* __restrict__ out,
                             long long rows, long long out_len, long long perm_stride) {
  const long long total = rows * out_len;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    out[i] = (T)perm[(i / out_len) * perm_stride + i % out_len];
  }
}
extern "C" __global__ void kiln_sort_indices_32(const unsigned* perm, unsigned* out,
                                                long long rows, long long out_len,
                                                long long perm_stride) {
  kiln_indices(perm, out, rows, out_len, perm_stride);
}
extern "C" __global__ void kiln_sort_indices_64(const unsigned* perm, long long* out,
                                                long long rows, long long out_len,
                                                long long perm_stride) {
  kiln_indices(perm, out, rows, out_len, perm_stride);
}

// Radix path, step 2: exclusive prefix sums of each row's digit-major histogram (len values per
// row), in place. One block of 1024 threads per row (grid-stride over rows).
extern "C" __global__ void kiln_radix_scan(unsigned* __restrict__ hist, long long rows,
                                           long long len) {
  __shared__ unsigned warp_sums[32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warps = (blockDim.x + 31) / 32;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    unsigned* h = hist + row * len;
    unsigned carry = 0;
    for (long long start = 0; start < len; start += blockDim.x) {
      const long long i = start + tid;
      const unsigned v = i < len ? h[i] : 0u;
      unsigned incl = v;
      for (int d = 1; d < 32; d <<= 1) {
        const unsigned up = __shfl_up_sync(0xFFFFFFFFu, incl, d);
        if (lane >= d) incl += up;
      }
      if (lane == 31) warp_sums[warp] = incl;
      __syncthreads();
      if (warp == 0) {
        unsigned ws = lane < warps ? warp_sums[lane] : 0u;
        for (int d = 1; d < 32; d <<= 1) {
          const unsigned up = __shfl_up_sync(0xFFFFFFFFu, ws, d);
          if (lane >= d) ws += up;
        }
        warp_sums[lane] = ws;  // inclusive over warps
      }
      __syncthreads();
      const unsigned before = warp == 0 ? 0u : warp_sums[warp - 1];
      if (i < len) h[i] = carry + before + incl - v;
      const unsigned total = warp_sums[warps - 1];
      __syncthreads();
      carry += total;
    }
  }
}
)cuda";
}

}  // namespace kiln::cuda::libs
