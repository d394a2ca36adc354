// Shape inference for elementwise ops: unary, binary, select, clamp, conversions, map.
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

bool IsSignedType(PrimitiveType t) { return IsSignedIntegralType(t) || IsFloatingPointType(t); }

Status TypeError(HloOpcode op, std::string_view expected, const Shape& s) {
  return InvalidArgument(HloOpcodeString(op), " expects ", expected, " operands, found ",
                         PrimitiveTypeName(s.element_type()), " (", Str(s), ")");
}

// Equal dimensions (bounds), ignoring element types and dynamism.
bool SameDims(const Shape& a, const Shape& b) { return a.dimensions() == b.dimensions(); }

// Result of two same-dimension operands: dynamic where either is.
Shape MergeDynamic(Shape result, const Shape& other) {
  for (int64_t i = 0; i < other.rank() && i < result.rank(); ++i)
    if (other.is_dynamic_dimension(i)) result.set_dynamic_dimension(i, true);
  return result;
}

}  // namespace

StatusOr<Shape> InferUnaryOpShape(HloOpcode op, const Shape& operand) {
  if (op == HloOpcode::kCopy || op == HloOpcode::kDomain || op == HloOpcode::kOptimizationBarrier)
    return NoLayout(operand);
  KILN_RETURN_IF_ERROR(ExpectArray(operand, StrCat("the operand of ", HloOpcodeString(op))));
  const PrimitiveType t = operand.element_type();
  const bool is_float = IsFloatingPointType(t);
  const bool is_complex = IsComplexType(t);
  switch (op) {
    case HloOpcode::kFloor: case HloOpcode::kCeil: case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven:
      if (!is_float) return TypeError(op, "floating-point", operand);
      return NoLayout(operand);
    case HloOpcode::kErf:
      if (!is_float) return TypeError(op, "floating-point", operand);
      return NoLayout(operand);
    case HloOpcode::kCos: case HloOpcode::kSin: case HloOpcode::kTan: case HloOpcode::kExp:
    case HloOpcode::kExpm1: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kRsqrt: case HloOpcode::kSqrt:
    case HloOpcode::kCbrt: case HloOpcode::kTanh: case HloOpcode::kAcos: case HloOpcode::kAcosh:
    case HloOpcode::kAsin: case HloOpcode::kAsinh: case HloOpcode::kAtan: case HloOpcode::kAtanh:
    case HloOpcode::kCosh: case HloOpcode::kSinh:
      if (!is_float && !is_complex) return TypeError(op, "floating-point or complex", operand);
      return NoLayout(operand);
    case HloOpcode::kReal: case HloOpcode::kImag:
      if (is_complex) return WithType(operand, ComplexComponentType(t));
      if (is_float) return NoLayout(operand);
      return TypeError(op, "floating-point or complex", operand);
    case HloOpcode::kAbs:
      if (is_complex) return WithType(operand, ComplexComponentType(t));
      if (IsSignedType(t)) return NoLayout(operand);
      return TypeError(op, "signed, floating-point or complex", operand);
    case HloOpcode::kClz: case HloOpcode::kPopulationCount:
      if (!IsIntegralType(t)) return TypeError(op, "integer", operand);
      return NoLayout(operand);
    case HloOpcode::kNegate:
      if (!IsIntegralType(t) && !is_float && !is_complex)
        return TypeError(op, "integer, floating-point or complex", operand);
      return NoLayout(operand);
    case HloOpcode::kSign:
      if (!IsSignedType(t) && !is_complex)
        return TypeError(op, "signed, floating-point or complex", operand);
      return NoLayout(operand);
    case HloOpcode::kNot:
      if (t != PrimitiveType::kPred && !IsIntegralType(t)) return TypeError(op, "pred or integer", operand);
      return NoLayout(operand);
    case HloOpcode::kIsFinite:
      if (!is_float) return TypeError(op, "floating-point", operand);
      return WithType(operand, PrimitiveType::kPred);
    default:
      return InvalidArgument(HloOpcodeString(op), " is not a unary elementwise op");
  }
}

