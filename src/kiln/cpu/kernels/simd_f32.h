// The f32 vector primitives of kiln's hand-written CPU micro-kernels (internal to
// src/kiln/cpu/kernels: conv_indirect.cc, gemm_parallel.cc), for the instruction set the
// including file is compiled for: AVX-512 (16 lanes, masked partial loads/stores) or AVX2 with
// FMA (8 lanes, partial loads/stores through a stack copy). KILN_SIMD_F32 is defined when one
// of them is available; without it nothing here is declared and the callers use their
// portable fallbacks.
#pragma once

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <utility>

#define KILN_SIMD_F32 1

namespace kiln::cpu::internal::simd {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
using Vec = __m512;
inline Vec Zero() { return _mm512_setzero_ps(); }
inline Vec Load(const float* p) { return _mm512_loadu_ps(p); }
inline Vec Broadcast(const float* p) { return _mm512_set1_ps(*p); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline __mmask16 Mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
// The first n (< kLanes) lanes; the others read as zero / are not written.
inline Vec LoadN(const float* p, int n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
inline void StoreN(float* p, Vec v, int n) { _mm512_mask_storeu_ps(p, Mask(n), v); }
#else
constexpr int kLanes = 8;
using Vec = __m256;
inline Vec Zero() { return _mm256_setzero_ps(); }
inline Vec Load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec Broadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec LoadN(const float* p, int n) {
  alignas(32) float tmp[kLanes] = {};
  std::memcpy(tmp, p, n * sizeof(float));
  return _mm256_load_ps(tmp);
}
inline void StoreN(float* p, Vec v, int n) {
  alignas(32) float tmp[kLanes];
  _mm256_store_ps(tmp, v);
  std::memcpy(p, tmp, n * sizeof(float));
}
#endif

// Note [Register accumulators]
//   A micro-kernel's accumulators as a local array (Vec acc[MR][NV], indexed in loops over r
//   and v) are not kept in registers by GCC 12 in every instantiation: for the AVX2 6 x 16
//   tiles (and AVX-512's 12 x 32) it keeps the array in memory and stores every
//   multiply-add's result back to the stack on every k -- 12 stores per 12 FMAs, which made
//   those kernels store-bound (~30 of ~90 GFLOP/s on one Zen 3 core; the same kernel with
//   Regs: ~70). Regs<N> holds N vectors as distinct members (a chain of bases) that are only
//   ever named through compile-time indices (Get<I>, inside Unroll), so scalar replacement
//   turns each into a register.
template <int N>
struct Regs : Regs<N - 1> {
  Vec x;
};
template <>
struct Regs<0> {};
template <int I, int N>
inline Vec& Get(Regs<N>& r) {
  static_assert(I >= 0 && I < N);
  return static_cast<Regs<I + 1>&>(r).x;
}
// f(std::integral_constant<int, I>{}) for I = 0 .. N-1, in order, unrolled.
template <int N, class F>
inline __attribute__((always_inline)) void Unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

}  // namespace kiln::cpu::internal::simd

#endif
