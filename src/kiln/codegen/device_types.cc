#include "kiln/codegen/device_types.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kiln/base/strings.h"

namespace kiln::codegen {

bool IsDeviceSupportedType(PrimitiveType t) { return IsArrayType(t); }

bool IsNarrowFloat(PrimitiveType t) {
  return IsFloatingPointType(t) && t != PrimitiveType::kF32 && t != PrimitiveType::kF64;
}

int SubByteBits(PrimitiveType t) {
  return IsSubByteType(t) && IsIntegralType(t) ? PrimitiveBitWidth(t) : 0;
}

std::string NarrowFloatName(PrimitiveType t) {
  if (!IsNarrowFloat(t)) return "";
  return std::string(PrimitiveTypeName(t));
}

std::string RegisterType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: return "bool";
    case PrimitiveType::kS1:
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kS8: return "s8";
    case PrimitiveType::kS16: return "s16";
    case PrimitiveType::kS32: return "s32";
    case PrimitiveType::kS64: return "s64";
    case PrimitiveType::kU1:
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8: return "u8";
    case PrimitiveType::kU16: return "u16";
    case PrimitiveType::kU32: return "u32";
    case PrimitiveType::kU64: return "u64";
    case PrimitiveType::kF64: return "double";
    case PrimitiveType::kC64: return "kiln_c64";
    case PrimitiveType::kC128: return "kiln_c128";
    default: return "float";  // f32 and the narrow floats
  }
}

std::string StorageType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: return "u8";
    case PrimitiveType::kF16: return "__half";
    case PrimitiveType::kBF16: return "__nv_bfloat16";
    case PrimitiveType::kF32: return "float";
    default:
      if (IsNarrowFloat(t)) return "u8";
      return RegisterType(t);
  }
}

int StorageBytes(PrimitiveType t) { return PrimitiveByteWidth(t); }

int RegisterBytes(PrimitiveType t) {
  if (IsNarrowFloat(t)) return 4;
  if (t == PrimitiveType::kPred || SubByteBits(t) > 0) return 1;
  return PrimitiveByteWidth(t);
}

std::string LoadConvert(PrimitiveType t, const std::string& s) {
  switch (t) {
    case PrimitiveType::kPred: return "(" + s + " != 0)";
    case PrimitiveType::kF16: return "kiln_load_f16(" + s + ")";
    case PrimitiveType::kBF16: return "kiln_load_bf16(" + s + ")";
    default:
      if (IsNarrowFloat(t)) return "kiln_decode_" + NarrowFloatName(t) + "(" + s + ")";
      return s;
  }
}

std::string StoreConvert(PrimitiveType t, const std::string& v) {
  switch (t) {
    case PrimitiveType::kPred: return "(u8)(" + v + ")";
    case PrimitiveType::kF16: return "kiln_store_f16(" + v + ")";
    case PrimitiveType::kBF16: return "kiln_store_bf16(" + v + ")";
    default:
      if (IsNarrowFloat(t)) return "kiln_encode_" + NarrowFloatName(t) + "(" + v + ")";
      return v;
  }
}

std::string RoundFloat(PrimitiveType t, const std::string& v) {
  if (!IsNarrowFloat(t)) return v;
  return "kiln_round_" + NarrowFloatName(t) + "(" + v + ")";
}

std::string RoundArithmetic(PrimitiveType t, const std::string& v) {
  if (t == PrimitiveType::kBF16) return "kiln_round_bf16_arith(" + v + ")";
  return RoundFloat(t, v);
}

std::string WrapInt(PrimitiveType t, const std::string& v) {
  int bits = SubByteBits(t);
  if (bits == 0) return v;
  return "kiln_wrap<" + std::to_string(bits) + ">((" + RegisterType(t) + ")(" + v + "))";
}

std::string FloatLiteral(double v, PrimitiveType t) {
  const bool is_double = t == PrimitiveType::kF64 || t == PrimitiveType::kC128;
  if (std::isnan(v)) return is_double ? "KILN_NAN_D" : "KILN_NAN_F";
  if (std::isinf(v)) {
    std::string s = is_double ? "KILN_INF_D" : "KILN_INF_F";
    return v < 0 ? "(-" + s + ")" : s;
  }
  char buf[64];
  if (is_double) {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(static_cast<float>(v)));
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  if (!is_double) s += "f";
  if (v < 0 || (v == 0 && std::signbit(v))) s = "(" + s + ")";
  return s;
}