StatusOr<Shape> InferBinaryOpShape(HloOpcode op, const Shape& lhs, const Shape& rhs) {
  const std::string_view name = HloOpcodeString(op);
  KILN_RETURN_IF_ERROR(ExpectArray(lhs, StrCat("the lhs of ", name)));
  KILN_RETURN_IF_ERROR(ExpectArray(rhs, StrCat("the rhs of ", name)));
  if (!SameTypeIgnoringFpPrecision(lhs.element_type(), rhs.element_type()))
    return InvalidArgument(name, " operands have different element types: ", Str(lhs), " and ",
                           Str(rhs));
  if (!SameDims(lhs, rhs))
    return InvalidArgument(name, " operands have different dimensions: ", Str(lhs), " and ",
                           Str(rhs), " (HLO has no implicit broadcasting)");
  const PrimitiveType t = lhs.element_type();
  Shape result = MergeDynamic(WithType(lhs, HigherPrecisionType(t, rhs.element_type())), rhs);
  switch (op) {
    case HloOpcode::kAdd: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
    case HloOpcode::kMultiply:
      return result;
    case HloOpcode::kSubtract: case HloOpcode::kAtan2: case HloOpcode::kPower:
    case HloOpcode::kDivide: case HloOpcode::kRemainder:
      if (t == PrimitiveType::kPred) return TypeError(op, "arithmetic (not pred)", lhs);
      return result;
    case HloOpcode::kShiftLeft: case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical: case HloOpcode::kMulhi:
      if (!IsIntegralType(t)) return TypeError(op, "integer", lhs);
      return result;
    case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      if (t != PrimitiveType::kPred && !IsIntegralType(t)) return TypeError(op, "pred or integer", lhs);
      return result;
    case HloOpcode::kCompare:
      return WithType(result, PrimitiveType::kPred);
    case HloOpcode::kComplex:
      if (t == PrimitiveType::kF32 && rhs.element_type() == PrimitiveType::kF32)
        return WithType(result, PrimitiveType::kC64);
      if (t == PrimitiveType::kF64 && rhs.element_type() == PrimitiveType::kF64)
        return WithType(result, PrimitiveType::kC128);
      return InvalidArgument("complex expects f32 or f64 operands of one type, found ", Str(lhs),
                             " and ", Str(rhs));
    default:
      return InvalidArgument(name, " is not a binary elementwise op");
  }
}

StatusOr<Shape> InferSelectShape(const Shape& pred, const Shape& on_true, const Shape& on_false) {
  KILN_RETURN_IF_ERROR(ExpectArray(pred, "the predicate of select"));
  KILN_RETURN_IF_ERROR(ExpectArray(on_true, "the on_true operand of select"));
  KILN_RETURN_IF_ERROR(ExpectArray(on_false, "the on_false operand of select"));
  if (pred.element_type() != PrimitiveType::kPred)
    return InvalidArgument("select predicate must be pred, found ", Str(pred));
  if (!SameTypeIgnoringFpPrecision(on_true.element_type(), on_false.element_type()) ||
      !SameDims(on_true, on_false))
    return InvalidArgument("select operands must have the same shape, found ", Str(on_true),
                           " and ", Str(on_false));
  // XLA dropped the scalar-predicate form: the predicate has the operands' dimensions.
  if (!SameDims(pred, on_true))
    return InvalidArgument("select predicate ", Str(pred), " must have the operands' dimensions ",
                           Str(on_true));
  return MergeDynamic(
      WithType(on_true, HigherPrecisionType(on_true.element_type(), on_false.element_type())),
      on_false);
}

StatusOr<Shape> InferClampShape(const Shape& min, const Shape& operand, const Shape& max) {
  KILN_RETURN_IF_ERROR(ExpectArray(min, "clamp min"));
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "clamp operand"));
  KILN_RETURN_IF_ERROR(ExpectArray(max, "clamp max"));
  for (const Shape* bound : {&min, &max}) {
    if (!SameTypeIgnoringFpPrecision(bound->element_type(), operand.element_type()) ||
        (!bound->IsScalar() && !SameDims(*bound, operand)))
      return InvalidArgument("clamp bounds must be scalars or match the operand: ", Str(min),
                             ", ", Str(operand), ", ", Str(max));
  }
  return NoLayout(operand);
}

StatusOr<Shape> InferConvertShape(const Shape& operand, PrimitiveType new_type) {
  if (!operand.IsArray() || !IsArrayType(new_type))
    return InvalidArgument("convert works on arrays only: ", Str(operand), " to ",
                           PrimitiveTypeName(new_type));
  return WithType(operand, new_type);
}

