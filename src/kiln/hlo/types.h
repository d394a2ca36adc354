// Element types of HLO (XLA's PrimitiveType) and their native C++ representations.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "kiln/base/status.h"
#include "kiln/hlo/float_types.h"

namespace kiln {

#define KILN_PRIMITIVE_TYPE_LIST(V)                 \
  V(kPred, "pred", bool)                            \
  V(kS1, "s1", int1)                                \
  V(kS2, "s2", int2)                                \
  V(kS4, "s4", int4)                                \
  V(kS8, "s8", int8_t)                              \
  V(kS16, "s16", int16_t)                           \
  V(kS32, "s32", int32_t)                           \
  V(kS64, "s64", int64_t)                           \
  V(kU1, "u1", uint1)                               \
  V(kU2, "u2", uint2)                               \
  V(kU4, "u4", uint4)                               \
  V(kU8, "u8", uint8_t)                             \
  V(kU16, "u16", uint16_t)                          \
  V(kU32, "u32", uint32_t)                          \
  V(kU64, "u64", uint64_t)                          \
  V(kF16, "f16", half)                              \
  V(kBF16, "bf16", bfloat16)                        \
  V(kF32, "f32", float)                             \
  V(kF64, "f64", double)                            \
  V(kF8E5M2, "f8e5m2", float8_e5m2)                 \
  V(kF8E4M3FN, "f8e4m3fn", float8_e4m3fn)           \
  V(kF8E4M3B11FNUZ, "f8e4m3b11fnuz", float8_e4m3b11fnuz) \
  V(kF8E5M2FNUZ, "f8e5m2fnuz", float8_e5m2fnuz)     \
  V(kF8E4M3FNUZ, "f8e4m3fnuz", float8_e4m3fnuz)     \
  V(kF8E4M3, "f8e4m3", float8_e4m3)                 \
  V(kF8E3M4, "f8e3m4", float8_e3m4)                 \
  V(kF8E8M0FNU, "f8e8m0fnu", float8_e8m0fnu)        \
  V(kF4E2M1FN, "f4e2m1fn", float4_e2m1fn)           \
  V(kC64, "c64", std::complex<float>)               \
  V(kC128, "c128", std::complex<double>)

enum class PrimitiveType : uint8_t {
  kInvalid = 0,
#define KILN_DECLARE_PT(e, name, native) e,
  KILN_PRIMITIVE_TYPE_LIST(KILN_DECLARE_PT)
#undef KILN_DECLARE_PT
  kTuple,
  kToken,
  kOpaque,
};

// "f32", "bf16", "pred", "token", "opaque", ... as HLO text spells them.
std::string_view PrimitiveTypeName(PrimitiveType t);
// Inverse of PrimitiveTypeName (array types, token and opaque; not tuple).
std::optional<PrimitiveType> ParsePrimitiveType(std::string_view name);

// Logical width in bits (pred: 1, s4: 4, f4e2m1fn: 4, c64: 64). 0 for tuple/token/opaque.
int PrimitiveBitWidth(PrimitiveType t);
// Bytes one element takes in a Literal or a host buffer: sub-byte types take one byte each,
// pred takes one byte.
int PrimitiveByteWidth(PrimitiveType t);

bool IsArrayType(PrimitiveType t);  // everything but tuple, token, opaque, invalid
bool IsFloatingPointType(PrimitiveType t);  // real floats, not complex
bool IsComplexType(PrimitiveType t);
bool IsSignedIntegralType(PrimitiveType t);
bool IsUnsignedIntegralType(PrimitiveType t);
bool IsIntegralType(PrimitiveType t);  // signed or unsigned, not pred
bool IsF8Type(PrimitiveType t);
bool IsSubByteType(PrimitiveType t);  // pred is not counted; s1..s4, u1..u4, f4e2m1fn are
// Component type of a complex type (c64 -> f32, c128 -> f64).
PrimitiveType ComplexComponentType(PrimitiveType t);
// Number of exponent/mantissa bits of a real floating type (f32: 8/23).
int ExponentBits(PrimitiveType t);
int MantissaBits(PrimitiveType t);
// The narrow float format description, or nullptr for f32/f64/non-floats.
const FloatFormat* MiniFloatFormatOf(PrimitiveType t);

// NativeTypeOf<PrimitiveType::kF32> is float, and so on.
template <PrimitiveType T>
struct NativeTypeOfImpl;
#define KILN_NATIVE_OF(e, name, native)             \
  template <>                                       \
  struct NativeTypeOfImpl<PrimitiveType::e> {       \
    using type = native;                            \
  };
KILN_PRIMITIVE_TYPE_LIST(KILN_NATIVE_OF)
#undef KILN_NATIVE_OF
template <PrimitiveType T>
using NativeTypeOf = typename NativeTypeOfImpl<T>::type;

template <PrimitiveType T>
using PrimitiveTypeConstant = std::integral_constant<PrimitiveType, T>;

// Calls f(PrimitiveTypeConstant<T>{}) for the array type t and returns its result. Every
// branch must return the same type. t must be an array type (checked by the caller; an
// invalid type reaches the fallback `on_invalid()`).
//
//   double v = ArrayTypeSwitch(t, [&](auto tag) {
//     using T = NativeTypeOf<decltype(tag)::value>;
//     ...
//   });
template <typename F>
decltype(auto) ArrayTypeSwitch(PrimitiveType t, F&& f) {
  switch (t) {
#define KILN_SWITCH_CASE(e, name, native) \
  case PrimitiveType::e:                  \
    return f(PrimitiveTypeConstant<PrimitiveType::e>{});
    KILN_PRIMITIVE_TYPE_LIST(KILN_SWITCH_CASE)
#undef KILN_SWITCH_CASE
    default:
      break;
  }
  // Unreachable for array types; callers check IsArrayType first.
  assert(false && "ArrayTypeSwitch on a non-array type");
  return f(PrimitiveTypeConstant<PrimitiveType::kPred>{});
}

// Traits over native types.
template <typename T>
inline constexpr bool kIsComplexNative =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <typename T>
inline constexpr bool kIsFloatNative =
    std::is_floating_point_v<T> || kIsMiniFloat<T>;
template <typename T>
inline constexpr bool kIsIntegralNative =
    (std::is_integral_v<T> && !std::is_same_v<T, bool>) || kIsIntN<T>;

}  // namespace kiln
