// The text of kiln_codegen.cuh, the header every generated kernel includes (docs/codegen.md).
//
// Note [HIP dialect]
//   The emitters write one kernel text for both GPU languages; what differs is confined to the
//   prelude and to two facts the emitters read from the DeviceSpec (DeviceSpec::dialect):
//   - the lane count (warp_size: 32, or a 64-lane AMD wavefront), which sizes the row
//     reduction's shuffle tree and its per-warp shared slots. Shuffle trees narrower than the
//     hardware's (the column reduction's and the two-stage fold's 32-lane groups) stay correct
//     on 64 lanes: an xor offset below 32 never leaves its half of the wavefront.
//   - the compute capability (0.0 for AMD presets), so that NVIDIA-only atomics (f16/bf16
//     atomicAdd) are not chosen and compare-and-swap loops are used instead.
//   The HIP prelude is derived from the CUDA one at first use, so the helpers exist once: the
//   CUDA header block (cuda_fp16.h, cuda_bf16.h, nvcc diagnostics) is replaced by HIP's
//   (hip_runtime.h outside hipRTC, hip_fp16.h, kiln's own 16-bit bf16 storage type named
//   __nv_bfloat16 with the four conversions kiln uses), masked __shfl_xor_sync calls become HIP's
//   maskless __shfl_xor (all lanes of the wavefront take part, as kiln's shuffles always are
//   convergent), and the double to f16/bf16 roundings use kiln's exact minifloat encoder
//   instead of CUDA's __double2half / __double2bfloat16. Inline PTX (tanh.approx) and the
//   NVIDIA-only bf16 arithmetic shortcut are already behind `#ifdef __CUDA_ARCH__`, which HIP
//   does not define. CodegenHipPrelude fails loudly (an Internal-only abort at first use) if a
//   replaced pattern goes missing: prelude_hip_test compiles it for gfx90a and gfx942.
#include <cstdio>
#include <cstdlib>

#include "kiln/codegen/device_types.h"

