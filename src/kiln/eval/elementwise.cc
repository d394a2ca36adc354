// Elementwise kernels: unary and binary math, compare, select, clamp, map. The element
// semantics live in elementwise_ops.h; convert and friends in convert.cc.
//
// Operands have the result's dimensions, except that a rank-0 operand is broadcast (clamp's
// bounds and select's predicate may be scalars).
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/elementwise_ops.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/scalar_program.h"

namespace kiln {
namespace eval_internal {
namespace {

// Checks that every operand is an array with the result's dimensions (or a scalar), and
// returns per-operand element strides (1, or 0 for a broadcast scalar).
StatusOr<std::vector<int64_t>> ElementwiseStrides(const HloInstruction& instr,
                                                  std::span<const Literal* const> ops) {
  if (!instr.shape().IsArray())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           " must produce an array, not ", instr.shape().ToString(false));
  std::vector<int64_t> strides;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Shape& s = ops[i]->shape();
    if (!s.IsArray())
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                             i, " is not an array");
    if (s.dimensions() == instr.shape().dimensions()) {
      strides.push_back(1);
    } else if (s.rank() == 0) {
      strides.push_back(0);
    } else {
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ", i,
                             " has shape ", s.ToString(false), ", expected dimensions of ",
                             instr.shape().ToString(false));
    }
  }
  return strides;
}

Status TypeMismatch(const HloInstruction& instr, PrimitiveType want) {
  return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " produces ",
                         PrimitiveTypeName(want), " from its operands, but its shape is ",
                         instr.shape().ToString(false));
}

Status UnsupportedType(const HloInstruction& instr, PrimitiveType t) {
  return UnsupportedInstruction(instr, StrCat("element type ", PrimitiveTypeName(t)));
}

template <class Op>
StatusOr<Literal> EvalUnary(const HloInstruction& instr, std::span<const Literal* const> ops,
                            Evaluator&) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ElementwiseStrides(instr, ops));
  const Literal& a = *ops[0];
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  const int64_t sa = strides[0];
  PrimitiveType t = a.shape().element_type();
  Status status;
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (Op::template kOk<T>) {
      using O = decltype(Op::Apply(&instr, T{}));
      if (PrimitiveTypeOf<O>() != out.shape().element_type()) {
        status = TypeMismatch(instr, PrimitiveTypeOf<O>());
        return;
      }
      const T* in = a.data<T>().data();
      O* o = out.data<O>().data();
      for (int64_t i = 0; i < n; ++i) o[i] = Op::Apply(&instr, in[i * sa]);
    } else {
      status = UnsupportedType(instr, t);
    }
  });
  KILN_RETURN_IF_ERROR(status);
  return out;
}

template <class Op>
StatusOr<Literal> EvalBinary(const HloInstruction& instr, std::span<const Literal* const> ops,
                             Evaluator&) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ElementwiseStrides(instr, ops));
  const Literal& a = *ops[0];
  const Literal& b = *ops[1];
  PrimitiveType t = a.shape().element_type();
  if (b.shape().element_type() != t)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           ": operand types differ (", PrimitiveTypeName(t), " vs ",
                           PrimitiveTypeName(b.shape().element_type()), ")");
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  const int64_t sa = strides[0], sb = strides[1];
  Status status;
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (Op::template kOk<T>) {
      using O = decltype(Op::Apply(&instr, T{}, T{}));
      if (PrimitiveTypeOf<O>() != out.shape().element_type()) {
        status = TypeMismatch(instr, PrimitiveTypeOf<O>());
        return;
      }
      const T* x = a.data<T>().data();
      const T* y = b.data<T>().data();
      O* o = out.data<O>().data();
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = Op::Apply(&instr, x[i], y[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = Op::Apply(&instr, x[i * sa], y[i * sb]);
      }
    } else {
      status = UnsupportedType(instr, t);
    }
  });
  KILN_RETURN_IF_ERROR(status);
  return out;
}

