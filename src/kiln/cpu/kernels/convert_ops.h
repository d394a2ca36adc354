// Element conversions for the CPU kernels (internal to src/kiln/cpu/kernels): fast bit-exact
// f16/bf16 codecs and XLA's convert semantics for the common element types, written so that
// loops over arrays vectorize.
//
// Semantics are the reference evaluator's (eval/convert.cc): float -> integer truncates toward
// zero, saturates to the destination range and maps NaN to 0; integer -> float rounds once to
// nearest even; float -> narrower float rounds once to nearest even; anything -> pred is != 0;
// pred -> number is 0 or 1; integer -> integer wraps. convert_ops_test checks the codecs
// exhaustively (f16/bf16 decode) and on boundary and random values (encode) against the
// evaluator's MiniFloat types.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/eval/eval_util.h"
#include "kiln/hlo/types.h"

namespace kiln::cpu::internal {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 <-> f32 (round to nearest even; NaN stays NaN, quieted).
inline float DecodeBF16(bfloat16 v) { return BitsFloat(uint32_t(v.bits()) << 16); }
inline bfloat16 EncodeBF16(float f) {
  uint32_t u = FloatBits(f);
  uint16_t r;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    r = static_cast<uint16_t>((u >> 16) | 0x40);
  } else {
    r = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  return bfloat16::FromBits(r);
}

// f16 <-> f32 (round to nearest even; overflow to inf; NaN stays NaN, quieted).
inline float DecodeF16(half v) {
  const uint32_t h = v.bits();
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0) {
    float f = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return BitsFloat(FloatBits(f) | sign);
  }
  if (e == 31) return BitsFloat(sign | 0x7f800000u | (m << 13));
  return BitsFloat(sign | ((e + 112u) << 23) | (m << 13));
}
inline half EncodeF16(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  uint32_t h;
  if (a >= 0x7f800000u) {
    h = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (a >= 0x477ff000u) {  // >= 65520: rounds to infinity
    h = 0x7c00u;
  } else if (a < 0x38800000u) {  // below 2^-14: a subnormal (or zero) half
    // a * 2^24 is exact and below 1024; adding and removing 2^23 rounds it to nearest even.
    float t = BitsFloat(a) * 16777216.0f;
    t = (t + 8388608.0f) - 8388608.0f;
    h = static_cast<uint32_t>(t);
  } else {
    h = ((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - (112u << 10);
  }
  return half::FromBits(static_cast<uint16_t>(h | sign));
}

template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// The element types with typed (vectorizable) kernels; the rest (f8*, f4, sub-byte integers)
// go through the evaluator's per-element functions.
template <class T>
inline constexpr bool kIsFastType =
    std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t> ||
    std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t> ||
    std::is_same_v<T, uint64_t> || std::is_same_v<T, float> || std::is_same_v<T, double> ||
    kIsHalfLike<T> || eval_internal::kIsComplex<T>;

inline bool IsFastType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: case PrimitiveType::kS8: case PrimitiveType::kS16:
    case PrimitiveType::kS32: case PrimitiveType::kS64: case PrimitiveType::kU8:
    case PrimitiveType::kU16: case PrimitiveType::kU32: case PrimitiveType::kU64:
    case PrimitiveType::kF16: case PrimitiveType::kBF16: case PrimitiveType::kF32:
    case PrimitiveType::kF64: case PrimitiveType::kC64: case PrimitiveType::kC128:
      return true;
    default:
      return false;
  }
}

// Calls f(PrimitiveTypeConstant<T>{}) for the fast types; returns on_other() for the others.
template <typename F, typename G>
decltype(auto) FastTypeSwitch(PrimitiveType t, F&& f, G&& on_other) {
  switch (t) {
#define KILN_FAST_CASE(e) \
  case PrimitiveType::e:  \
    return f(PrimitiveTypeConstant<PrimitiveType::e>{});
    KILN_FAST_CASE(kPred) KILN_FAST_CASE(kS8) KILN_FAST_CASE(kS16) KILN_FAST_CASE(kS32)
    KILN_FAST_CASE(kS64) KILN_FAST_CASE(kU8) KILN_FAST_CASE(kU16) KILN_FAST_CASE(kU32)
    KILN_FAST_CASE(kU64) KILN_FAST_CASE(kF16) KILN_FAST_CASE(kBF16) KILN_FAST_CASE(kF32)
    KILN_FAST_CASE(kF64) KILN_FAST_CASE(kC64) KILN_FAST_CASE(kC128)
#undef KILN_FAST_CASE
    default:
      return on_other();
  }
}

// The value of a half-like element as float, and back (round to nearest even).
template <class T>
inline float HalfToFloat(T v) {
  if constexpr (std::is_same_v<T, half>) return DecodeF16(v);
  else return DecodeBF16(v);
}
template <class T>
inline T FloatToHalf(float f) {
  if constexpr (std::is_same_v<T, half>) return EncodeF16(f);
  else return EncodeBF16(f);
}

// XLA's float -> integer conversion (as the evaluator: compared in double).
template <class D>
inline D FloatToIntSat(double f) {
  if (std::isnan(f)) return D(0);
  constexpr double kMax = static_cast<double>(std::numeric_limits<D>::max());
  constexpr double kMin = static_cast<double>(std::numeric_limits<D>::lowest());
  if (f >= kMax) return std::numeric_limits<D>::max();
  if (f <= kMin) return std::numeric_limits<D>::lowest();
  return static_cast<D>(f);
}

// The fast-type pairs Convert<D>(S) implements (others: the evaluator's element function).
template <class D, class S>
inline constexpr bool kFastConvert =
    kIsFastType<D> && kIsFastType<S> && !eval_internal::kIsComplex<D> &&
    !eval_internal::kIsComplex<S> &&
    // 64-bit integers into half-like floats need round-to-odd; left to the evaluator.
    !(kIsHalfLike<D> && std::is_integral_v<S> && sizeof(S) == 8);

template <class D, class S>
inline D Convert(S s) {
  using eval_internal::kIsInt;
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    if constexpr (kIsHalfLike<S>) return HalfToFloat(s) != 0.0f;
    else return s != S(0);
  } else if constexpr (std::is_same_v<S, bool>) {
    return Convert<D, int32_t>(s ? 1 : 0);
  } else if constexpr (kIsInt<D> && kIsInt<S>) {
    return eval_internal::FromU64<D>(eval_internal::U64(s));
  } else if constexpr (kIsInt<S>) {  // integer -> float
    if constexpr (kIsHalfLike<D>) {
      if constexpr (sizeof(S) <= 2) return FloatToHalf<D>(static_cast<float>(s));
      else return D(static_cast<double>(s));  // exact in double, one rounding
    } else {
      return static_cast<D>(s);
    }
  } else if constexpr (kIsInt<D>) {  // float -> integer
    if constexpr (kIsHalfLike<S>) return FloatToIntSat<D>(static_cast<double>(HalfToFloat(s)));
    else return FloatToIntSat<D>(static_cast<double>(s));
  } else if constexpr (kIsHalfLike<D>) {  // float -> half-like
    if constexpr (kIsHalfLike<S>) return FloatToHalf<D>(HalfToFloat(s));
    else if constexpr (std::is_same_v<S, float>) return FloatToHalf<D>(s);
    else return D(s);  // from double: the exact single rounding of the MiniFloat codec
  } else {  // float, double from float, double, half-like
    if constexpr (kIsHalfLike<S>) return static_cast<D>(HalfToFloat(s));
    else return static_cast<D>(s);
  }
}

// An int64 (an iota position) as element type T.
template <class T>
inline T FromInt64(int64_t v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (eval_internal::kIsComplex<T>) return T(static_cast<typename T::value_type>(v), 0);
  else if constexpr (kIsIntN<T>) return T(v);
  else if constexpr (kIsMiniFloat<T>) return T(static_cast<double>(v));
  else return static_cast<T>(v);
}

}  // namespace kiln::cpu::internal