namespace kiln::codegen {

namespace {

constexpr const char* kPrelude = R"CUDA(// kiln_codegen.cuh: helpers shared by kiln's generated kernels (src/kiln/codegen/prelude.cc).
// Semantics follow XLA's elemental emitter and kiln's reference evaluator (docs/codegen.md).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Generated code computes values some outputs never use (a select's unused arm, an index whose
// range makes it constant) and compares unsigned values with zero (signed/unsigned-agnostic
// ops): both are harmless, so their warnings (177, 550, 186) are off.
#pragma nv_diag_suppress 177
#pragma nv_diag_suppress 550
#pragma nv_diag_suppress 186

typedef signed char s8;
typedef unsigned char u8;
typedef short s16;
typedef unsigned short u16;
typedef int s32;
typedef unsigned int u32;
typedef long long s64;
typedef unsigned long long u64;

#define KILN_INF_F __int_as_float(0x7f800000)
#define KILN_NAN_F __int_as_float(0x7fc00000)
#define KILN_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define KILN_NAN_D __longlong_as_double(0x7ff8000000000000LL)
#define KILN_DEVICE static __device__ __forceinline__

// N consecutive elements moved as one access (16 bytes at most, naturally aligned).
template <typename T, int N>
struct alignas(sizeof(T) * N) kiln_vec {
  T v[N];
};

template <typename T> struct kiln_unsigned;
#define KILN_INT_TRAITS(T, U, S, SIGNED) \
  template <> struct kiln_unsigned<T> { typedef U type; typedef S signed_type; static constexpr bool is_signed = SIGNED; };
KILN_INT_TRAITS(bool, u8, s8, false)
KILN_INT_TRAITS(s8, u8, s8, true)
KILN_INT_TRAITS(u8, u8, s8, false)
KILN_INT_TRAITS(s16, u16, s16, true)
KILN_INT_TRAITS(u16, u16, s16, false)
KILN_INT_TRAITS(s32, u32, s32, true)
KILN_INT_TRAITS(u32, u32, s32, false)
KILN_INT_TRAITS(s64, u64, s64, true)
KILN_INT_TRAITS(u64, u64, s64, false)
#undef KILN_INT_TRAITS

template <int kBits>
KILN_DEVICE constexpr u64 kiln_mask() {
  if constexpr (kBits >= 64) return ~0ull;
  else return (1ull << kBits) - 1;
}

// ---- Integers (XLA semantics: wrap-around, x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN) ----

// Wraps to kBits (sub-byte types): sign-extends signed types, masks unsigned ones.
template <int kBits, typename T>
KILN_DEVICE T kiln_wrap(T v) {
  typedef typename kiln_unsigned<T>::type U;
  constexpr int kShift = 8 * (int)sizeof(T) - kBits;
  if constexpr (kiln_unsigned<T>::is_signed) {
    return (T)((typename kiln_unsigned<T>::signed_type)((U)v << kShift) >> kShift);
  } else {
    return (T)((U)v & (U)kiln_mask<kBits>());
  }
}
template <typename T>
KILN_DEVICE T kiln_add(T a, T b) { typedef typename kiln_unsigned<T>::type U; return (T)((U)a + (U)b); }
template <typename T>
KILN_DEVICE T kiln_sub(T a, T b) { typedef typename kiln_unsigned<T>::type U; return (T)((U)a - (U)b); }
template <typename T>
KILN_DEVICE T kiln_mul(T a, T b) { typedef typename kiln_unsigned<T>::type U; return (T)((U)a * (U)b); }
template <typename T>
KILN_DEVICE T kiln_neg(T a) { typedef typename kiln_unsigned<T>::type U; return (T)((U)0 - (U)a); }
template <typename T>
KILN_DEVICE T kiln_iabs(T a) {
  if constexpr (kiln_unsigned<T>::is_signed) return a < (T)0 ? kiln_neg(a) : a;
  else return a;
}
template <typename T>
KILN_DEVICE T kiln_div(T a, T b) {
  if (b == (T)0) return (T)~(typename kiln_unsigned<T>::type)0;
  if constexpr (kiln_unsigned<T>::is_signed) {
    if (b == (T)-1) return kiln_neg(a);
  }
  return (T)(a / b);
}
template <typename T>
KILN_DEVICE T kiln_rem(T a, T b) {
  if (b == (T)0) return a;
  if constexpr (kiln_unsigned<T>::is_signed) {
    if (b == (T)-1) return (T)0;
  }
  return (T)(a % b);
}
// Shift amounts are read as unsigned; amounts >= the width give 0 (left, logical right) or the
// sign fill (arithmetic right).
template <int kBits, typename T>
KILN_DEVICE T kiln_shl(T a, T b) {
  typedef typename kiln_unsigned<T>::type U;
  return (U)b >= (U)kBits ? (T)0 : (T)((U)a << (U)b);
}
template <int kBits, typename T>
KILN_DEVICE T kiln_shr_logical(T a, T b) {
  typedef typename kiln_unsigned<T>::type U;
  return (U)b >= (U)kBits ? (T)0 : (T)(((U)a & (U)kiln_mask<kBits>()) >> (U)b);
}
template <int kBits, typename T>
KILN_DEVICE T kiln_shr_arith(T a, T b) {
  typedef typename kiln_unsigned<T>::type U;
  typedef typename kiln_unsigned<T>::signed_type S;
  constexpr int kShift = 8 * (int)sizeof(T) - kBits;
  const S s = (S)((S)((U)a << kShift) >> kShift);
  if ((U)b >= (U)kBits) return (T)(s < 0 ? (S)-1 : (S)0);
  return (T)(S)(s >> (U)b);
}
template <int kBits, typename T>
KILN_DEVICE T kiln_popcnt(T a) {
  typedef typename kiln_unsigned<T>::type U;
  return (T)__popcll((u64)(U)a & kiln_mask<kBits>());
}
template <int kBits, typename T>
KILN_DEVICE T kiln_clz(T a) {
  typedef typename kiln_unsigned<T>::type U;
  return (T)(__clzll((long long)((u64)(U)a & kiln_mask<kBits>())) - (64 - kBits));
}
template <typename T>
KILN_DEVICE T kiln_isign(T a) {
  if constexpr (kiln_unsigned<T>::is_signed) return (T)((a > (T)0) - (a < (T)0));
  else return (T)(a != (T)0);
}
template <typename T>
KILN_DEVICE T kiln_imax(T a, T b) { return a < b ? b : a; }
template <typename T>
KILN_DEVICE T kiln_imin(T a, T b) { return b < a ? b : a; }
// x^n: 1 when x == 1 or n == 0, 0 for negative n otherwise; wraps.
template <typename T>
KILN_DEVICE T kiln_ipow(T a, T b) {
  typedef typename kiln_unsigned<T>::type U;
  if (a == (T)1 || b == (T)0) return (T)1;
  if constexpr (kiln_unsigned<T>::is_signed) {
    if (b < (T)0) return (T)0;
  }
  U base = (U)a, r = 1;
  for (U e = (U)b; e != 0; e >>= 1) {
    if (e & 1) r = (U)(r * base);
    base = (U)(base * base);
  }
  return (T)r;
}
// High half of the double-width product.
template <int kBits, typename T>
KILN_DEVICE T kiln_mulhi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    if constexpr (kiln_unsigned<T>::is_signed) return (T)__mul64hi((long long)a, (long long)b);
    else return (T)__umul64hi((unsigned long long)a, (unsigned long long)b);
  } else {
    if constexpr (kiln_unsigned<T>::is_signed) return (T)(((s64)a * (s64)b) >> kBits);
    else return (T)(((u64)a * (u64)b) >> kBits);
  }
}

// ---- Floats ----