// The comparison kind in effect for operands of type t.
CompareKind EffectiveCompareKind(const HloInstruction& instr, PrimitiveType t) {
  ComparisonType ct = instr.attrs().comparison_type;
  if (ct == ComparisonType::kDefault) ct = DefaultComparisonType(t);
  if (IsFloatingPointType(t)) return ct == ComparisonType::kTotalOrder ? CompareKind::kTotalOrder
                                                                       : CompareKind::kIeee;
  if (IsIntegralType(t)) {
    if (ct == ComparisonType::kSigned) return CompareKind::kSigned;
    if (ct == ComparisonType::kUnsigned) return CompareKind::kUnsigned;
  }
  return CompareKind::kIeee;
}

// Calls f.template operator()<CompareOp<D, K>>() for the instruction's direction and kind.
template <class F>
decltype(auto) WithCompareOp(const HloInstruction& instr, PrimitiveType t, F&& f) {
  CompareKind k = EffectiveCompareKind(instr, t);
  auto with_dir = [&]<ComparisonDirection D>() -> decltype(auto) {
    switch (k) {
      case CompareKind::kTotalOrder:
        return f.template operator()<CompareOp<D, CompareKind::kTotalOrder>>();
      case CompareKind::kSigned:
        return f.template operator()<CompareOp<D, CompareKind::kSigned>>();
      case CompareKind::kUnsigned:
        return f.template operator()<CompareOp<D, CompareKind::kUnsigned>>();
      default:
        return f.template operator()<CompareOp<D, CompareKind::kIeee>>();
    }
  };
  switch (instr.attrs().comparison_direction) {
    case ComparisonDirection::kEq: return with_dir.template operator()<ComparisonDirection::kEq>();
    case ComparisonDirection::kNe: return with_dir.template operator()<ComparisonDirection::kNe>();
    case ComparisonDirection::kGe: return with_dir.template operator()<ComparisonDirection::kGe>();
    case ComparisonDirection::kGt: return with_dir.template operator()<ComparisonDirection::kGt>();
    case ComparisonDirection::kLe: return with_dir.template operator()<ComparisonDirection::kLe>();
    default: return with_dir.template operator()<ComparisonDirection::kLt>();
  }
}

StatusOr<Literal> EvalCompare(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator& e) {
  if (!ops[0]->shape().IsArray()) return ExpectArray(*ops[0], instr, "operand 0");
  return WithCompareOp(instr, ops[0]->shape().element_type(),
                       [&]<class Op>() { return EvalBinary<Op>(instr, ops, e); });
}

// select(pred, on_true, on_false): a byte copy per element, any element type.
StatusOr<Literal> EvalSelect(const HloInstruction& instr, std::span<const Literal* const> ops,
                             Evaluator&) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ElementwiseStrides(instr, ops));
  if (ops[0]->shape().element_type() != PrimitiveType::kPred)
    return InvalidArgument("select %", instr.name(), ": the predicate must be pred");
  PrimitiveType t = instr.shape().element_type();
  if (ops[1]->shape().element_type() != t || ops[2]->shape().element_type() != t)
    return InvalidArgument("select %", instr.name(), ": branch types differ from the result");
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  const int64_t w = PrimitiveByteWidth(t);
  const bool* p = ops[0]->data<bool>().data();
  const uint8_t* x = ops[1]->untyped_data();
  const uint8_t* y = ops[2]->untyped_data();
  uint8_t* o = out.untyped_data();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = p[i * strides[0]] ? x + i * strides[1] * w : y + i * strides[2] * w;
    std::memcpy(o + i * w, src, w);
  }
  return out;
}

