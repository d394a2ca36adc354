// The algebraic simplifier's driver, shared helpers, and the elementwise identities.
#include "kiln/passes/algebraic_simplifier.h"

#include <cmath>
#include <limits>

#include "kiln/passes/algebraic_simplifier_internal.h"

namespace kiln {
namespace algsimp {
namespace {

uint64_t LowBits(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

bool ElementIs(const Literal& l, int64_t i, Splat v) {
  const PrimitiveType t = l.shape().element_type();
  if (t == PrimitiveType::kPred) {
    const bool b = l.GetAsBool(i);
    switch (v) {
      case Splat::kZero: case Splat::kPosZero: case Splat::kLowest: return !b;
      case Splat::kOne: case Splat::kAllOnes: case Splat::kHighest: return b;
      case Splat::kNegZero: return false;
    }
    return false;
  }
  if (IsIntegralType(t)) {
    const int64_t x = l.GetAsInt64(i);
    const int bits = PrimitiveBitWidth(t);
    const bool is_signed = IsSignedIntegralType(t);
    const uint64_t ux = static_cast<uint64_t>(x) & LowBits(bits);
    switch (v) {
      case Splat::kZero: case Splat::kPosZero: return x == 0;
      case Splat::kNegZero: return false;
      case Splat::kOne: return x == 1;
      case Splat::kAllOnes: return ux == LowBits(bits);
      case Splat::kLowest:
        return is_signed ? ux == (uint64_t{1} << (bits - 1)) : ux == 0;
      case Splat::kHighest:
        return is_signed ? ux == (LowBits(bits) >> 1) : ux == LowBits(bits);
    }
    return false;
  }
  if (IsFloatingPointType(t)) {
    const double d = l.GetAsDouble(i);
    switch (v) {
      case Splat::kZero: return d == 0;
      case Splat::kPosZero: return d == 0 && !std::signbit(d);
      case Splat::kNegZero: return d == 0 && std::signbit(d);
      case Splat::kOne: return d == 1;
      case Splat::kAllOnes: return false;
      case Splat::kLowest: return std::isinf(d) && d < 0;
      case Splat::kHighest: return std::isinf(d) && d > 0;
    }
    return false;
  }
  if (IsComplexType(t)) {
    const std::complex<double> c = l.GetAsComplex(i);
    if (v == Splat::kZero) return c == std::complex<double>(0, 0);
    if (v == Splat::kOne) return c == std::complex<double>(1, 0);
  }
  return false;
}

// The constant behind a chain of broadcasts, or nullptr.
const HloInstruction* SplatConstant(const HloInstruction* instr) {
  if (!instr->shape().IsArray() || instr->shape().num_elements() == 0) return nullptr;
  while (instr->opcode() == HloOpcode::kBroadcast) instr = instr->operand(0);
  if (instr->opcode() != HloOpcode::kConstant || !instr->has_literal() || instr->literal_elided())
    return nullptr;
  if (!instr->literal().shape().IsArray() || instr->literal().element_count() == 0) return nullptr;
  return instr;
}

}  // namespace

bool IsSplat(const HloInstruction* instr, Splat value) {
  const HloInstruction* c = SplatConstant(instr);
  if (!c) return false;
  const Literal& l = c->literal();
  for (int64_t i = 0; i < l.element_count(); ++i)
    if (!ElementIs(l, i, value)) return false;
  return true;
}

std::optional<double> SplatValue(const HloInstruction* instr) {
  const HloInstruction* c = SplatConstant(instr);
  if (!c || !IsFloatingPointType(c->literal().shape().element_type())) return std::nullopt;
  const Literal& l = c->literal();
  const double v = l.GetAsDouble(0);
  for (int64_t i = 1; i < l.element_count(); ++i)
    if (!(l.GetAsDouble(i) == v) || std::signbit(l.GetAsDouble(i)) != std::signbit(v))
      return std::nullopt;
  return v;
}

std::optional<bool> SplatPred(const HloInstruction* instr) {
  if (instr->shape().element_type() != PrimitiveType::kPred) return std::nullopt;
  if (IsSplat(instr, Splat::kOne)) return true;
  if (IsSplat(instr, Splat::kZero)) return false;
  return std::nullopt;
}

StatusOr<HloInstruction*> MakeSplat(Context& ctx, const Shape& shape, Splat value,
                                    const HloInstruction* like) {
  const PrimitiveType t = shape.element_type();
  Literal l(Shape::ArrayWithDefaultLayout(t, {}));
  if (t == PrimitiveType::kPred) {
    l.SetFromInt64(0, ElementIs(Literal::CreateR0<bool>(t, true), 0, value) ? 1 : 0);
  } else if (IsIntegralType(t)) {
    const int bits = PrimitiveBitWidth(t);
    const bool is_signed = IsSignedIntegralType(t);
    int64_t x = 0;
    switch (value) {
      case Splat::kZero: case Splat::kPosZero: case Splat::kNegZero: x = 0; break;
      case Splat::kOne: x = 1; break;
      case Splat::kAllOnes: x = -1; break;  // wraps to all ones in every width
      case Splat::kLowest:
        x = is_signed ? static_cast<int64_t>(~(LowBits(bits) >> 1)) : 0;
        break;
      case Splat::kHighest:
        x = is_signed ? static_cast<int64_t>(LowBits(bits) >> 1) : -1;
        break;
    }
    l.SetFromInt64(0, x);
  } else if (IsFloatingPointType(t) || IsComplexType(t)) {
    double d = 0;
    switch (value) {
      case Splat::kZero: case Splat::kPosZero: d = 0.0; break;
      case Splat::kNegZero: d = -0.0; break;
      case Splat::kOne: d = 1; break;
      case Splat::kLowest: d = -std::numeric_limits<double>::infinity(); break;
      case Splat::kHighest: d = std::numeric_limits<double>::infinity(); break;
      case Splat::kAllOnes: return Internal("MakeSplat: all-ones of a floating type");
    }
    l.SetFromDouble(0, d);
  } else {
    return Internal("MakeSplat: unsupported type ", PrimitiveTypeName(t));
  }
  HloInstruction* scalar = ctx.editor.Constant(std::move(l), like);
  return ctx.editor.BroadcastScalar(scalar, shape, like);
}

StatusOr<HloInstruction*> MakeSplatBool(Context& ctx, const Shape& shape, bool value,
                                        const HloInstruction* like) {
  return MakeSplat(ctx, shape, value ? Splat::kOne : Splat::kZero, like);
}

bool IsLosslessConvert(PrimitiveType from, PrimitiveType to) {
  using PT = PrimitiveType;
  if (from == to) return true;
  if (!IsArrayType(from) || !IsArrayType(to)) return false;
  if (from == PT::kPred) return to != PT::kPred && !IsComplexType(to);
  if (IsIntegralType(from)) {
    const int fb = PrimitiveBitWidth(from);
    const bool fs = IsSignedIntegralType(from);
    if (IsIntegralType(to)) {
      const int tb = PrimitiveBitWidth(to);
      const bool ts = IsSignedIntegralType(to);
      if (fs == ts) return tb >= fb;
      return !fs && ts && tb > fb;  // unsigned into a wider signed type
    }
    if (IsFloatingPointType(to) && !IsF8Type(to) && to != PT::kF4E2M1FN) {
      // Every integer of fb bits (magnitude bits: fb - 1 when signed) fits the significand.
      const int magnitude_bits = fs ? fb - 1 : fb;
      return MantissaBits(to) + 1 >= magnitude_bits;
    }
    return false;
  }
  if (IsFloatingPointType(from)) {
    if (to == PT::kF64) return true;  // every narrower real float is a subset of f64
    if (to == PT::kF32) return from != PT::kF64;
    if (to == PT::kF16 || to == PT::kBF16)
      return (IsF8Type(from) && from != PT::kF8E8M0FNU) || from == PT::kF4E2M1FN;
    return false;
  }
  if (from == PT::kC64) return to == PT::kC128;
  return false;
}

bool IsStatic(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes())
      if (!IsStatic(s)) return false;
    return true;
  }
  return !shape.is_dynamic();
}

StatusOr<HloInstruction*> SimplifyElementwise(Context& ctx, HloInstruction* instr) {
  const Shape& shape = instr->shape();
  if (!shape.IsArray() || !instr->IsElementwise()) return nullptr;
  const PrimitiveType t = shape.element_type();
  const bool is_int = IsIntegralType(t);
  const bool is_float = IsFloatingPointType(t);
  const bool is_pred = t == PrimitiveType::kPred;
  HloInstruction* a = instr->operand_count() > 0 ? instr->operand(0) : nullptr;
  HloInstruction* b = instr->operand_count() > 1 ? instr->operand(1) : nullptr;

  switch (instr->opcode()) {
    case HloOpcode::kAdd:  // add-zero
      if (is_int) {
        if (IsSplat(b, Splat::kZero)) return a;
        if (IsSplat(a, Splat::kZero)) return b;
      } else if (is_float) {
        if (IsSplat(b, Splat::kNegZero)) return a;
        if (IsSplat(a, Splat::kNegZero)) return b;
      }
      return nullptr;
    case HloOpcode::kSubtract:
      if (is_int && IsSplat(b, Splat::kZero)) return a;                // sub-zero
      if (is_float && IsSplat(b, Splat::kPosZero)) return a;           // sub-zero
      if (is_int && a == b) return MakeSplat(ctx, shape, Splat::kZero, instr);  // sub-self
      return nullptr;
    case HloOpcode::kMultiply:
      if (is_int || is_float) {  // mul-one
        if (IsSplat(b, Splat::kOne)) return a;
        if (IsSplat(a, Splat::kOne)) return b;
      }
      if (is_int) {  // mul-zero
        if (IsSplat(b, Splat::kZero)) return b;
        if (IsSplat(a, Splat::kZero)) return a;
      }
      return nullptr;
    case HloOpcode::kDivide: {
      if ((is_int || is_float) && IsSplat(b, Splat::kOne)) return a;  // div-one
      if (!is_float) return nullptr;
      // div-pow2: x / 2^k is exactly x * 2^-k when 2^-k is representable.
      std::optional<double> v = SplatValue(b);
      if (!v || *v == 0 || !std::isfinite(*v)) return nullptr;
      int exp = 0;
      if (std::frexp(std::fabs(*v), &exp) != 0.5) return nullptr;
      Literal r(Shape::ArrayWithDefaultLayout(t, {}));
      r.SetFromDouble(0, 1.0 / *v);
      if (r.GetAsDouble(0) != 1.0 / *v) return nullptr;
      HloInstruction* c = ctx.editor.Constant(std::move(r), instr);
      KILN_ASSIGN_OR_RETURN(HloInstruction * bc, ctx.editor.BroadcastScalar(c, shape, instr));
      return ctx.editor.Binary(HloOpcode::kMultiply, a, bc, &shape, instr);
    }
    case HloOpcode::kAnd:
      if (!is_int && !is_pred) return nullptr;
      if (a == b) return a;  // idempotent
      if (IsSplat(b, Splat::kAllOnes)) return a;  // and-identity
      if (IsSplat(a, Splat::kAllOnes)) return b;
      if (IsSplat(b, Splat::kZero)) return b;
      if (IsSplat(a, Splat::kZero)) return a;
      return nullptr;
    case HloOpcode::kOr:
      if (!is_int && !is_pred) return nullptr;
      if (a == b) return a;  // idempotent
      if (IsSplat(b, Splat::kZero)) return a;  // or-identity
      if (IsSplat(a, Splat::kZero)) return b;
      if (IsSplat(b, Splat::kAllOnes)) return b;
      if (IsSplat(a, Splat::kAllOnes)) return a;
      return nullptr;
    case HloOpcode::kXor:  // xor-identity
      if (!is_int && !is_pred) return nullptr;
      if (IsSplat(b, Splat::kZero)) return a;
      if (IsSplat(a, Splat::kZero)) return b;
      if (a == b) return MakeSplat(ctx, shape, Splat::kZero, instr);
      return nullptr;
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: {
      if (IsComplexType(t)) return nullptr;
      if (a == b) return a;  // idempotent
      // minmax-bound: the bound never wins (NaN still propagates from x).
      const Splat bound = instr->opcode() == HloOpcode::kMaximum ? Splat::kLowest : Splat::kHighest;
      if (IsSplat(b, bound)) return a;
      if (IsSplat(a, bound)) return b;
      return nullptr;
    }
    case HloOpcode::kSelect: {
      if (a->shape().element_type() != PrimitiveType::kPred) return nullptr;
      HloInstruction* on_true = instr->operand(1);
      HloInstruction* on_false = instr->operand(2);
      if (on_true == on_false) return on_true;  // select-same
      std::optional<bool> p = SplatPred(a);     // select-const
      if (p) return *p ? on_true : on_false;
      if (is_pred) {  // select-pred
        std::optional<bool> x = SplatPred(on_true), y = SplatPred(on_false);
        if (x && y && *x && !*y) return a;
        if (x && y && !*x && *y) return ctx.editor.Unary(HloOpcode::kNot, a, &shape, instr);
      }
      return nullptr;
    }
    case HloOpcode::kNegate:  // negate-negate
      if (a->opcode() == HloOpcode::kNegate) return a->operand(0);
      return nullptr;
    case HloOpcode::kNot:  // not-not
      if (a->opcode() == HloOpcode::kNot) return a->operand(0);
      return nullptr;
    case HloOpcode::kConvert:  // convert-same
      if (a->shape().element_type() == t) return a;
      return nullptr;
    case HloOpcode::kCompare: {  // compare-self
      if (a != b) return nullptr;
      const PrimitiveType ot = a->shape().element_type();
      const bool exact = IsIntegralType(ot) || ot == PrimitiveType::kPred ||
                         (IsFloatingPointType(ot) &&
                          instr->attrs().comparison_type == ComparisonType::kTotalOrder);
      if (!exact) return nullptr;
      switch (instr->attrs().comparison_direction) {
        case ComparisonDirection::kEq: case ComparisonDirection::kGe: case ComparisonDirection::kLe:
          return MakeSplatBool(ctx, shape, true, instr);
        default:
          return MakeSplatBool(ctx, shape, false, instr);
      }
    }
    default:
      return nullptr;
  }
}

}  // namespace algsimp