// maximum/minimum propagate NaN (the lhs first) and return the lhs on ties.
KILN_DEVICE float kiln_fmax(float a, float b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
KILN_DEVICE float kiln_fmin(float a, float b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
KILN_DEVICE double kiln_fmax(double a, double b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
KILN_DEVICE double kiln_fmin(double a, double b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
// clamp(lo, x, hi) = min(max(x, lo), hi); a NaN operand propagates (lo first).
KILN_DEVICE float kiln_fclamp(float lo, float x, float hi) {
  if (lo != lo) return lo;
  if (x != x) return x;
  if (hi != hi) return hi;
  const float m = x < lo ? lo : x;
  return m < hi ? m : hi;
}
KILN_DEVICE double kiln_fclamp(double lo, double x, double hi) {
  if (lo != lo) return lo;
  if (x != x) return x;
  if (hi != hi) return hi;
  const double m = x < lo ? lo : x;
  return m < hi ? m : hi;
}
template <typename T>
KILN_DEVICE T kiln_iclamp(T lo, T x, T hi) {
  const T m = x < lo ? lo : x;
  return m < hi ? m : hi;
}
KILN_DEVICE float kiln_fsign(float x) { return x != x ? x : copysignf(x != 0.0f ? 1.0f : 0.0f, x); }
KILN_DEVICE double kiln_fsign(double x) { return x != x ? x : copysign(x != 0.0 ? 1.0 : 0.0, x); }
KILN_DEVICE float kiln_logistic(float x) { return 1.0f / (1.0f + expf(-x)); }
KILN_DEVICE double kiln_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
KILN_DEVICE float kiln_pow(float a, float b) { return (a == 1.0f || b == 0.0f) ? 1.0f : powf(a, b); }
KILN_DEVICE double kiln_pow(double a, double b) { return (a == 1.0 || b == 0.0) ? 1.0 : pow(a, b); }
// Keys of the total order -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
KILN_DEVICE s32 kiln_total_order(float x) {
  const s32 i = __float_as_int(x);
  return i < 0 ? (i ^ 0x7fffffff) : i;
}
KILN_DEVICE s64 kiln_total_order(double x) {
  const s64 i = __double_as_longlong(x);
  return i < 0 ? (i ^ 0x7fffffffffffffffLL) : i;
}
// float -> integer: truncates toward zero, saturates to [lo, hi], NaN -> 0.
template <typename T>
KILN_DEVICE T kiln_float_to_int(float x, T lo, T hi) {
  if (x != x) return (T)0;
  if (x >= (float)hi) return hi;
  if (x <= (float)lo) return lo;
  return (T)x;
}
template <typename T>
KILN_DEVICE T kiln_float_to_int(double x, T lo, T hi) {
  if (x != x) return (T)0;
  if (x >= (double)hi) return hi;
  if (x <= (double)lo) return lo;
  return (T)x;
}
// reduce-precision on f32/f64 bits (round to nearest even in the kept mantissa, flush exponents
// out of range to zero/infinity; NaN stays NaN unless no mantissa bit is left).
KILN_DEVICE float kiln_reduce_precision(float x, int exponent_bits, int mantissa_bits) {
  u32 v = __float_as_uint(x);
  if (mantissa_bits < 23) {
    const u32 last = 1u << (23 - mantissa_bits);
    const u32 base_bias = (last >> 1) - 1;
    const u32 x_last = (v & last) >> (23 - mantissa_bits);
    v = (v + x_last + base_bias) & ~(last - 1);
  }
  if (exponent_bits < 8) {
    const u32 exp_mask = 0x7f800000u;
    const u32 reduced_bias = (1u << (exponent_bits - 1)) - 1;
    const u32 max_exp = 127u + reduced_bias, min_exp = 127u - reduced_bias;
    const u32 x_exp = v & exp_mask;
    const u32 zero = v & 0x80000000u;
    if (x_exp > (max_exp << 23)) v = zero | exp_mask;
    if (x_exp <= (min_exp << 23)) v = zero;
  }
  float r = __uint_as_float(v);
  if (x != x) r = mantissa_bits > 0 ? x : KILN_INF_F;
  return r;
}
KILN_DEVICE double kiln_reduce_precision(double x, int exponent_bits, int mantissa_bits) {
  u64 v = (u64)__double_as_longlong(x);
  if (mantissa_bits < 52) {
    const u64 last = 1ull << (52 - mantissa_bits);
    const u64 base_bias = (last >> 1) - 1;
    const u64 x_last = (v & last) >> (52 - mantissa_bits);
    v = (v + x_last + base_bias) & ~(last - 1);
  }
  if (exponent_bits < 11) {
    const u64 exp_mask = 0x7ff0000000000000ull;
    const u64 reduced_bias = (1ull << (exponent_bits - 1)) - 1;
    const u64 max_exp = 1023ull + reduced_bias, min_exp = 1023ull - reduced_bias;
    const u64 x_exp = v & exp_mask;
    const u64 zero = v & 0x8000000000000000ull;
    if (x_exp > (max_exp << 52)) v = zero | exp_mask;
    if (x_exp <= (min_exp << 52)) v = zero;
  }
  double r = __longlong_as_double((long long)v);
  if (x != x) r = mantissa_bits > 0 ? x : KILN_INF_D;
  return r;
}

// ---- Narrow floats (Note [Narrow floats in registers], src/kiln/codegen/device_types.h) ----

// f16/bf16 NaNs as kiln's evaluator codes them (src/kiln/hlo/float_types.h): rounding a NaN
// to bf16 keeps its top 7 payload bits and sets the quiet bit, to f16 gives the quiet NaN of
// its sign (0x7e00 | sign); loads widen the bits exactly, payload included; stores and bitcasts
// of a register NaN (already rounded, or widened from the type's own bits) give its bits back
// unchanged. CUDA's conversions would make every NaN 0x7fff, which bitcast-convert exposes.
// The NaN case is a select, not a branch: ptxas turns a branch per rounding into divergent
// control flow, which made long bf16 elementwise fusions (a gelu's gradient) instruction-bound.
KILN_DEVICE float kiln_round_f16(float x) {
  const float r = __half2float(__float2half_rn(x));
  const float n = __uint_as_float((__float_as_uint(x) & 0x80000000u) | 0x7fc00000u);
  return x != x ? n : r;
}
KILN_DEVICE float kiln_round_bf16(float x) {
  const float r = __bfloat162float(__float2bfloat16_rn(x));
  const float n = __uint_as_float((__float_as_uint(x) | 0x400000u) & 0xffff0000u);
  return x != x ? n : r;
}
// The rounding of an f32 +, -, * or / result to bf16. On the GPU those return the canonical NaN
// 0x7fffffff for every NaN, which kiln_round_bf16 and CUDA's conversion both code as 0x7fff:
// the plain conversion (one instruction) gives the same bits. On a host compile (the codegen
// host tests), where arithmetic propagates payloads, it is kiln_round_bf16.
KILN_DEVICE float kiln_round_bf16_arith(float x) {
#ifdef __CUDA_ARCH__
  return __bfloat162float(__float2bfloat16_rn(x));
#else
  return kiln_round_bf16(x);
#endif
}
KILN_DEVICE float kiln_f16_from_bits(u32 b) {
  if ((b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0u)
    return __uint_as_float(((b & 0x8000u) << 16) | 0x7f800000u | ((b & 0x3ffu) << 13));
  return __half2float(__ushort_as_half((unsigned short)b));
}
KILN_DEVICE float kiln_bf16_from_bits(u32 b) { return __uint_as_float((b & 0xffffu) << 16); }
KILN_DEVICE u32 kiln_f16_bits(float x) {
  const u32 u = __float_as_uint(x);
  const u32 m = (u >> 13) & 0x3ffu;
  const u32 n = ((u >> 16) & 0x8000u) | 0x7c00u | (m != 0u ? m : 0x200u);
  const u32 r = __half_as_ushort(__float2half_rn(x));
  return x != x ? n : r;
}
KILN_DEVICE u32 kiln_bf16_bits(float x) {
  const u32 h = __float_as_uint(x) >> 16;
  const u32 n = (h & 0x7fu) != 0u ? h : (h | 0x40u);
  const u32 r = __bfloat16_as_ushort(__float2bfloat16_rn(x));
  return x != x ? n : r;
}
// tanh of a value whose result is rounded to bf16 or f16: the hardware's tanh.approx.f32 (sm_75
// and newer; relative error below 2^-10.9, under half of bf16's unit in the last place, so
// the rounded result is the correctly rounded one or its neighbour), as XLA's GPU emitter uses
// an approximation there too; tanhf on older devices and in host compiles.
KILN_DEVICE float kiln_tanh_narrow(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return tanhf(x);
#endif
}
KILN_DEVICE float kiln_load_f16(__half h) { return kiln_f16_from_bits(__half_as_ushort(h)); }
KILN_DEVICE float kiln_load_bf16(__nv_bfloat16 h) { return kiln_bf16_from_bits(__bfloat16_as_ushort(h)); }
KILN_DEVICE __half kiln_store_f16(float x) { return __ushort_as_half((unsigned short)kiln_f16_bits(x)); }
KILN_DEVICE __nv_bfloat16 kiln_store_bf16(float x) {
  return __ushort_as_bfloat16((unsigned short)kiln_bf16_bits(x));
}

// NaN encodings of the mini-float formats: 0 IEEE (inf exists), 1 "fn" (only S.1111.111 is NaN),
// 2 "fnuz" (the negative-zero pattern is NaN), 3 none (f4e2m1fn: saturates), 4 e8m0 (0xff is
// NaN, powers of two only, no sign).
template <int kExp, int kMant, int kBias, int kNan, bool kSigned>
KILN_DEVICE float kiln_minifloat_decode(unsigned bits) {
  const unsigned mant = bits & ((1u << kMant) - 1);
  const unsigned exp = (bits >> kMant) & ((1u << kExp) - 1);
  const bool neg = kSigned && ((bits >> (kMant + kExp)) & 1);
  const unsigned all_ones = (1u << kExp) - 1;
  if (kNan == 0 && exp == all_ones) return mant == 0 ? (neg ? -KILN_INF_F : KILN_INF_F) : (neg ? -KILN_NAN_F : KILN_NAN_F);
  if (kNan == 1 && exp == all_ones && mant == (1u << kMant) - 1) return neg ? -KILN_NAN_F : KILN_NAN_F;
  if (kNan == 2 && neg && exp == 0 && mant == 0) return KILN_NAN_F;
  if (kNan == 4) return exp == all_ones ? KILN_NAN_F : ldexpf(1.0f, (int)exp - kBias);
  float v = exp == 0 ? ldexpf((float)mant, 1 - kBias - kMant)
                     : ldexpf((float)(mant | (1u << kMant)), (int)exp - kBias - kMant);
  return neg ? -v : v;
}
// Round to nearest even from the exact value x (float or double).
template <int kExp, int kMant, int kBias, int kNan, bool kSigned, typename F>
KILN_DEVICE unsigned kiln_minifloat_encode(F x) {
  const unsigned sign_bit = kSigned ? (1u << (kMant + kExp)) : 0u;
  const unsigned all_ones = (1u << kExp) - 1;
  const bool neg = signbit(x);
  const unsigned s = neg ? sign_bit : 0u;
  const unsigned nan_bits = kNan == 0 ? (s | (all_ones << kMant) | (kMant > 0 ? (1u << (kMant - 1)) : 1u))
                          : kNan == 2 ? sign_bit
                          : kNan == 4 ? 0xffu
                          : (s | (all_ones << kMant) | ((1u << kMant) - 1));
  if (x != x) return nan_bits;
  if (!kSigned && neg) return nan_bits;  // unsigned formats: negatives and -0 are NaN
  const unsigned overflow = kNan == 0 ? (s | (all_ones << kMant)) : nan_bits;
  F a = fabs(x);
  if (isinf(a)) return overflow;
  int e;
  if (kNan == 4) {
    if (a == (F)0) return 0xffu;  // no zero in e8m0: NaN, as ml_dtypes and the evaluator
    const F fr = frexp(a, &e);
    int ex = e - 1;
    const F mant = (F)2 * fr;
    if (mant >= (F)1.5) ex += 1;  // ties up, as the evaluator (hlo/float_types.cc)
    const int biased = ex + kBias;
    if (biased < 0) return 0u;
    if (biased >= (int)all_ones) return 0xffu;
    return (unsigned)biased;
  }
  if (a == (F)0) return kNan == 2 ? 0u : s;
  frexp(a, &e);
  const int min_normal = 1 - kBias;
  const int ulp_exp = ((e - 1) < min_normal ? min_normal : (e - 1)) - kMant;
  const F r = rint(ldexp(a, -ulp_exp));
  if (r == (F)0) return kNan == 2 ? 0u : s;
  // Code of the rounded value: significand plus the exponent step above the subnormal range.
  const unsigned code = (unsigned)r + ((unsigned)(ulp_exp - (min_normal - kMant)) << kMant);
  const unsigned max_code = kNan == 0 ? (((all_ones - 1) << kMant) | ((1u << kMant) - 1))
                          : kNan == 1 ? ((all_ones << kMant) | ((1u << kMant) - 2))
                          : ((all_ones << kMant) | ((1u << kMant) - 1));
  if (code > max_code) return overflow;
  return s | code;
}

#define KILN_MINIFLOAT(name, e, m, bias, nan, sgn)                                              \
  KILN_DEVICE float kiln_decode_##name(unsigned bits) {                                         \
    return kiln_minifloat_decode<e, m, bias, nan, sgn>(bits);                                   \
  }                                                                                             \
  KILN_DEVICE u8 kiln_encode_##name(float x) { return (u8)kiln_minifloat_encode<e, m, bias, nan, sgn>(x); } \
  KILN_DEVICE u8 kiln_encode_##name(double x) { return (u8)kiln_minifloat_encode<e, m, bias, nan, sgn>(x); } \
  KILN_DEVICE float kiln_round_##name(float x) { return kiln_decode_##name(kiln_encode_##name(x)); } \
  KILN_DEVICE float kiln_round_##name(double x) { return kiln_decode_##name(kiln_encode_##name(x)); }
KILN_MINIFLOAT(f8e5m2, 5, 2, 15, 0, true)
KILN_MINIFLOAT(f8e4m3fn, 4, 3, 7, 1, true)
KILN_MINIFLOAT(f8e4m3b11fnuz, 4, 3, 11, 2, true)
KILN_MINIFLOAT(f8e5m2fnuz, 5, 2, 16, 2, true)
KILN_MINIFLOAT(f8e4m3fnuz, 4, 3, 8, 2, true)
KILN_MINIFLOAT(f8e4m3, 4, 3, 7, 0, true)
KILN_MINIFLOAT(f8e3m4, 3, 4, 3, 0, true)
KILN_MINIFLOAT(f8e8m0fnu, 8, 0, 127, 4, false)
KILN_MINIFLOAT(f4e2m1fn, 2, 1, 1, 3, true)
#undef KILN_MINIFLOAT

// f64 -> f16/bf16 in one rounding. NaNs as the evaluator converts them: bf16 through f32 (the
// top payload bits kept, quiet), f16 to the quiet NaN of the same sign.
KILN_DEVICE float kiln_round_f16(double x) {
  if (x != x) return __uint_as_float((signbit(x) ? 0x80000000u : 0u) | 0x7fc00000u);
  return __half2float(__double2half(x));
}
KILN_DEVICE float kiln_round_bf16(double x) {
  if (x != x) {
    const u64 b = (u64)__double_as_longlong(x);
    return kiln_round_bf16(__uint_as_float((u32)(b >> 32) & 0x80000000u | 0x7fc00000u |
                                           (u32)((b >> 29) & 0x3fffffu)));
  }
  return __bfloat162float(__double2bfloat16(x));
}

// ---- Complex ----

struct alignas(8) kiln_c64 { float re, im; };
struct alignas(16) kiln_c128 { double re, im; };
// Complex division as the evaluator's std::complex (C99 Annex G, libgcc's __divsc3/__divdc3):
// c64 quotients are computed in double (exact products, one rounding to float), c128 ones by
// Smith's method; a NaN+NaN quotient is then recovered into the infinities and zeros it stands
// for: x/0 = inf with the signs of x (copysign(inf, Re y) * x), inf/finite = inf, finite/inf = 0.
template <typename C, typename R>
KILN_DEVICE C kiln_cdiv_recover(R x, R y, C a, C b, bool denom_zero, bool denom_inf) {
  if (x == x || y == y) return C{x, y};
  const R inf = (R)KILN_INF_D;
  if (denom_zero && (a.re == a.re || a.im == a.im)) {
    const R s = copysign(inf, b.re);
    return C{s * a.re, s * a.im};
  }
  if ((isinf(a.re) || isinf(a.im)) && isfinite(b.re) && isfinite(b.im)) {
    const R ar = copysign(isinf(a.re) ? (R)1 : (R)0, a.re), ai = copysign(isinf(a.im) ? (R)1 : (R)0, a.im);
    return C{inf * (ar * b.re + ai * b.im), inf * (ai * b.re - ar * b.im)};
  }
  if (denom_inf && isfinite(a.re) && isfinite(a.im)) {
    const R br = copysign(isinf(b.re) ? (R)1 : (R)0, b.re), bi = copysign(isinf(b.im) ? (R)1 : (R)0, b.im);
    return C{(R)0 * (a.re * br + a.im * bi), (R)0 * (a.im * br - a.re * bi)};
  }
  return C{x, y};
}
KILN_DEVICE kiln_c64 kiln_cdiv(kiln_c64 a, kiln_c64 b) {
  const double ar = a.re, ai = a.im, br = b.re, bi = b.im;
  const double d = br * br + bi * bi;
  const float x = (float)((ar * br + ai * bi) / d), y = (float)((ai * br - ar * bi) / d);
  return kiln_cdiv_recover<kiln_c64, float>(x, y, a, b, d == 0.0, isinf(b.re) || isinf(b.im));
}
KILN_DEVICE kiln_c128 kiln_cdiv(kiln_c128 a, kiln_c128 b) {
  double x, y, d;
  if (fabs(b.re) < fabs(b.im)) {
    const double r = b.re / b.im;
    d = b.re * r + b.im;
    x = (a.re * r + a.im) / d;
    y = (a.im * r - a.re) / d;
  } else {
    const double r = b.im / b.re;
    d = b.im * r + b.re;
    x = (a.im * r + a.re) / d;
    y = (a.im - a.re * r) / d;
  }
  return kiln_cdiv_recover<kiln_c128, double>(x, y, a, b, b.re == 0.0 && b.im == 0.0,
                                              isinf(b.re) || isinf(b.im));
}
#define KILN_COMPLEX_OPS(C, R)                                                                 \
  KILN_DEVICE C kiln_cadd(C a, C b) { return C{a.re + b.re, a.im + b.im}; }                   \
  KILN_DEVICE C kiln_csub(C a, C b) { return C{a.re - b.re, a.im - b.im}; }                   \
  KILN_DEVICE C kiln_cmul(C a, C b) { return C{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; } \
  KILN_DEVICE C kiln_cneg(C a) { return C{-a.re, -a.im}; }                                     \
  KILN_DEVICE R kiln_cabs(C a) { return hypot(a.re, a.im); }                                   \
  KILN_DEVICE bool kiln_ceq(C a, C b) { return a.re == b.re && a.im == b.im; }                 \
  KILN_DEVICE C kiln_cexp(C a) { const R m = exp(a.re); return C{m * cos(a.im), m * sin(a.im)}; } \
  KILN_DEVICE C kiln_clog(C a) { return C{log(hypot(a.re, a.im)), atan2(a.im, a.re)}; }      \
  /* Principal square root, without overflow in the intermediate (|z| + |re|) / 2. */         \
  KILN_DEVICE C kiln_csqrt(C a) {                                                              \
    if (a.re == 0 && a.im == 0) return C{0, a.im};                                             \
    if (isinf(a.im)) return C{fabs(a.im), a.im};                                               \
    const R t = sqrt((fabs(a.re) + hypot(a.re, a.im)) * (R)0.5);                               \
    if (a.re >= 0) return C{t, a.im / (2 * t)};                                                \
    return C{fabs(a.im) / (2 * t), copysign(t, a.im)};                                         \
  }                                                                                            \
  KILN_DEVICE C kiln_crsqrt(C a) { return kiln_cdiv(C{1, 0}, kiln_csqrt(a)); }                 \
  KILN_DEVICE C kiln_csign(C a) {                                                              \
    const R m = hypot(a.re, a.im);                                                             \
    return m == 0 ? C{0, 0} : C{a.re / m, a.im / m};                                           \
  }                                                                                            \
  KILN_DEVICE C kiln_csin(C a) { return C{sin(a.re) * cosh(a.im), cos(a.re) * sinh(a.im)}; }  \
  KILN_DEVICE C kiln_ccos(C a) { return C{cos(a.re) * cosh(a.im), -sin(a.re) * sinh(a.im)}; } \
  /* Kahan's formula: no overflow for large |re|. */                                          \
  KILN_DEVICE C kiln_ctanh(C a) {                                                              \
    if (fabs(a.re) > (R)(sizeof(R) == 4 ? 10 : 20))                                            \
      return C{copysign((R)1, a.re), copysign((R)0, sin(2 * a.im))};                           \
    const R t = tan(a.im), b = 1 + t * t, s = sinh(a.re), r = sqrt(1 + s * s);                 \
    const R d = 1 + b * s * s;                                                                 \
    return C{b * r * s / d, t / d};                                                            \
  }                                                                                            \
  /* tan(z) = -i tanh(iz). */                                                                  \
  KILN_DEVICE C kiln_ctan(C a) {                                                               \
    const C w = kiln_ctanh(C{-a.im, a.re});                                                    \
    return C{w.im, -w.re};                                                                     \
  }                                                                                            \
  KILN_DEVICE C kiln_clog1p(C a) {                                                             \
    const R x = a.re, y = a.im;                                                                \
    return C{(R)0.5 * log1p(x * (2 + x) + y * y), atan2(y, 1 + x)};                           \
  }                                                                                            \
  KILN_DEVICE C kiln_cexpm1(C a) {                                                             \
    const R h = sin(a.im * (R)0.5);                                                            \
    return C{expm1(a.re) * cos(a.im) - 2 * h * h, exp(a.re) * sin(a.im)};                      \
  }                                                                                            \
  /* a^b = exp(b log a); 0^b is 1 for b == 0, 0 for Re(b) > 0, NaN otherwise. */             \
  KILN_DEVICE C kiln_cpow(C a, C b) {                                                          \
    if (a.re == 0 && a.im == 0) {                                                              \
      if (b.re == 0 && b.im == 0) return C{1, 0};                                              \
      if (b.re > 0 && b.im == 0) return C{0, 0};                                               \
    }                                                                                          \
    return kiln_cexp(kiln_cmul(b, kiln_clog(a)));                                              \
  }                                                                                            \
  KILN_DEVICE C kiln_shfl_xor(C v, int m) {                                                    \
    return C{__shfl_xor_sync(0xffffffffu, v.re, m), __shfl_xor_sync(0xffffffffu, v.im, m)};    \
  }
KILN_COMPLEX_OPS(kiln_c64, float)
KILN_COMPLEX_OPS(kiln_c128, double)
#undef KILN_COMPLEX_OPS

// ---- Warp shuffles for every register type ----

KILN_DEVICE float kiln_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE double kiln_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE s64 kiln_shfl_xor(s64 v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE u64 kiln_shfl_xor(u64 v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE s32 kiln_shfl_xor(s32 v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE u32 kiln_shfl_xor(u32 v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
KILN_DEVICE s16 kiln_shfl_xor(s16 v, int m) { return (s16)__shfl_xor_sync(0xffffffffu, (int)v, m); }
KILN_DEVICE u16 kiln_shfl_xor(u16 v, int m) { return (u16)__shfl_xor_sync(0xffffffffu, (int)v, m); }
KILN_DEVICE s8 kiln_shfl_xor(s8 v, int m) { return (s8)__shfl_xor_sync(0xffffffffu, (int)v, m); }
KILN_DEVICE u8 kiln_shfl_xor(u8 v, int m) { return (u8)__shfl_xor_sync(0xffffffffu, (int)v, m); }
KILN_DEVICE bool kiln_shfl_xor(bool v, int m) { return __shfl_xor_sync(0xffffffffu, (int)v, m) != 0; }

// ---- Counter-based random bits (rng-bit-generator; bit-exact with eval/rng.cc) ----

// Threefry-2x32, 20 rounds.
KILN_DEVICE void kiln_threefry2x32(u32 x[2], u32 k0, u32 k1) {
  const u32 ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  x[0] += ks[0];
  x[1] += ks[1];
  #pragma unroll
  for (int block = 0; block < 5; ++block) {
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int rot = (block % 2 == 0) ? (r == 0 ? 13 : r == 1 ? 15 : r == 2 ? 26 : 6)
                                       : (r == 0 ? 17 : r == 1 ? 29 : r == 2 ? 16 : 24);
      x[0] += x[1];
      x[1] = (x[1] << rot) | (x[1] >> (32 - rot));
      x[1] ^= x[0];
    }
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + (u32)(block + 1);
  }
}

// Philox-4x32, 10 rounds.
KILN_DEVICE void kiln_philox4x32(u32 x[4], u32 k0, u32 k1) {
  #pragma unroll
  for (int round = 0; round < 10; ++round) {
    const u64 p0 = (u64)x[0] * 0xD2511F53u;
    const u64 p1 = (u64)x[2] * 0xCD9E8D57u;
    const u32 y0 = (u32)(p1 >> 32) ^ x[1] ^ k0;
    const u32 y1 = (u32)p1;
    const u32 y2 = (u32)(p0 >> 32) ^ x[3] ^ k1;
    const u32 y3 = (u32)p0;
    x[0] = y0;
    x[1] = y1;
    x[2] = y2;
    x[3] = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// ---- Atomic read-modify-write of one element with any combiner (scatter) ----

// *p = f(*p) atomically, for elements of 1, 2, 4 or 8 bytes (S: the storage type). 1- and
// 2-byte elements are updated through compare-and-swap on their aligned 32-bit word, leaving
// the neighbouring bytes as they are.
template <typename S, typename F>
KILN_DEVICE void kiln_atomic_update(S* p, F f) {
  static_assert(sizeof(S) == 1 || sizeof(S) == 2 || sizeof(S) == 4 || sizeof(S) == 8,
                "kiln_atomic_update: unsupported element size");
  if constexpr (sizeof(S) == 8) {
    unsigned long long* w = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *w, assumed;
    do {
      assumed = old;
      S v;
      memcpy(&v, &assumed, 8);
      const S n = f(v);
      unsigned long long bits;
      memcpy(&bits, &n, 8);
      if (bits == assumed) break;
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else if constexpr (sizeof(S) == 4) {
    unsigned int* w = reinterpret_cast<unsigned int*>(p);
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      S v;
      memcpy(&v, &assumed, 4);
      const S n = f(v);
      unsigned int bits;
      memcpy(&bits, &n, 4);
      if (bits == assumed) break;
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else {
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    unsigned int* w = reinterpret_cast<unsigned int*>(a & ~3ull);
    const unsigned int shift = (unsigned int)(a & 3u) * 8u;
    const unsigned int mask = (sizeof(S) == 1 ? 0xFFu : 0xFFFFu) << shift;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const unsigned int cur = (assumed & mask) >> shift;
      S v;
      memcpy(&v, &cur, sizeof(S));
      const S n = f(v);
      unsigned int bits = 0;
      memcpy(&bits, &n, sizeof(S));
      const unsigned int next = (assumed & ~mask) | ((bits << shift) & mask);
      if (next == assumed) break;
      old = atomicCAS(w, assumed, next);
    } while (old != assumed);
  }
}
)CUDA";

constexpr const char* kHipHead = R"HIP(// kiln_codegen.cuh: helpers shared by kiln's generated kernels (src/kiln/codegen/prelude.cc),
// in the HIP dialect (Note [HIP dialect] there). Semantics follow XLA's elemental emitter and
// kiln's reference evaluator (docs/codegen.md).
#pragma once
// hipRTC brings the runtime's and fp16's declarations itself (its builtin headers); including
// the installed ones again would redefine them.
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#endif

// Generated code mixes & and | without parentheses in bit manipulations whose precedence is
// intended (as the CUDA prelude's nvcc suppressions, a harmless warning off).
#pragma clang diagnostic ignored "-Wbitwise-op-parentheses"
// `#pragma unroll` is a hint: LLVM 15 (hipRTC's comgr on Debian 12) warns where it cannot
// honour one (a column reduction's loop with a runtime trip count); nvcc ignores such hints.
#pragma clang diagnostic ignored "-Wpass-failed"

// bf16 in memory: kiln's own 16-bit storage type under the name the kernels use (HIP versions
// spell their bf16 types differently; kiln needs only the bits and these conversions).
struct kiln_bf16_storage { unsigned short bits; };
typedef kiln_bf16_storage __nv_bfloat16;
static __device__ __forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
static __device__ __forceinline__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  __nv_bfloat16 h;
  h.bits = b;
  return h;
}
static __device__ __forceinline__ float __bfloat162float(__nv_bfloat16 h) {
  return __uint_as_float((unsigned)h.bits << 16);
}
// Round to nearest even, overflow to infinity; a NaN stays a quiet NaN of its sign.
static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float x) {
  const unsigned u = __float_as_uint(x);
  if (x != x) return __ushort_as_bfloat16((unsigned short)((u >> 16) | 0x40u));
  return __ushort_as_bfloat16((unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));
}

)HIP";

// The HIP prelude from the CUDA one (Note [HIP dialect]).
std::string MakeHipPrelude() {
  std::string body(kPrelude);
  const size_t start = body.find("typedef signed char s8;");
  if (start == std::string::npos) {
    std::fprintf(stderr, "kiln: prelude.cc: the CUDA prelude lost its typedefs\n");
    std::abort();
  }
  body = body.substr(start);
  const std::pair<const char*, const char*> replacements[] = {
      {"__shfl_xor_sync(0xffffffffu, ", "__shfl_xor("},
      {"__half2float(__double2half(x))",
       "kiln_f16_from_bits(kiln_minifloat_encode<5, 10, 15, 0, true>(x))"},
      {"__bfloat162float(__double2bfloat16(x))",
       "kiln_bf16_from_bits(kiln_minifloat_encode<8, 7, 127, 0, true>(x))"},
  };
  for (const auto& [from, to] : replacements) {
    const std::string f(from);
    size_t pos = body.find(f);
    if (pos == std::string::npos) {
      std::fprintf(stderr, "kiln: prelude.cc: the CUDA prelude lost '%s'\n", from);
      std::abort();
    }
    for (; pos != std::string::npos; pos = body.find(f, pos + 1)) body.replace(pos, f.size(), to);
  }
  return std::string(kHipHead) + body;
}

}  // namespace

const std::string& CodegenPrelude() {
  static const std::string* prelude = new std::string(kPrelude);
  return *prelude;
}

const std::string& CodegenHipPrelude() {
  static const std::string* prelude = new std::string(MakeHipPrelude());
  return *prelude;
}

}  // namespace kiln::codegen
