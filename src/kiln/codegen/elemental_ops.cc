#include "kiln/codegen/elemental_ops.h"

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"

namespace kiln::codegen {

namespace {

bool IsF64Like(PrimitiveType t) { return t == PrimitiveType::kF64; }

// The bit width an integer type's operations wrap at.
int IntBits(PrimitiveType t) {
  int sub = SubByteBits(t);
  return sub > 0 ? sub : PrimitiveBitWidth(t);
}

std::string Bits(PrimitiveType t) { return std::to_string(IntBits(t)); }

// A real float function: f32 name for f32/narrow, f64 name for f64.
std::string FloatCall(PrimitiveType t, const char* f32, const char* f64, const std::string& args) {
  return RoundFloat(t, std::string(IsF64Like(t) ? f64 : f32) + "(" + args + ")");
}

std::string Min(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS8: return IntLiteral(-128, t);
    case PrimitiveType::kS16: return IntLiteral(-32768, t);
    case PrimitiveType::kS32: return IntLiteral(INT32_MIN, t);
    case PrimitiveType::kS64: return IntLiteral(INT64_MIN, t);
    default:
      if (SubByteBits(t) > 0 && IsSignedIntegralType(t)) return IntLiteral(-(int64_t{1} << (SubByteBits(t) - 1)), t);
      return IntLiteral(0, t);
  }
}

std::string Max(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS8: return IntLiteral(127, t);
    case PrimitiveType::kS16: return IntLiteral(32767, t);
    case PrimitiveType::kS32: return IntLiteral(INT32_MAX, t);
    case PrimitiveType::kS64: return IntLiteral(INT64_MAX, t);
    case PrimitiveType::kU8: return IntLiteral(255, t);
    case PrimitiveType::kU16: return IntLiteral(65535, t);
    case PrimitiveType::kU32: return IntLiteral(UINT32_MAX, t);
    case PrimitiveType::kU64: return "18446744073709551615ull";
    default: {
      int b = SubByteBits(t);
      if (IsSignedIntegralType(t)) return IntLiteral((int64_t{1} << (b - 1)) - 1, t);
      return IntLiteral((int64_t{1} << b) - 1, t);
    }
  }
}

// The unsigned register type of the same width as integer type t.
PrimitiveType UnsignedOf(PrimitiveType t) {
  switch (PrimitiveBitWidth(t) <= 8 ? 8 : PrimitiveBitWidth(t)) {
    case 8: return PrimitiveType::kU8;
    case 16: return PrimitiveType::kU16;
    case 32: return PrimitiveType::kU32;
    default: return PrimitiveType::kU64;
  }
}
PrimitiveType SignedOf(PrimitiveType t) {
  switch (PrimitiveBitWidth(t) <= 8 ? 8 : PrimitiveBitWidth(t)) {
    case 8: return PrimitiveType::kS8;
    case 16: return PrimitiveType::kS16;
    case 32: return PrimitiveType::kS32;
    default: return PrimitiveType::kS64;
  }
}


// Raw bits of a register value, as an unsigned integer expression.
StatusOr<std::string> ToBits(PrimitiveType t, const std::string& x) {
  switch (t) {
    case PrimitiveType::kF32: return "__float_as_uint(" + x + ")";
    case PrimitiveType::kF64: return "(u64)__double_as_longlong(" + x + ")";
    case PrimitiveType::kF16: return "kiln_f16_bits(" + x + ")";
    case PrimitiveType::kBF16: return "kiln_bf16_bits(" + x + ")";
    case PrimitiveType::kPred: return "(u32)(" + x + ")";
    default:
      if (IsNarrowFloat(t)) return "(u32)kiln_encode_" + NarrowFloatName(t) + "(" + x + ")";
      if (IsIntegralType(t)) {
        int sub = SubByteBits(t);
        if (sub > 0) return "((u32)(u8)(" + x + ") & " + std::to_string((1 << sub) - 1) + "u)";
        return "(" + RegisterType(UnsignedOf(t)) + ")(" + x + ")";
      }
      return Unimplemented("bitcast-convert of ", PrimitiveTypeName(t));
  }
}