// clamp(lo, x, hi) = min(hi, max(x, lo)), NaN in any operand propagating (lo first).
struct ClampOp {
  template <class T> static constexpr bool kOk = !kIsComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T lo, T x, T hi) {
    if constexpr (kIsPred<T>) {
      bool m = x || lo;
      return m && hi;
    } else {
      auto wl = Widen(lo), wx = Widen(x), wh = Widen(hi);
      if constexpr (kIsFloat<T>) {
        if (std::isnan(wl)) return lo;
        if (std::isnan(wx)) return x;
        if (std::isnan(wh)) return hi;
      }
      auto m = wx < wl ? wl : wx;          // std::max(x, lo)
      return Narrow<T>(m < wh ? m : wh);  // std::min(hi, m)
    }
  }
};

StatusOr<Literal> EvalClamp(const HloInstruction& instr, std::span<const Literal* const> ops,
                            Evaluator&) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ElementwiseStrides(instr, ops));
  PrimitiveType t = instr.shape().element_type();
  for (int k = 0; k < 3; ++k)
    if (ops[k]->shape().element_type() != t)
      return InvalidArgument("clamp %", instr.name(), ": operand ", k, " type differs");
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  Status status;
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (ClampOp::kOk<T>) {
      const T* lo = ops[0]->data<T>().data();
      const T* x = ops[1]->data<T>().data();
      const T* hi = ops[2]->data<T>().data();
      T* o = out.data<T>().data();
      for (int64_t i = 0; i < n; ++i)
        o[i] = ClampOp::Apply(&instr, lo[i * strides[0]], x[i * strides[1]], hi[i * strides[2]]);
    } else {
      status = UnsupportedType(instr, t);
    }
  });
  KILN_RETURN_IF_ERROR(status);
  return out;
}

// map(operands...), to_apply: applies the scalar computation per element.
StatusOr<Literal> EvalMap(const HloInstruction& instr, std::span<const Literal* const> ops,
                          Evaluator& e) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ElementwiseStrides(instr, ops));
  const HloComputation* f = instr.to_apply();
  if (!f) return InvalidArgument("map %", instr.name(), " has no to_apply");
  if (f->num_parameters() != static_cast<int64_t>(ops.size()))
    return InvalidArgument("map %", instr.name(), ": to_apply takes ", f->num_parameters(),
                           " parameters, map has ", ops.size(), " operands");
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  const int64_t out_w = PrimitiveByteWidth(instr.shape().element_type());
  const ScalarProgram* program = e.GetScalarProgram(*f);
  bool fast = program && program->num_results() == 1 &&
              program->result_type(0) == instr.shape().element_type();
  for (size_t k = 0; fast && k < ops.size(); ++k)
    fast = program->parameter_type(static_cast<int>(k)) == ops[k]->shape().element_type();
  std::vector<int64_t> widths;
  for (const Literal* l : ops) widths.push_back(PrimitiveByteWidth(l->shape().element_type()));
  if (fast) {
    std::vector<const void*> args(ops.size());
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < ops.size(); ++k)
        args[k] = ops[k]->untyped_data() + i * strides[k] * widths[k];
      void* res = out.untyped_data() + i * out_w;
      program->Run(args, {&res, 1});
    }
    return out;
  }
  // General path: scalar literals per element.
  std::vector<Literal> scalars;
  std::vector<const Literal*> args;
  for (const Literal* l : ops)
    scalars.emplace_back(Shape::ArrayWithDefaultLayout(l->shape().element_type(), {}));
  for (const Literal& s : scalars) args.push_back(&s);
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ops.size(); ++k)
      std::memcpy(scalars[k].untyped_data(), ops[k]->untyped_data() + i * strides[k] * widths[k],
                  widths[k]);
    KILN_ASSIGN_OR_RETURN(Literal r, e.Evaluate(*f, args));
    if (!r.shape().IsArray() || r.element_count() != 1 ||
        r.shape().element_type() != instr.shape().element_type())
      return InvalidArgument("map %", instr.name(), ": to_apply returned ",
                             r.shape().ToString(false));
    std::memcpy(out.untyped_data() + i * out_w, r.untyped_data(), out_w);
  }
  return out;
}