StatusOr<Shape> InferBitcastConvertShape(const Shape& operand, PrimitiveType new_type) {
  if (!operand.IsArray() || !IsArrayType(new_type))
    return InvalidArgument("bitcast-convert works on arrays only: ", Str(operand), " to ",
                           PrimitiveTypeName(new_type));
  const PrimitiveType old_type = operand.element_type();
  if (IsComplexType(old_type) != IsComplexType(new_type))
    return InvalidArgument("bitcast-convert between complex and real types: ", Str(operand),
                           " to ", PrimitiveTypeName(new_type));
  const int in_bits = PrimitiveBitWidth(old_type), out_bits = PrimitiveBitWidth(new_type);
  if (std::max(in_bits, out_bits) % std::min(in_bits, out_bits) != 0)
    return InvalidArgument("bitcast-convert between bit widths that do not divide: ",
                           PrimitiveTypeName(old_type), " (", in_bits, " bits) to ",
                           PrimitiveTypeName(new_type), " (", out_bits, " bits)");
  Shape result = WithType(operand, new_type);
  if (in_bits > out_bits) {
    result.add_dimension(in_bits / out_bits);
  } else if (in_bits < out_bits) {
    const int64_t ratio = out_bits / in_bits;
    if (operand.rank() < 1 || operand.dimensions(operand.rank() - 1) != ratio)
      return InvalidArgument("bitcast-convert from ", Str(operand), " to ",
                             PrimitiveTypeName(new_type), " needs a minor dimension of size ",
                             ratio, " (the ratio of the bit widths)");
    std::vector<int64_t> dims = operand.dimensions();
    std::vector<bool> dyn = operand.dynamic_dimensions();
    dims.pop_back();
    dyn.pop_back();
    result = MakeArray(new_type, dims, dyn);
  }
  return result;
}

StatusOr<Shape> InferStochasticConvertShape(const Shape& operand, const Shape& random,
                                            PrimitiveType new_type) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of stochastic-convert"));
  KILN_RETURN_IF_ERROR(ExpectArray(random, "the random operand of stochastic-convert"));
  if (!IsUnsignedIntegralType(random.element_type()))
    return InvalidArgument("stochastic-convert random bits must be unsigned integers, found ",
                           Str(random));
  if (!IsFloatingPointType(operand.element_type()))
    return InvalidArgument("stochastic-convert converts floating-point operands, found ",
                           Str(operand));
  if (PrimitiveBitWidth(operand.element_type()) != PrimitiveBitWidth(random.element_type()))
    return InvalidArgument("stochastic-convert random bits ", Str(random),
                           " must have the operand's bit width (", Str(operand), ")");
  if (!SameDims(operand, random))
    return InvalidArgument("stochastic-convert operand ", Str(operand),
                           " and random bits ", Str(random), " differ in dimensions");
  if (!IsArrayType(new_type))
    return InvalidArgument("stochastic-convert result must be an array type");
  return WithType(operand, new_type);
}

StatusOr<Shape> InferReducePrecisionShape(const Shape& operand, int64_t exponent_bits,
                                          int64_t mantissa_bits) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of reduce-precision"));
  if (!IsFloatingPointType(operand.element_type()))
    return InvalidArgument("reduce-precision expects a floating-point operand, found ",
                           Str(operand));
  if (exponent_bits < 1)
    return InvalidArgument("reduce-precision exponent_bits must be >= 1, found ", exponent_bits);
  if (mantissa_bits < 0)
    return InvalidArgument("reduce-precision mantissa_bits must be >= 0, found ", mantissa_bits);
  return NoLayout(operand);
}

StatusOr<Shape> InferMapShape(const std::vector<const Shape*>& operands,
                              const ProgramShape& to_apply) {
  if (operands.empty()) return InvalidArgument("map needs at least one operand");
  for (size_t i = 0; i < operands.size(); ++i) {
    KILN_RETURN_IF_ERROR(ExpectArray(*operands[i], "map operands"));
    if (!SameDims(*operands[i], *operands[0]))
      return InvalidArgument("map operands must have the same dimensions, found ",
                             Str(*operands[0]), " and ", Str(*operands[i]));
  }
  if (to_apply.parameters.size() != operands.size())
    return InvalidArgument("map computation takes ", to_apply.parameters.size(),
                           " parameters but map has ", operands.size(), " operands");
  if (!to_apply.result.IsScalar())
    return InvalidArgument("map computation must return a scalar, returns ",
                           Str(to_apply.result));
  for (size_t i = 0; i < operands.size(); ++i) {
    const Shape& p = to_apply.parameters[i];
    if (!p.IsScalar() ||
        !SameTypeIgnoringFpPrecision(p.element_type(), operands[i]->element_type()))
      return InvalidArgument("map computation parameter ", i, " is ", Str(p),
                             ", expected a scalar of the operand type ",
                             PrimitiveTypeName(operands[i]->element_type()));
  }
  return MakeArray(to_apply.result.element_type(), operands[0]->dimensions(),
                   operands[0]->dynamic_dimensions());
}

}  // namespace kiln