StatusOr<std::string> FromBits(PrimitiveType t, const std::string& b) {
  switch (t) {
    case PrimitiveType::kF32: return "__uint_as_float((u32)(" + b + "))";
    case PrimitiveType::kF64: return "__longlong_as_double((long long)(" + b + "))";
    case PrimitiveType::kF16: return "kiln_f16_from_bits((u32)(" + b + "))";
    case PrimitiveType::kBF16: return "kiln_bf16_from_bits((u32)(" + b + "))";
    case PrimitiveType::kPred: return "((" + b + ") != 0)";
    default:
      if (IsNarrowFloat(t)) return "kiln_decode_" + NarrowFloatName(t) + "((u32)(" + b + "))";
      if (IsIntegralType(t)) return WrapInt(t, "(" + RegisterType(t) + ")(" + b + ")");
      return Unimplemented("bitcast-convert to ", PrimitiveTypeName(t));
  }
}

std::string CompareOp(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEq: return "==";
    case ComparisonDirection::kNe: return "!=";
    case ComparisonDirection::kGe: return ">=";
    case ComparisonDirection::kGt: return ">";
    case ComparisonDirection::kLe: return "<=";
    case ComparisonDirection::kLt: return "<";
  }
  return "==";
}

}  // namespace

StatusOr<std::string> ElementalOps::ToBits(PrimitiveType t, const std::string& value) {
  return kiln::codegen::ToBits(t, value);
}
StatusOr<std::string> ElementalOps::FromBits(PrimitiveType t, const std::string& bits) {
  return kiln::codegen::FromBits(t, bits);
}

bool ElementalOps::Supports(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs: case HloOpcode::kAcos: case HloOpcode::kAcosh: case HloOpcode::kAdd:
    case HloOpcode::kAnd: case HloOpcode::kAsin: case HloOpcode::kAsinh: case HloOpcode::kAtan:
    case HloOpcode::kAtan2: case HloOpcode::kAtanh: case HloOpcode::kBitcastConvert:
    case HloOpcode::kCbrt: case HloOpcode::kCeil: case HloOpcode::kClamp: case HloOpcode::kClz:
    case HloOpcode::kCompare: case HloOpcode::kComplex: case HloOpcode::kConvert:
    case HloOpcode::kCos: case HloOpcode::kCosh: case HloOpcode::kDivide: case HloOpcode::kErf:
    case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kFloor: case HloOpcode::kImag:
    case HloOpcode::kIsFinite: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
    case HloOpcode::kMulhi: case HloOpcode::kMultiply: case HloOpcode::kNegate:
    case HloOpcode::kNot: case HloOpcode::kOr: case HloOpcode::kPopulationCount:
    case HloOpcode::kPower: case HloOpcode::kReal: case HloOpcode::kReducePrecision:
    case HloOpcode::kRemainder: case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven: case HloOpcode::kRsqrt: case HloOpcode::kSelect:
    case HloOpcode::kShiftLeft: case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical: case HloOpcode::kSign: case HloOpcode::kSin:
    case HloOpcode::kSinh: case HloOpcode::kSqrt: case HloOpcode::kSubtract: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kXor: case HloOpcode::kOptimizationBarrier:
      return true;
    default:
      return false;
  }
}