std::string IntLiteral(int64_t v, PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS64:
      if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return v < 0 ? "(" + std::to_string(v) + "LL)" : std::to_string(v) + "LL";
    case PrimitiveType::kU64: return std::to_string(static_cast<uint64_t>(v)) + "ull";
    case PrimitiveType::kS32:
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
    case PrimitiveType::kU32: return std::to_string(static_cast<uint32_t>(v)) + "u";
    default:
      return "((" + RegisterType(t) + ")" + std::to_string(v) + ")";
  }
}

std::string ZeroLiteral(PrimitiveType t) {
  if (t == PrimitiveType::kPred) return "false";
  if (IsComplexType(t)) return RegisterType(t) + "{0, 0}";
  if (IsFloatingPointType(t)) return FloatLiteral(0, t);
  return IntLiteral(0, t);
}

std::string OneLiteral(PrimitiveType t) {
  if (t == PrimitiveType::kPred) return "true";
  if (IsComplexType(t)) return RegisterType(t) + "{1, 0}";
  if (IsFloatingPointType(t)) return FloatLiteral(1, t);
  return IntLiteral(1, t);
}

StatusOr<std::string> ElementLiteral(const Literal& literal, int64_t i) {
  PrimitiveType t = literal.shape().element_type();
  if (!IsArrayType(t)) return InvalidArgument("constant of non-array type");
  if (t == PrimitiveType::kPred) return std::string(literal.GetAsBool(i) ? "true" : "false");
  if (t == PrimitiveType::kF32) {
    float f = literal.data<float>()[i];
    if (std::isnan(f)) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      char buf[48];
      std::snprintf(buf, sizeof(buf), "__uint_as_float(0x%08" PRIx32 "u)", bits);
      return std::string(buf);
    }
    return FloatLiteral(f, t);
  }
  if (t == PrimitiveType::kF64) return FloatLiteral(literal.data<double>()[i], t);
  if ((t == PrimitiveType::kF16 || t == PrimitiveType::kBF16) && std::isnan(literal.GetAsDouble(i))) {
    // A NaN keeps its payload (Note [Narrow floats in registers]).
    uint16_t bits;
    std::memcpy(&bits, literal.untyped_data() + i * 2, 2);
    char buf[48];
    std::snprintf(buf, sizeof(buf), "kiln_%s_from_bits(0x%04xu)", t == PrimitiveType::kF16 ? "f16" : "bf16",
                  unsigned{bits});
    return std::string(buf);
  }
  if (IsFloatingPointType(t)) return FloatLiteral(literal.GetAsDouble(i), PrimitiveType::kF32);
  if (t == PrimitiveType::kC64) {
    auto c = literal.data<std::complex<float>>()[i];
    return "kiln_c64{" + FloatLiteral(c.real(), PrimitiveType::kF32) + ", " +
           FloatLiteral(c.imag(), PrimitiveType::kF32) + "}";
  }
  if (t == PrimitiveType::kC128) {
    auto c = literal.data<std::complex<double>>()[i];
    return "kiln_c128{" + FloatLiteral(c.real(), PrimitiveType::kF64) + ", " +
           FloatLiteral(c.imag(), PrimitiveType::kF64) + "}";
  }
  if (t == PrimitiveType::kU64) return IntLiteral(static_cast<int64_t>(literal.data<uint64_t>()[i]), t);
  return IntLiteral(literal.GetAsInt64(i), t);
}

uint32_t RegisterFloatBits(const Literal& literal, int64_t i) {
  const PrimitiveType t = literal.shape().element_type();
  uint32_t bits;
  if (t == PrimitiveType::kF32) {
    std::memcpy(&bits, literal.untyped_data() + i * 4, 4);
    return bits;
  }
  if (t == PrimitiveType::kBF16 || t == PrimitiveType::kF16) {
    uint16_t h;
    std::memcpy(&h, literal.untyped_data() + i * 2, 2);
    if (t == PrimitiveType::kBF16) return uint32_t{h} << 16;
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0u)
      return ((uint32_t{h} & 0x8000u) << 16) | 0x7f800000u | ((uint32_t{h} & 0x3ffu) << 13);
  }
  const float f = static_cast<float>(literal.GetAsDouble(i));
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) bits = (bits & 0x80000000u) | 0x7fc00000u;  // kiln_decode_*'s NaN
  return bits;
}

const char* CodegenPreludeName() { return "kiln_codegen.cuh"; }

}  // namespace kiln::codegen
