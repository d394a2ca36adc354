// Helpers shared by the evaluator's kernels (internal to src/kiln/eval): native-type traits,
// the "wide" types elementwise arithmetic is done in, and strided element copies.
//
// Arithmetic types, as XLA's evaluator computes them:
//   narrow floats (f16, bf16, f8*, f4)  -> float, rounded back to the narrow type per operation
//   integers of every width             -> int64_t / uint64_t, truncated back (two's complement)
//   f32, f64, c64, c128, pred           -> themselves
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/types.h"

namespace kiln::eval_internal {

// The PrimitiveType whose native type is T (kInvalid when none).
template <typename T>
constexpr PrimitiveType PrimitiveTypeOf() {
#define KILN_PT_OF(e, name, native) \
  if constexpr (std::is_same_v<T, native>) return PrimitiveType::e; else
  KILN_PRIMITIVE_TYPE_LIST(KILN_PT_OF)
#undef KILN_PT_OF
  return PrimitiveType::kInvalid;
}

template <typename T>
inline constexpr bool kIsPred = std::is_same_v<T, bool>;
// Integers of any width (not pred).
template <typename T>
inline constexpr bool kIsInt = kIsIntegralNative<T>;
// Real floating types of any width.
template <typename T>
inline constexpr bool kIsFloat = kIsFloatNative<T>;
template <typename T>
inline constexpr bool kIsComplex = kIsComplexNative<T>;

template <typename T>
constexpr bool IsSignedInt() {
  if constexpr (kIsIntN<T>) return T::kSigned;
  else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T>;
  else return false;
}

// Logical bit width of an integer type (s4: 4, s32: 32).
template <typename T>
constexpr int IntBits() {
  if constexpr (kIsIntN<T>) return T::kBits;
  else return static_cast<int>(sizeof(T) * 8);
}

// The type arithmetic on T is done in.
template <typename T, typename = void>
struct WideOf {
  using type = T;
};
template <typename T>
struct WideOf<T, std::enable_if_t<kIsMiniFloat<T>>> {
  using type = float;
};
template <typename T>
struct WideOf<T, std::enable_if_t<kIsInt<T>>> {
  using type = std::conditional_t<IsSignedInt<T>(), int64_t, uint64_t>;
};
template <typename T>
using Wide = typename WideOf<T>::type;

template <typename T>
inline Wide<T> Widen(T v) {
  if constexpr (kIsMiniFloat<T>) return static_cast<float>(v);
  else if constexpr (kIsIntN<T>) return static_cast<Wide<T>>(static_cast<int64_t>(v));
  else return static_cast<Wide<T>>(v);
}

// Back from the wide type: narrow floats round to nearest even, integers wrap.
template <typename T>
inline T Narrow(Wide<T> v) {
  if constexpr (kIsMiniFloat<T>) return T(v);
  else if constexpr (kIsIntN<T>) return T(static_cast<int64_t>(v));
  else return static_cast<T>(v);
}

// The low `bits` bits set.
inline constexpr uint64_t LowMask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
}

// Raw bits of an integer value, masked to its width.
template <typename T>
inline uint64_t IntBitsOf(T v) {
  return static_cast<uint64_t>(Widen(v)) & LowMask(IntBits<T>());
}

// Sign-extends the low `bits` of v.
inline int64_t SignExtend(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  uint64_t m = uint64_t{1} << (bits - 1);
  v &= LowMask(bits);
  return static_cast<int64_t>((v ^ m) - m);
}

// Integer arithmetic in 64-bit two's complement, truncated back to T.
template <typename T>
inline T FromU64(uint64_t v) {
  return Narrow<T>(static_cast<Wide<T>>(v));
}
template <typename T>
inline uint64_t U64(T v) {
  return static_cast<uint64_t>(Widen(v));
}

// Copies `width`-byte elements: for every index i of `dims` (row-major),
//   out[out_base + sum_d i_d * out_strides[d]] = in[in_base + sum_d i_d * in_strides[d]]
// Offsets and strides are in elements and may be negative (reverse).
void StridedCopy(const uint8_t* in, uint8_t* out, int64_t width, std::span<const int64_t> dims,
                 std::span<const int64_t> in_strides, int64_t in_base,
                 std::span<const int64_t> out_strides, int64_t out_base);

// Row-major strides of an array shape's dimensions.
inline std::vector<int64_t> StridesOf(const Shape& shape) { return RowMajorStrides(shape.dimensions()); }

// InvalidArgument unless `l` is an array literal.
Status ExpectArray(const Literal& l, const HloInstruction& instr, std::string_view what);

// A literal of the array shape `shape` without a layout check; the shape's layout is kept.
inline Literal MakeArray(const Shape& shape) { return Literal(shape); }

// The integer value of a scalar index literal, clamped into [lo, hi] (handles u64 values above
// INT64_MAX, which clamp to hi).
int64_t ClampedIndex(const Literal& index, int64_t element, int64_t lo, int64_t hi);

// Bit streams as bitcast-convert and sub-byte bitcasts see them (eval/convert.cc): the
// elements of `l` packed little-endian at their bit width (pred: a byte), and back into `out`.
int BitcastWidth(PrimitiveType t);
std::vector<uint8_t> PackBits(const Literal& l);
void UnpackBits(const std::vector<uint8_t>& bytes, Literal& out);

}  // namespace kiln::eval_internal