StatusOr<std::string> ElementalOps::Convert(PrimitiveType from, PrimitiveType to,
                                            const std::string& x) {
  if (from == to) return x;
  const std::string rt = RegisterType(to);
  if (IsComplexType(from)) {
    if (IsComplexType(to)) {
      std::string c = RegisterType(ComplexComponentType(to));
      return rt + "{(" + c + ")(" + x + ").re, (" + c + ")(" + x + ").im}";
    }
    return Convert(ComplexComponentType(from), to, "(" + x + ").re");
  }
  if (IsComplexType(to)) {
    KILN_ASSIGN_OR_RETURN(std::string re, Convert(from, ComplexComponentType(to), x));
    return rt + "{" + re + ", 0}";
  }
  if (to == PrimitiveType::kPred) return "((" + x + ") != " + ZeroLiteral(from) + ")";
  if (from == PrimitiveType::kPred) {
    if (IsFloatingPointType(to)) return "((" + x + ") ? " + OneLiteral(to) + " : " + ZeroLiteral(to) + ")";
    return "(" + rt + ")((" + x + ") ? 1 : 0)";
  }
  const bool from_int = IsIntegralType(from), to_int = IsIntegralType(to);
  if (from_int && to_int) return WrapInt(to, "(" + rt + ")(" + x + ")");
  if (from_int) {
    if (to == PrimitiveType::kF32) return "(float)(" + x + ")";
    if (to == PrimitiveType::kF64) return "(double)(" + x + ")";
    // Narrow float: one rounding from the exact integer (exact in float below 2^24, in double
    // below 2^53).
    if (PrimitiveBitWidth(from) <= 16) return RoundFloat(to, "(float)(" + x + ")");
    return RoundFloat(to, "(double)(" + x + ")");
  }
  if (to_int) return "kiln_float_to_int<" + rt + ">(" + x + ", " + Min(to) + ", " + Max(to) + ")";
  // float -> float
  if (to == PrimitiveType::kF64) return "(double)(" + x + ")";
  if (to == PrimitiveType::kF32) return from == PrimitiveType::kF64 ? "(float)(" + x + ")" : x;
  return RoundFloat(to, x);  // the f64 overloads round once from the double
}

