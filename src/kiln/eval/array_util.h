// Array helpers for the dot/convolution, gather/scatter, sort and misc kernels (internal to
// src/kiln/eval): row-major index iteration, bulk conversion of literals to and from the wide
// types those kernels compute in, and dimension permutation.
//
// Wide types: real values as double, complex values as std::complex<double>, integers as
// int64_t (unsigned 64-bit values keep their bit pattern). Storing back follows XLA's convert:
// floats round once to nearest even from the double; float -> integer truncates toward zero,
// saturates at the type's range and maps NaN to 0; integer -> integer wraps modulo 2^bits.
#pragma once

#include <complex>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/types.h"

namespace kiln::eval_internal {

// Product of the sizes (1 for an empty list).
int64_t ElementProduct(std::span<const int64_t> dims);

// Advances a row-major multi-index over `dims` (last dimension fastest). Returns false, with
// `index` back at all zeros, after the last index.
bool NextRowMajorIndex(std::span<int64_t> index, std::span<const int64_t> dims);

// Whole-array conversions of an array literal into the wide types. Complex sources give their
// real part to LiteralToDoubles; pred gives 0/1.
std::vector<double> LiteralToDoubles(const Literal& l);
std::vector<std::complex<double>> LiteralToComplexes(const Literal& l);
// Integers as their value (u64 keeps its bits); floats convert as XLA's convert to s64 does.
std::vector<int64_t> LiteralToInt64s(const Literal& l);

// Stores wide values into every element of the array literal `out` (sizes must match), with
// XLA's convert semantics (see above). Storing doubles into a complex literal sets the real
// part; storing complexes into a real literal drops the imaginary part; storing int64s into a
// float literal rounds once.
void StoreDoubles(std::span<const double> values, Literal& out);
void StoreComplexes(std::span<const std::complex<double>> values, Literal& out);
void StoreInt64s(std::span<const int64_t> values, Literal& out);

// XLA's float -> integer convert of one value to `t` (truncate, saturate, NaN -> 0), as int64.
int64_t SaturatingFloatToInt(double v, PrimitiveType t);

// One element of native type T read into the wide type W (float, double, complex<double> or
// int64_t). W = float is only for the types float holds exactly (f32 and narrower floats);
// W = int64_t converts floats as XLA's convert to the integer type `int_type` does.
template <typename W, typename T>
W WidenElement(const T& v, PrimitiveType int_type = PrimitiveType::kS64) {
  if constexpr (std::is_same_v<W, std::complex<double>>) {
    if constexpr (kIsComplexNative<T>) {
      return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
    } else {
      return WidenElement<double>(v);
    }
  } else if constexpr (std::is_same_v<W, int64_t>) {
    if constexpr (kIsIntN<T>) {
      return static_cast<int64_t>(v);
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(v);  // bool -> 0/1; u64 keeps its bits
    } else {
      return SaturatingFloatToInt(WidenElement<double>(v), int_type);
    }
  } else {  // float or double
    if constexpr (kIsComplexNative<T>) {
      return static_cast<W>(v.real());
    } else if constexpr (kIsMiniFloat<T>) {
      return static_cast<W>(v.ToDouble());
    } else if constexpr (kIsIntN<T>) {
      return static_cast<W>(static_cast<int64_t>(v));
    } else {
      return static_cast<W>(v);
    }
  }
}

// A wide value stored into native type T (PrimitiveType t) with XLA's convert semantics:
// floats round once to nearest even; float -> integer saturates (NaN -> 0); integer -> integer
// wraps; complex -> real drops the imaginary part.
template <typename T, typename W>
T NarrowElement(const W& v, PrimitiveType t) {
  if constexpr (std::is_same_v<W, std::complex<double>>) {
    if constexpr (kIsComplexNative<T>) {
      using C = typename T::value_type;
      return T(static_cast<C>(v.real()), static_cast<C>(v.imag()));
    } else {
      return NarrowElement<T>(v.real(), t);
    }
  } else if constexpr (std::is_same_v<W, int64_t>) {
    if constexpr (kIsComplexNative<T>) {
      return T(static_cast<typename T::value_type>(v), 0);
    } else if constexpr (std::is_same_v<T, bool>) {
      return v != 0;
    } else if constexpr (kIsMiniFloat<T>) {
      return T(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else if constexpr (kIsIntN<T>) {
      return T(v);  // wraps
    } else {
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<uint64_t>(v)));
    }
  } else {
    const double d = static_cast<double>(v);
    if constexpr (kIsComplexNative<T>) {
      return T(static_cast<typename T::value_type>(d), 0);
    } else if constexpr (std::is_same_v<T, bool>) {
      return d != 0;
    } else if constexpr (kIsMiniFloat<T>) {
      return T(d);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(d);
    } else if constexpr (kIsIntN<T>) {
      return T(SaturatingFloatToInt(d, t));
    } else {
      return static_cast<T>(SaturatingFloatToInt(d, t));
    }
  }
}

// Copies a row-major array of `dims` into `dst` with its dimensions permuted, converting each
// element with `convert`: dst has dimensions dims[perm[0]], dims[perm[1]], ... (row-major).
template <typename Src, typename Dst, typename Convert>
void PermuteConvertInto(const Src* src, std::span<const int64_t> dims,
                        std::span<const int64_t> perm, Dst* dst, Convert convert) {
  const size_t rank = dims.size();
  std::vector<int64_t> src_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) src_strides[i - 1] = src_strides[i] * dims[i];
  std::vector<int64_t> out_dims(rank), strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = dims[perm[i]];
    strides[i] = src_strides[perm[i]];
  }
  const int64_t n = ElementProduct(out_dims);
  if (n == 0) return;
  if (rank == 0) {
    dst[0] = convert(src[0]);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  const int64_t inner = out_dims[rank - 1], inner_stride = strides[rank - 1];
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t j = 0; j < inner; ++j) dst[o + j] = convert(src[offset + j * inner_stride]);
    // Advance all but the innermost dimension.
    for (size_t d = rank - 1; d-- > 0;) {
      ++index[d];
      offset += strides[d];
      if (index[d] < out_dims[d]) break;
      offset -= strides[d] * out_dims[d];
      index[d] = 0;
    }
  }
}