// ---- Element functions for ScalarProgram ----

template <class Op, class T>
void UnaryThunk(const HloInstruction* c, const void* const* in, void* out) {
  using O = decltype(Op::Apply(c, T{}));
  *static_cast<O*>(out) = Op::Apply(c, *static_cast<const T*>(in[0]));
}
template <class Op, class T>
void BinaryThunk(const HloInstruction* c, const void* const* in, void* out) {
  using O = decltype(Op::Apply(c, T{}, T{}));
  *static_cast<O*>(out) = Op::Apply(c, *static_cast<const T*>(in[0]), *static_cast<const T*>(in[1]));
}
template <class T>
void ClampThunk(const HloInstruction* c, const void* const* in, void* out) {
  *static_cast<T*>(out) = ClampOp::Apply(c, *static_cast<const T*>(in[0]),
                                         *static_cast<const T*>(in[1]),
                                         *static_cast<const T*>(in[2]));
}
void SelectThunk(const HloInstruction* c, const void* const* in, void* out) {
  int w = PrimitiveByteWidth(c->shape().element_type());
  std::memcpy(out, *static_cast<const bool*>(in[0]) ? in[1] : in[2], w);
}

template <class Op>
StatusOr<ElementFn> UnaryFn(const HloInstruction& instr) {
  PrimitiveType t = instr.operand(0)->shape().element_type();
  ElementFn fn = ArrayTypeSwitch(t, [&](auto tag) -> ElementFn {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (Op::template kOk<T>) {
      using O = decltype(Op::Apply(&instr, T{}));
      if (PrimitiveTypeOf<O>() != instr.shape().element_type()) return nullptr;
      return &UnaryThunk<Op, T>;
    } else {
      return nullptr;
    }
  });
  if (!fn) return UnsupportedType(instr, t);
  return fn;
}

template <class Op>
StatusOr<ElementFn> BinaryFn(const HloInstruction& instr) {
  PrimitiveType t = instr.operand(0)->shape().element_type();
  if (instr.operand(1)->shape().element_type() != t) return UnsupportedType(instr, t);
  ElementFn fn = ArrayTypeSwitch(t, [&](auto tag) -> ElementFn {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (Op::template kOk<T>) {
      using O = decltype(Op::Apply(&instr, T{}, T{}));
      if (PrimitiveTypeOf<O>() != instr.shape().element_type()) return nullptr;
      return &BinaryThunk<Op, T>;
    } else {
      return nullptr;
    }
  });
  if (!fn) return UnsupportedType(instr, t);
  return fn;
}

// X(opcode, Op) for every unary and binary op with a functor.
#define KILN_UNARY_OPS(X)                                                                    \
  X(kAbs, AbsOp) X(kAcos, AcosOp) X(kAcosh, AcoshOp) X(kAsin, AsinOp) X(kAsinh, AsinhOp)      \
  X(kAtan, AtanOp) X(kAtanh, AtanhOp) X(kCbrt, CbrtOp) X(kCeil, CeilOp) X(kClz, ClzOp)       \
  X(kCos, CosOp) X(kCosh, CoshOp) X(kErf, ErfOp) X(kExp, ExpOp) X(kExpm1, Expm1Op)           \
  X(kFloor, FloorOp) X(kImag, ImagOp) X(kIsFinite, IsFiniteOp) X(kLog, LogOp)                \
  X(kLog1p, Log1pOp) X(kLogistic, LogisticOp) X(kNegate, NegateOp) X(kNot, NotOp)            \
  X(kPopulationCount, PopcntOp) X(kReal, RealOp) X(kRoundNearestAfz, RoundAfzOp)             \
  X(kRoundNearestEven, RoundEvenOp) X(kRsqrt, RsqrtOp) X(kSign, SignOp) X(kSin, SinOp)       \
  X(kSinh, SinhOp) X(kSqrt, SqrtOp) X(kTan, TanOp) X(kTanh, TanhOp)