StatusOr<std::string> ElementalOps::Expression(const HloInstruction& instr,
                                               const std::vector<Value>& ops) {
  const PrimitiveType t = instr.shape().element_type();
  const HloOpcode op = instr.opcode();
  if (static_cast<int64_t>(ops.size()) != instr.operand_count())
    return Internal("operand count mismatch for %", instr.name());
  const PrimitiveType ot = ops.empty() ? t : ops[0].type;
  auto a = [&]() { return ops[0].expr; };
  auto b = [&]() { return ops[1].expr; };
  auto unsupported = [&]() {
    return Unimplemented("no elemental code for ", HloOpcodeString(op), " on ",
                         PrimitiveTypeName(ot), " (%", instr.name(), ")");
  };
  // Ops that do not depend on the element type class.
  switch (op) {
    case HloOpcode::kOptimizationBarrier:
      return a();
    case HloOpcode::kSelect:
      return "(" + a() + " ? " + b() + " : " + ops[2].expr + ")";
    case HloOpcode::kConvert:
      return Convert(ot, t, a());
    case HloOpcode::kBitcastConvert: {
      int wf = ot == PrimitiveType::kPred ? 8 : PrimitiveBitWidth(ot);
      int wt = t == PrimitiveType::kPred ? 8 : PrimitiveBitWidth(t);
      if (wf != wt || IsComplexType(ot) || IsComplexType(t))
        return Unimplemented("bitcast-convert %", instr.name(), " between ", PrimitiveTypeName(ot),
                             " and ", PrimitiveTypeName(t), " (only equal widths)");
      KILN_ASSIGN_OR_RETURN(std::string bits, ToBits(ot, a()));
      return FromBits(t, bits);
    }
    case HloOpcode::kCompare: {
      ComparisonType ct = instr.attrs().comparison_type;
      if (ct == ComparisonType::kDefault) ct = DefaultComparisonType(ot);
      const std::string o = CompareOp(instr.attrs().comparison_direction);
      const bool eqne = o == "==" || o == "!=";
      if (IsComplexType(ot)) {
        if (!eqne) return unsupported();
        return std::string(o == "==" ? "" : "!") + "kiln_ceq(" + a() + ", " + b() + ")";
      }
      if (IsFloatingPointType(ot)) {
        if (ct == ComparisonType::kTotalOrder)
          return "(kiln_total_order(" + a() + ") " + o + " kiln_total_order(" + b() + "))";
        return "(" + a() + " " + o + " " + b() + ")";
      }
      if (IsIntegralType(ot)) {
        if (ct == ComparisonType::kUnsigned && IsSignedIntegralType(ot)) {
          std::string u = RegisterType(UnsignedOf(ot));
          int sub = SubByteBits(ot);
          std::string mask = sub > 0 ? " & " + std::to_string((1 << sub) - 1) : "";
          return "(((" + u + ")(" + a() + ")" + mask + ") " + o + " ((" + u + ")(" + b() + ")" + mask + "))";
        }
        if (ct == ComparisonType::kSigned && IsUnsignedIntegralType(ot)) {
          std::string s = RegisterType(SignedOf(ot));
          int sub = SubByteBits(ot);
          if (sub > 0)
            return "(kiln_wrap<" + std::to_string(sub) + ">((s8)" + a() + ") " + o + " kiln_wrap<" +
                   std::to_string(sub) + ">((s8)" + b() + "))";
          return "((" + s + ")(" + a() + ") " + o + " (" + s + ")(" + b() + "))";
        }
      }
      return "(" + a() + " " + o + " " + b() + ")";
    }
    case HloOpcode::kClamp: {
      // clamp(lo, x, hi)
      const std::string& lo = ops[0].expr;
      const std::string& x = ops[1].expr;
      const std::string& hi = ops[2].expr;
      if (t == PrimitiveType::kPred) return "((" + x + " || " + lo + ") && " + hi + ")";
      if (IsFloatingPointType(t)) return "kiln_fclamp(" + lo + ", " + x + ", " + hi + ")";
      if (IsIntegralType(t)) return "kiln_iclamp(" + lo + ", " + x + ", " + hi + ")";
      return unsupported();
    }
    default:
      break;
  }

  // ---- pred ----
  if (ot == PrimitiveType::kPred) {
    switch (op) {
      case HloOpcode::kAnd: case HloOpcode::kMultiply: case HloOpcode::kMinimum:
        return "(" + a() + " && " + b() + ")";
      case HloOpcode::kOr: case HloOpcode::kAdd: case HloOpcode::kMaximum:
        return "(" + a() + " || " + b() + ")";
      case HloOpcode::kXor: case HloOpcode::kSubtract:
        return "(" + a() + " != " + b() + ")";
      case HloOpcode::kNot:
        return "(!" + a() + ")";
      case HloOpcode::kPower:
        return "(" + a() + " || !" + b() + ")";
      default:
        return unsupported();
    }
  }

  // ---- complex ----
  if (IsComplexType(ot) || op == HloOpcode::kComplex) {
    switch (op) {
      case HloOpcode::kComplex: return RegisterType(t) + "{" + a() + ", " + b() + "}";
      case HloOpcode::kAdd: return "kiln_cadd(" + a() + ", " + b() + ")";
      case HloOpcode::kSubtract: return "kiln_csub(" + a() + ", " + b() + ")";
      case HloOpcode::kMultiply: return "kiln_cmul(" + a() + ", " + b() + ")";
      case HloOpcode::kDivide: return "kiln_cdiv(" + a() + ", " + b() + ")";
      case HloOpcode::kNegate: return "kiln_cneg(" + a() + ")";
      case HloOpcode::kAbs: return "kiln_cabs(" + a() + ")";
      case HloOpcode::kReal: return "(" + a() + ").re";
      case HloOpcode::kImag: return "(" + a() + ").im";
      case HloOpcode::kExp: return "kiln_cexp(" + a() + ")";
      case HloOpcode::kLog: return "kiln_clog(" + a() + ")";
      case HloOpcode::kSqrt: return "kiln_csqrt(" + a() + ")";
      case HloOpcode::kRsqrt: return "kiln_crsqrt(" + a() + ")";
      case HloOpcode::kSign: return "kiln_csign(" + a() + ")";
      case HloOpcode::kSin: return "kiln_csin(" + a() + ")";
      case HloOpcode::kCos: return "kiln_ccos(" + a() + ")";
      case HloOpcode::kTanh: return "kiln_ctanh(" + a() + ")";
      case HloOpcode::kTan: return "kiln_ctan(" + a() + ")";
      case HloOpcode::kLog1p: return "kiln_clog1p(" + a() + ")";
      case HloOpcode::kExpm1: return "kiln_cexpm1(" + a() + ")";
      case HloOpcode::kPower: return "kiln_cpow(" + a() + ", " + b() + ")";
      case HloOpcode::kAtan2: {
        // The evaluator's formula: atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y)).
        const std::string c = RegisterType(t);
        const std::string f = t == PrimitiveType::kC64 ? "f" : "";
        const std::string num = "kiln_cadd(" + b() + ", kiln_cmul(" + c + "{0.0" + f + ", 1.0" + f + "}, " + a() + "))";
        const std::string den = "kiln_csqrt(kiln_cadd(kiln_cmul(" + b() + ", " + b() + "), kiln_cmul(" + a() + ", " + a() + ")))";
        return "kiln_cmul(" + c + "{-0.0" + f + ", -1.0" + f + "}, kiln_clog(kiln_cdiv(" + num + ", " + den + ")))";
      }
      default: return unsupported();
    }
  }

  // ---- real floats ----
  if (IsFloatingPointType(ot)) {
    auto call1 = [&](const char* f32, const char* f64) { return FloatCall(t, f32, f64, a()); };
    auto arith = [&](const char* o) { return RoundArithmetic(t, "(" + a() + " " + o + " " + b() + ")"); };
    switch (op) {
      case HloOpcode::kAdd: return arith("+");
      case HloOpcode::kSubtract: return arith("-");
      case HloOpcode::kMultiply: return arith("*");
      case HloOpcode::kDivide: return arith("/");
      case HloOpcode::kRemainder: return FloatCall(t, "fmodf", "fmod", a() + ", " + b());
      case HloOpcode::kMaximum: return "kiln_fmax(" + a() + ", " + b() + ")";
      case HloOpcode::kMinimum: return "kiln_fmin(" + a() + ", " + b() + ")";
      case HloOpcode::kPower: return RoundFloat(t, "kiln_pow(" + a() + ", " + b() + ")");
      case HloOpcode::kAtan2: return FloatCall(t, "atan2f", "atan2", a() + ", " + b());
      case HloOpcode::kAbs: return "fabs(" + a() + ")";
      case HloOpcode::kNegate: return "(-" + a() + ")";
      case HloOpcode::kSign: return "kiln_fsign(" + a() + ")";
      case HloOpcode::kCeil: return call1("ceilf", "ceil");
      case HloOpcode::kFloor: return call1("floorf", "floor");
      case HloOpcode::kRoundNearestAfz: return call1("roundf", "round");
      case HloOpcode::kRoundNearestEven: return call1("rintf", "rint");
      case HloOpcode::kExp: return call1("expf", "exp");
      case HloOpcode::kExpm1: return call1("expm1f", "expm1");
      case HloOpcode::kLog: return call1("logf", "log");
      case HloOpcode::kLog1p: return call1("log1pf", "log1p");
      case HloOpcode::kLogistic: return RoundFloat(t, "kiln_logistic(" + a() + ")");
      case HloOpcode::kSqrt: return call1("sqrtf", "sqrt");
      case HloOpcode::kRsqrt: return call1("rsqrtf", "rsqrt");
      case HloOpcode::kCbrt: return call1("cbrtf", "cbrt");
      case HloOpcode::kTanh:
        if (t == PrimitiveType::kBF16 || t == PrimitiveType::kF16) return RoundFloat(t, "kiln_tanh_narrow(" + a() + ")");
        return call1("tanhf", "tanh");
      case HloOpcode::kErf: return call1("erff", "erf");
      case HloOpcode::kSin: return call1("sinf", "sin");
      case HloOpcode::kCos: return call1("cosf", "cos");
      case HloOpcode::kTan: return call1("tanf", "tan");
      case HloOpcode::kAsin: return call1("asinf", "asin");
      case HloOpcode::kAcos: return call1("acosf", "acos");
      case HloOpcode::kAtan: return call1("atanf", "atan");
      case HloOpcode::kSinh: return call1("sinhf", "sinh");
      case HloOpcode::kCosh: return call1("coshf", "cosh");
      case HloOpcode::kAsinh: return call1("asinhf", "asinh");
      case HloOpcode::kAcosh: return call1("acoshf", "acosh");
      case HloOpcode::kAtanh: return call1("atanhf", "atanh");
      case HloOpcode::kIsFinite: return "isfinite(" + a() + ")";
      case HloOpcode::kReal: return a();
      case HloOpcode::kImag: return ZeroLiteral(t);
      case HloOpcode::kReducePrecision:
        return RoundFloat(t, "kiln_reduce_precision(" + a() + ", " +
                                 std::to_string(instr.attrs().exponent_bits) + ", " +
                                 std::to_string(instr.attrs().mantissa_bits) + ")");
      default: return unsupported();
    }
  }

  // ---- integers ----
  if (IsIntegralType(ot)) {
    const std::string bits = Bits(ot);
    auto w = [&](const std::string& e) { return WrapInt(t, e); };
    switch (op) {
      case HloOpcode::kAdd: return w("kiln_add(" + a() + ", " + b() + ")");
      case HloOpcode::kSubtract: return w("kiln_sub(" + a() + ", " + b() + ")");
      case HloOpcode::kMultiply: return w("kiln_mul(" + a() + ", " + b() + ")");
      case HloOpcode::kDivide: return w("kiln_div(" + a() + ", " + b() + ")");
      case HloOpcode::kRemainder: return w("kiln_rem(" + a() + ", " + b() + ")");
      case HloOpcode::kMaximum: return "kiln_imax(" + a() + ", " + b() + ")";
      case HloOpcode::kMinimum: return "kiln_imin(" + a() + ", " + b() + ")";
      case HloOpcode::kAnd: return "(" + RegisterType(t) + ")(" + a() + " & " + b() + ")";
      case HloOpcode::kOr: return "(" + RegisterType(t) + ")(" + a() + " | " + b() + ")";
      case HloOpcode::kXor: return w("(" + RegisterType(t) + ")(" + a() + " ^ " + b() + ")");
      case HloOpcode::kNot: return w("(" + RegisterType(t) + ")(~" + a() + ")");
      case HloOpcode::kShiftLeft: return w("kiln_shl<" + bits + ">(" + a() + ", " + b() + ")");
      case HloOpcode::kShiftRightArithmetic:
        return w("kiln_shr_arith<" + bits + ">(" + a() + ", " + b() + ")");
      case HloOpcode::kShiftRightLogical:
        return w("kiln_shr_logical<" + bits + ">(" + a() + ", " + b() + ")");
      case HloOpcode::kPower: return w("kiln_ipow(" + a() + ", " + b() + ")");
      case HloOpcode::kMulhi: return w("kiln_mulhi<" + bits + ">(" + a() + ", " + b() + ")");
      case HloOpcode::kAbs: return w("kiln_iabs(" + a() + ")");
      case HloOpcode::kNegate: return w("kiln_neg(" + a() + ")");
      case HloOpcode::kSign: return "kiln_isign(" + a() + ")";
      case HloOpcode::kPopulationCount: return "kiln_popcnt<" + bits + ">(" + a() + ")";
      case HloOpcode::kClz: return "kiln_clz<" + bits + ">(" + a() + ")";
      case HloOpcode::kReal: return a();
      case HloOpcode::kImag: return ZeroLiteral(t);
      default: return unsupported();
    }
  }
  return unsupported();
}

}  // namespace kiln::codegen