// PermuteConvertInto without a conversion.
template <typename T>
void PermuteInto(const T* src, std::span<const int64_t> dims, std::span<const int64_t> perm,
                 T* dst) {
  PermuteConvertInto(src, dims, perm, dst, [](const T& v) { return v; });
}

// The array literal `l` permuted (as PermuteInto) and converted to the wide type W.
template <typename W>
std::vector<W> PermuteToWide(const Literal& l, std::span<const int64_t> perm,
                             PrimitiveType int_type = PrimitiveType::kS64) {
  std::vector<W> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    PermuteConvertInto(l.data<T>().data(), l.shape().dimensions(), perm, out.data(),
                       [&](const T& v) { return WidenElement<W>(v, int_type); });
  });
  return out;
}

// Stores wide values laid out row-major over `dims` into `out`, whose dimensions are `dims`
// permuted by `perm` (out dimension i is dims[perm[i]]), with NarrowElement's conversions.
template <typename W>
void StorePermuted(const W* src, std::span<const int64_t> dims, std::span<const int64_t> perm,
                   Literal& out) {
  const PrimitiveType t = out.shape().element_type();
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    PermuteConvertInto(src, dims, perm, out.data<T>().data(),
                       [&](const W& v) { return NarrowElement<T>(v, t); });
  });
}

// InvalidArgument naming the instruction unless `l` is an array literal of rank `rank` (-1 for
// any rank).
Status ExpectArrayOperand(const HloInstruction& instr, const Literal& l, int64_t operand,
                          int64_t rank = -1);

}  // namespace kiln::eval_internal
