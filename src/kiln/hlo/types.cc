#include "kiln/hlo/types.h"

namespace kiln {

std::string_view PrimitiveTypeName(PrimitiveType t) {
  switch (t) {
#define KILN_NAME_CASE(e, name, native) \
  case PrimitiveType::e:                \
    return name;
    KILN_PRIMITIVE_TYPE_LIST(KILN_NAME_CASE)
#undef KILN_NAME_CASE
    case PrimitiveType::kTuple: return "tuple";
    case PrimitiveType::kToken: return "token";
    case PrimitiveType::kOpaque: return "opaque";
    case PrimitiveType::kInvalid: return "invalid";
  }
  return "invalid";
}

std::optional<PrimitiveType> ParsePrimitiveType(std::string_view name) {
#define KILN_PARSE_CASE(e, n, native) \
  if (name == n) return PrimitiveType::e;
  KILN_PRIMITIVE_TYPE_LIST(KILN_PARSE_CASE)
#undef KILN_PARSE_CASE
  if (name == "token") return PrimitiveType::kToken;
  if (name == "opaque") return PrimitiveType::kOpaque;
  return std::nullopt;
}

int PrimitiveBitWidth(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: case PrimitiveType::kS1: case PrimitiveType::kU1: return 1;
    case PrimitiveType::kS2: case PrimitiveType::kU2: return 2;
    case PrimitiveType::kS4: case PrimitiveType::kU4: case PrimitiveType::kF4E2M1FN: return 4;
    case PrimitiveType::kS8: case PrimitiveType::kU8: case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E4M3FN: case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E5M2FNUZ: case PrimitiveType::kF8E4M3FNUZ:
    case PrimitiveType::kF8E4M3: case PrimitiveType::kF8E3M4: case PrimitiveType::kF8E8M0FNU:
      return 8;
    case PrimitiveType::kS16: case PrimitiveType::kU16: case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
      return 16;
    case PrimitiveType::kS32: case PrimitiveType::kU32: case PrimitiveType::kF32: return 32;
    case PrimitiveType::kS64: case PrimitiveType::kU64: case PrimitiveType::kF64:
    case PrimitiveType::kC64:
      return 64;
    case PrimitiveType::kC128: return 128;
    default: return 0;
  }
}

int PrimitiveByteWidth(PrimitiveType t) {
  int bits = PrimitiveBitWidth(t);
  if (bits == 0) return 0;
  return bits < 8 ? 1 : bits / 8;
}

bool IsArrayType(PrimitiveType t) {
  return t != PrimitiveType::kInvalid && t != PrimitiveType::kTuple &&
         t != PrimitiveType::kToken && t != PrimitiveType::kOpaque;
}

bool IsFloatingPointType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16: case PrimitiveType::kBF16: case PrimitiveType::kF32:
    case PrimitiveType::kF64:
      return true;
    default:
      return IsF8Type(t) || t == PrimitiveType::kF4E2M1FN;
  }
}

bool IsF8Type(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF8E5M2: case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ: case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E4M3FNUZ: case PrimitiveType::kF8E4M3: case PrimitiveType::kF8E3M4:
    case PrimitiveType::kF8E8M0FNU:
      return true;
    default:
      return false;
  }
}

bool IsComplexType(PrimitiveType t) {
  return t == PrimitiveType::kC64 || t == PrimitiveType::kC128;
}

bool IsSignedIntegralType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS1: case PrimitiveType::kS2: case PrimitiveType::kS4:
    case PrimitiveType::kS8: case PrimitiveType::kS16: case PrimitiveType::kS32:
    case PrimitiveType::kS64:
      return true;
    default:
      return false;
  }
}

bool IsUnsignedIntegralType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kU1: case PrimitiveType::kU2: case PrimitiveType::kU4:
    case PrimitiveType::kU8: case PrimitiveType::kU16: case PrimitiveType::kU32:
    case PrimitiveType::kU64:
      return true;
    default:
      return false;
  }
}

bool IsIntegralType(PrimitiveType t) {
  return IsSignedIntegralType(t) || IsUnsignedIntegralType(t);
}

bool IsSubByteType(PrimitiveType t) {
  return t != PrimitiveType::kPred && IsArrayType(t) && PrimitiveBitWidth(t) < 8;
}

PrimitiveType ComplexComponentType(PrimitiveType t) {
  if (t == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (t == PrimitiveType::kC128) return PrimitiveType::kF64;
  return PrimitiveType::kInvalid;
}

const FloatFormat* MiniFloatFormatOf(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16: return &kF16Format;
    case PrimitiveType::kBF16: return &kBF16Format;
    case PrimitiveType::kF8E5M2: return &kF8E5M2Format;
    case PrimitiveType::kF8E4M3FN: return &kF8E4M3FNFormat;
    case PrimitiveType::kF8E4M3B11FNUZ: return &kF8E4M3B11FNUZFormat;
    case PrimitiveType::kF8E5M2FNUZ: return &kF8E5M2FNUZFormat;
    case PrimitiveType::kF8E4M3FNUZ: return &kF8E4M3FNUZFormat;
    case PrimitiveType::kF8E4M3: return &kF8E4M3Format;
    case PrimitiveType::kF8E3M4: return &kF8E3M4Format;
    case PrimitiveType::kF8E8M0FNU: return &kF8E8M0FNUFormat;
    case PrimitiveType::kF4E2M1FN: return &kF4E2M1FNFormat;
    default: return nullptr;
  }
}

int ExponentBits(PrimitiveType t) {
  if (t == PrimitiveType::kF32) return 8;
  if (t == PrimitiveType::kF64) return 11;
  const FloatFormat* f = MiniFloatFormatOf(t);
  return f ? f->exponent_bits : 0;
}

int MantissaBits(PrimitiveType t) {
  if (t == PrimitiveType::kF32) return 23;
  if (t == PrimitiveType::kF64) return 52;
  const FloatFormat* f = MiniFloatFormatOf(t);
  return f ? f->mantissa_bits : 0;
}

}  // namespace kiln