#define KILN_BINARY_OPS(X)                                                                   \
  X(kAdd, AddOp) X(kSubtract, SubtractOp) X(kMultiply, MultiplyOp) X(kDivide, DivideOp)      \
  X(kRemainder, RemainderOp) X(kMaximum, MaximumOp) X(kMinimum, MinimumOp)                   \
  X(kPower, PowerOp) X(kAtan2, Atan2Op) X(kAnd, AndOp) X(kOr, OrOp) X(kXor, XorOp)           \
  X(kShiftLeft, ShiftLeftOp) X(kShiftRightArithmetic, ShiftRightArithmeticOp)                \
  X(kShiftRightLogical, ShiftRightLogicalOp) X(kMulhi, MulhiOp) X(kComplex, ComplexOp)

}  // namespace

StatusOr<ElementFn> ResolveElementFn(const HloInstruction& instr) {
  for (const HloInstruction* op : instr.operands())
    if (!op->shape().IsArray()) return UnsupportedInstruction(instr, "non-array operand");
  switch (instr.opcode()) {
#define KILN_UNARY_CASE(opc, Op) \
  case HloOpcode::opc:           \
    return UnaryFn<Op>(instr);
    KILN_UNARY_OPS(KILN_UNARY_CASE)
#undef KILN_UNARY_CASE
#define KILN_BINARY_CASE(opc, Op) \
  case HloOpcode::opc:            \
    return BinaryFn<Op>(instr);
    KILN_BINARY_OPS(KILN_BINARY_CASE)
#undef KILN_BINARY_CASE
    case HloOpcode::kCompare:
      return WithCompareOp(instr, instr.operand(0)->shape().element_type(),
                           [&]<class Op>() { return BinaryFn<Op>(instr); });
    case HloOpcode::kSelect:
      if (instr.operand(0)->shape().element_type() != PrimitiveType::kPred ||
          instr.operand(1)->shape().element_type() != instr.shape().element_type() ||
          instr.operand(2)->shape().element_type() != instr.shape().element_type())
        return UnsupportedInstruction(instr, "select operand types");
      return &SelectThunk;
    case HloOpcode::kClamp: {
      PrimitiveType t = instr.shape().element_type();
      for (const HloInstruction* op : instr.operands())
        if (op->shape().element_type() != t) return UnsupportedType(instr, op->shape().element_type());
      ElementFn fn = ArrayTypeSwitch(t, [&](auto tag) -> ElementFn {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (ClampOp::kOk<T>) return &ClampThunk<T>;
        else return nullptr;
      });
      if (!fn) return UnsupportedType(instr, t);
      return fn;
    }
    case HloOpcode::kConvert:
    case HloOpcode::kBitcastConvert:
    case HloOpcode::kReducePrecision:
      return ResolveConvertElementFn(instr);
    default:
      return UnsupportedInstruction(instr, "no scalar element form");
  }
}

}  // namespace eval_internal

void RegisterElementwiseKernels(KernelRegistry& r) {
  using namespace eval_internal;  // NOLINT
#define KILN_REGISTER_UNARY(opc, Op) r.Register(HloOpcode::opc, EvalUnary<Op>);
  KILN_UNARY_OPS(KILN_REGISTER_UNARY)
#undef KILN_REGISTER_UNARY
#define KILN_REGISTER_BINARY(opc, Op) r.Register(HloOpcode::opc, EvalBinary<Op>);
  KILN_BINARY_OPS(KILN_REGISTER_BINARY)
#undef KILN_REGISTER_BINARY
  r.Register(HloOpcode::kCompare, EvalCompare);
  r.Register(HloOpcode::kSelect, EvalSelect);
  r.Register(HloOpcode::kClamp, EvalClamp);
  r.Register(HloOpcode::kMap, EvalMap);
  RegisterConvertKernels(r);
}

}  // namespace kiln