StatusOr<bool> AlgebraicSimplifier::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    const int64_t before = c->instruction_count();
    HloEditor editor(c);
    algsimp::Context ctx{editor, options_};
    bool replaced_any = false;
    for (int sweep = 0; sweep < options_.max_sweeps; ++sweep) {
      bool replaced = false;
      for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
        if (instr->user_count() == 0 && instr != c->root_instruction()) continue;  // dead
        if (!instr->control_predecessors().empty() || !instr->control_successors().empty())
          continue;
        if (!algsimp::IsStatic(instr->shape())) continue;
        bool static_operands = true;
        for (const HloInstruction* op : instr->operands())
          static_operands &= algsimp::IsStatic(op->shape());
        if (!static_operands) continue;

        HloInstruction* r = nullptr;
        KILN_ASSIGN_OR_RETURN(r, algsimp::SimplifyElementwise(ctx, instr));
        if (!r) {
          KILN_ASSIGN_OR_RETURN(r, algsimp::SimplifyShapeOp(ctx, instr));
        }
        if (!r) {
          KILN_ASSIGN_OR_RETURN(r, algsimp::SimplifyDotOrReduce(ctx, instr));
        }
        // A rewrite whose result cannot stand in for instr (e.g. a layout the entry result
        // needs) is dropped; what it built is removed as dead code below.
        if (!r || r == instr || !CanReplace(*instr, *r)) continue;
        instr->ReplaceAllUsesWith(r);
        replaced = true;
      }
      if (!replaced) break;
      replaced_any = true;
      KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    }
    KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    // Dead code that was there before counts as a change; what a dropped rewrite built does not.
    if (replaced_any || c->instruction_count() < before) changed = true;
  }
  return changed;
}

}  // namespace kiln
