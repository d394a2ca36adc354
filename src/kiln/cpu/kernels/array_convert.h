// Whole-array conversions into and out of the types the dot and convolution kernels compute in
// (internal to src/kiln/cpu/kernels).
//
// Real and complex results are computed in float / double / complex<float> / complex<double>
// ("C"): operands are converted exactly where the compute type can hold them (every narrow
// float fits in f32), results are rounded once into the result type. Integer and pred results
// are computed in wrapping unsigned arithmetic ("Acc", 32 or 64 bits); operands convert as XLA's
// evaluator does: floats to the result type (truncate, saturate, NaN -> 0), integers by value.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kiln/cpu/kernels/convert_ops.h"
#include "kiln/eval/array_util.h"

namespace kiln::cpu::internal {

template <class C>
inline constexpr bool kIsComplexCompute =
    std::is_same_v<C, std::complex<float>> || std::is_same_v<C, std::complex<double>>;

template <class C>
void ToCompute(PrimitiveType t, const void* src, C* dst, int64_t n) {
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    const T* s = static_cast<const T*>(src);
    if constexpr (eval_internal::kIsComplex<T>) {
      if constexpr (kIsComplexCompute<C>) {
        for (int64_t i = 0; i < n; ++i) dst[i] = C(s[i].real(), s[i].imag());
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(s[i].real());
      }
    } else if constexpr (kIsHalfLike<T>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = C(HalfToFloat(s[i]));
    } else if constexpr (kIsMiniFloat<T>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = C(static_cast<float>(s[i]));
    } else if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = C(s[i] ? 1 : 0);
    } else if constexpr (eval_internal::kIsInt<T>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = C(static_cast<double>(eval_internal::Widen(s[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = C(s[i]);
    }
  });
}

template <class C>
void FromCompute(const C* src, PrimitiveType t, void* dst, int64_t n) {
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    T* d = static_cast<T*>(dst);
    if constexpr (eval_internal::kIsComplex<T>) {
      if constexpr (kIsComplexCompute<C>) {
        for (int64_t i = 0; i < n; ++i) d[i] = T(src[i].real(), src[i].imag());
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = T(src[i], 0);
      }
    } else if constexpr (kIsComplexCompute<C>) {
      // Complex into real (does not occur for valid dots): the real part.
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(src[i].real());
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = T();
      }
    } else if constexpr (kIsHalfLike<T> && std::is_same_v<C, float>) {
      for (int64_t i = 0; i < n; ++i) d[i] = FloatToHalf<T>(src[i]);
    } else if constexpr (kIsMiniFloat<T>) {
      for (int64_t i = 0; i < n; ++i) d[i] = T(static_cast<double>(src[i]));
    } else if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(src[i]);
    } else {
      // Integer or pred results are computed by the integer path.
      for (int64_t i = 0; i < n; ++i) d[i] = T();
    }
  });
}

// Operand values for an integer / pred result of type `rt`, as Acc.
template <class Acc>
void ToIntAcc(PrimitiveType t, const void* src, PrimitiveType rt, Acc* dst, int64_t n) {
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    const T* s = static_cast<const T*>(src);
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i] ? 1 : 0;
    } else if constexpr (eval_internal::kIsInt<T>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Acc>(eval_internal::Widen(s[i]));
    } else {
      double v = 0;
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (eval_internal::kIsComplex<T>) v = s[i].real();
        else v = static_cast<double>(s[i]);
        dst[i] = static_cast<Acc>(eval_internal::SaturatingFloatToInt(v, rt));
      }
    }
  });
}

template <class Acc>
void FromIntAcc(const Acc* src, PrimitiveType t, void* dst, int64_t n) {
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    T* d = static_cast<T*>(dst);
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < n; ++i) d[i] = src[i] != 0;
    } else if constexpr (eval_internal::kIsInt<T>) {
      for (int64_t i = 0; i < n; ++i) d[i] = eval_internal::FromU64<T>(static_cast<uint64_t>(src[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = T();
    }
  });
}

// Copies a row-major array of `dims` with `width`-byte elements into dst with its dimensions
// permuted (dst dim i = src dim perm[i]).
inline void PermuteBytes(const void* src, std::span<const int64_t> dims,
                         std::span<const int64_t> perm, void* dst, int width) {
  auto run = [&](auto tag) {
    using U = decltype(tag);
    eval_internal::PermuteInto(static_cast<const U*>(src), dims, perm, static_cast<U*>(dst));
  };
  struct B16 {
    uint64_t a, b;
  };
  switch (width) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    case 8: run(uint64_t{}); break;
    case 16: run(B16{}); break;
    default: break;
  }
}

}  // namespace kiln::cpu::internal
