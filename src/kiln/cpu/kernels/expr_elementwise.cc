// Typed block loops for the elementwise ops of an ExprProgram. Each loop applies the reference
// evaluator's element functor (eval/elementwise_ops.h) to arrays, so results are the
// evaluator's; f16 and bf16 are "lifted": decoded to f32 with the fast codecs, computed with the
// f32 functor, rounded back per op -- exactly what the evaluator's functors do for them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include "kiln/cpu/kernels/convert_ops.h"
#include "kiln/cpu/kernels/expr_internal.h"
#include "kiln/eval/elementwise_ops.h"

namespace kiln::cpu::internal {
namespace {

using namespace eval_internal;  // NOLINT: the functors

template <class T>
using Lifted = std::conditional_t<kIsHalfLike<T>, float, T>;

template <class T>
inline Lifted<T> Up(T v) {
  if constexpr (kIsHalfLike<T>) return HalfToFloat(v);
  else return v;
}
// Back from the functor's result: half-like results round; others pass through.
template <class O, class R>
inline O Down(R r) {
  if constexpr (kIsHalfLike<O>) return FloatToHalf<O>(r);
  else return r;
}

// Result type of functor F on (lifted) T, mapped back: a float result of a lifted half-like
// op is the half-like type again.
template <class F, class T>
using UnaryOut = std::conditional_t<
    kIsHalfLike<T> && std::is_same_v<decltype(F::Apply(nullptr, Lifted<T>{})), float>, T,
    decltype(F::Apply(nullptr, Lifted<T>{}))>;
template <class F, class T>
using BinaryOut = std::conditional_t<
    kIsHalfLike<T> &&
        std::is_same_v<decltype(F::Apply(nullptr, Lifted<T>{}, Lifted<T>{})), float>,
    T, decltype(F::Apply(nullptr, Lifted<T>{}, Lifted<T>{}))>;

template <class F, class T>
void UnaryLoop(const ExprOp& op, int64_t n, void* const* p) {
  using O = UnaryOut<F, T>;
  const T* __restrict a = static_cast<const T*>(p[op.in[0]]);
  O* __restrict o = static_cast<O*>(p[op.out]);
  const HloInstruction* c = op.instr;
  for (int64_t i = 0; i < n; ++i) o[i] = Down<O>(F::Apply(c, Up(a[i])));
}

template <class F, class T>
void BinaryLoop(const ExprOp& op, int64_t n, void* const* p) {
  using O = BinaryOut<F, T>;
  const T* __restrict a = static_cast<const T*>(p[op.in[0]]);
  const T* __restrict b = static_cast<const T*>(p[op.in[1]]);
  O* __restrict o = static_cast<O*>(p[op.out]);
  const HloInstruction* c = op.instr;
  for (int64_t i = 0; i < n; ++i) o[i] = Down<O>(F::Apply(c, Up(a[i]), Up(b[i])));
}

// BinaryLoop with operand kU read once (element 0): Note [Uniform block values].
template <class F, class T, int kU>
void UniformOperandLoop(const ExprOp& op, int64_t n, void* const* p) {
  using O = BinaryOut<F, T>;
  const T* __restrict a = static_cast<const T*>(p[op.in[0]]);
  const T* __restrict b = static_cast<const T*>(p[op.in[1]]);
  O* __restrict o = static_cast<O*>(p[op.out]);
  const HloInstruction* c = op.instr;
  if constexpr (kU == 0) {
    const auto s = Up(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = Down<O>(F::Apply(c, s, Up(b[i])));
  } else {
    const auto s = Up(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = Down<O>(F::Apply(c, Up(a[i]), s));
  }
}

// clamp(lo, x, hi) = min(hi, max(x, lo)); a NaN operand propagates (lo first), as the
// evaluator's clamp.
struct ClampFn {
  template <class T>
  static T Apply(T lo, T x, T hi) {
    if constexpr (std::is_same_v<T, bool>) {
      bool m = x || lo;
      return m && hi;
    } else {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(lo)) return lo;
        if (std::isnan(x)) return x;
        if (std::isnan(hi)) return hi;
      }
      T m = x < lo ? lo : x;
      return m < hi ? m : hi;
    }
  }
};

template <class T>
void ClampLoop(const ExprOp& op, int64_t n, void* const* p) {
  const T* __restrict lo = static_cast<const T*>(p[op.in[0]]);
  const T* __restrict x = static_cast<const T*>(p[op.in[1]]);
  const T* __restrict hi = static_cast<const T*>(p[op.in[2]]);
  T* __restrict o = static_cast<T*>(p[op.out]);
  if constexpr (kIsHalfLike<T>) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = FloatToHalf<T>(ClampFn::Apply(Up(lo[i]), Up(x[i]), Up(hi[i])));
  } else if constexpr (kIsInt<T>) {
    // Integers compare in their wide type, as the evaluator does (same order).
    for (int64_t i = 0; i < n; ++i) o[i] = ClampFn::Apply(lo[i], x[i], hi[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = ClampFn::Apply(lo[i], x[i], hi[i]);
  }
}

template <int W>
struct Bytes {
  uint8_t b[W];
};

// Branch-free for the integer widths (a mask blend the compiler vectorizes): with a random
// mask (attention masks in the benchmarks) the branchy loop mispredicted every other element
// and was 3/4 of a masked softmax's time.
template <class U>
void SelectLoop(const ExprOp& op, int64_t n, void* const* p) {
  const U* __restrict a = static_cast<const U*>(p[op.in[1]]);
  const U* __restrict b = static_cast<const U*>(p[op.in[2]]);
  U* __restrict o = static_cast<U*>(p[op.out]);
  if constexpr (std::is_integral_v<U>) {
    const uint8_t* __restrict pred = static_cast<const uint8_t*>(p[op.in[0]]);
    for (int64_t i = 0; i < n; ++i) {
      const U m = static_cast<U>(U{0} - static_cast<U>(pred[i] != 0));
      o[i] = static_cast<U>((a[i] & m) | (b[i] & static_cast<U>(~m)));
    }
  } else {
    const bool* __restrict pred = static_cast<const bool*>(p[op.in[0]]);
    for (int64_t i = 0; i < n; ++i) o[i] = pred[i] ? a[i] : b[i];
  }
}

template <class D, class S>
void ConvertLoop(const ExprOp& op, int64_t n, void* const* p) {
  const S* __restrict a = static_cast<const S*>(p[op.in[0]]);
  D* __restrict o = static_cast<D*>(p[op.out]);
  for (int64_t i = 0; i < n; ++i) o[i] = Convert<D, S>(a[i]);
}

void BitcastCopyLoop(const ExprOp& op, int64_t n, void* const* p) {
  std::memcpy(p[op.out], p[op.in[0]], static_cast<size_t>(n) * op.width);
}

// Note [Vectorized f32 transcendentals]
//   exp, tanh, log and logistic on f32 dominate fused loops (softmax, GELU, LSTM gates): libm
//   computes them one element at a time (12-30 ns each here). These loops use Eigen's packet
//   math instead (under 1 ns per element with AVX-512), which agrees with libm to a few ulps
//   where its approximations hold (measured over [-120, 120] and special values: exp, log,
//   tanh within 3e-7 relative). Lanes outside that range are recomputed: exp of x in (88, 89]
//   (Eigen overflows early) with libm, of x in [-104, -87) (denormal results) as exp(x/2)^2,
//   below -104 it is 0 and above 89 +inf (FastExpF32); log of inputs below
//   FLT_MIN (Eigen clamps denormals). logistic is 1 / (1 + exp(-x)) with that exp, as the
//   evaluator computes it. NaN and infinities follow libm.
//   (Added by cpurt for the CPU benchmark; BackendTolerance covers the ulps.)
// o = exp(sign * a); o and a do not overlap.
// One pass: Eigen's packet exp with the far-outside lanes fixed by selects -- libm's answer
// is known there: 0 below -104 (under half the smallest denormal, masked attention scores of
// -inf or -1e9), +inf above 89 -- and the border lanes noted. Border lanes are rare: denormal
// results ([-104, -87): real in softmax over wide scores, where each went through libm at ~3 ns)
// are exp(x / 2)^2 (x / 2 is exact and exp(x / 2) normal, so the square rounds once onto the
// denormal grid, within a denormal ulp of libm); (88, 89] go through libm. NaN lanes keep
// Eigen's NaN. (The earlier version tracked the range in the first pass and fixed whole blocks
// in a second one: with a causal mask every block has masked lanes, and the second pass was
// 40% of the masked softmax.)
template <int kSign>
void FastExpF32(const float* __restrict a, float* __restrict o, int64_t n) {
  namespace ei = Eigen::internal;
  using P = ei::packet_traits<float>::type;
  constexpr int64_t kW = static_cast<int64_t>(sizeof(P) / sizeof(float));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const P sign = ei::pset1<P>(float(kSign)), zero = ei::pset1<P>(0.0f);
  const P inf = ei::pset1<P>(kInf), half = ei::pset1<P>(0.5f);
  const P m87 = ei::pset1<P>(-87.0f), m104 = ei::pset1<P>(-104.0f);
  const P p88 = ei::pset1<P>(88.0f), p89 = ei::pset1<P>(89.0f);
  P border = zero;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const P x = ei::pmul(ei::ploadu<P>(a + i), sign);
    P v = ei::pexp(x);
    // In range (the common case: two compares and a test per packet), else the selects.
    if (ei::predux_any(ei::por(ei::pcmp_lt(x, m87), ei::pcmp_lt(p88, x)))) {
      v = ei::pselect(ei::pcmp_lt(x, m104), zero, v);
      v = ei::pselect(ei::pcmp_lt(p89, x), inf, v);
      border = ei::por(border, ei::pand(ei::pcmp_lt(x, m87), ei::pcmp_le(m104, x)));
      border = ei::por(border, ei::pand(ei::pcmp_lt(p88, x), ei::pcmp_le(x, p89)));
    }
    ei::pstoreu(o + i, v);
  }
  for (; i < n; ++i) {
    const float x = kSign * a[i];
    o[i] = x < -104.0f ? 0.0f : x > 89.0f ? kInf : std::exp(x);
  }
  if (!ei::predux_any(border)) return;
  int64_t j = 0;
  for (; j + kW <= n; j += kW) {
    const P x = ei::pmul(ei::ploadu<P>(a + j), sign);
    const P small = ei::pand(ei::pcmp_lt(x, m87), ei::pcmp_le(m104, x));
    const P large = ei::pand(ei::pcmp_lt(p88, x), ei::pcmp_le(x, p89));
    if (ei::predux_any(small)) {
      const P h = ei::pexp(ei::pmul(x, half));
      ei::pstoreu(o + j, ei::pselect(small, ei::pmul(h, h), ei::ploadu<P>(o + j)));
    }
    if (ei::predux_any(large))
      for (int64_t k = j; k < j + kW; ++k) {
        const float y = kSign * a[k];
        if (y > 88.0f && y <= 89.0f) o[k] = std::exp(y);
      }
  }
}

void FastExpLoop(const ExprOp& op, int64_t n, void* const* p) {
  FastExpF32<1>(static_cast<const float*>(p[op.in[0]]), static_cast<float*>(p[op.out]), n);
}

void FastLogisticLoop(const ExprOp& op, int64_t n, void* const* p) {
  float* __restrict o = static_cast<float*>(p[op.out]);
  FastExpF32<-1>(static_cast<const float*>(p[op.in[0]]), o, n);
  for (int64_t i = 0; i < n; ++i) o[i] = 1.0f / (1.0f + o[i]);
}

void FastTanhLoop(const ExprOp& op, int64_t n, void* const* p) {
  const float* a = static_cast<const float*>(p[op.in[0]]);
  Eigen::Map<Eigen::ArrayXf>(static_cast<float*>(p[op.out]), n) =
      Eigen::Map<const Eigen::ArrayXf>(a, n).tanh();
}

void FastLogLoop(const ExprOp& op, int64_t n, void* const* p) {
  const float* __restrict a = static_cast<const float*>(p[op.in[0]]);
  float* __restrict o = static_cast<float*>(p[op.out]);
  Eigen::Map<Eigen::ArrayXf>(o, n) = Eigen::Map<const Eigen::ArrayXf>(a, n).log();
  const float min_normal = std::numeric_limits<float>::min();
  int denormal = 0;
  for (int64_t i = 0; i < n; ++i) denormal |= (a[i] < min_normal) & (a[i] > 0.0f);
  if (!denormal) return;
  for (int64_t i = 0; i < n; ++i)
    if (a[i] < min_normal && a[i] > 0.0f) o[i] = std::log(a[i]);
}

BlockFn FastF32Fn(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kExp: return &FastExpLoop;
    case HloOpcode::kLogistic: return &FastLogisticLoop;
    case HloOpcode::kTanh: return &FastTanhLoop;
    case HloOpcode::kLog: return &FastLogLoop;
    default: return nullptr;
  }
}

// The typed loop of functor F for operand type t (fast types only).
template <class F, bool kBinary>
BlockFn TypedFn(PrimitiveType t, PrimitiveType out) {
  return FastTypeSwitch(
      t,
      [&](auto tag) -> BlockFn {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (!F::template kOk<T>) {
          return nullptr;
        } else if constexpr (kIsHalfLike<T> && !F::template kOk<float>) {
          return nullptr;
        } else if constexpr (kBinary) {
          using O = BinaryOut<F, T>;
          if (eval_internal::PrimitiveTypeOf<O>() != out) return nullptr;
          return &BinaryLoop<F, T>;
        } else {
          using O = UnaryOut<F, T>;
          if (eval_internal::PrimitiveTypeOf<O>() != out) return nullptr;
          return &UnaryLoop<F, T>;
        }
      },
      []() -> BlockFn { return nullptr; });
}

CompareKind KindFor(const HloInstruction& instr, PrimitiveType t) {
  ComparisonType ct = instr.attrs().comparison_type;
  if (ct == ComparisonType::kDefault) ct = DefaultComparisonType(t);
  if (IsFloatingPointType(t))
    return ct == ComparisonType::kTotalOrder ? CompareKind::kTotalOrder : CompareKind::kIeee;
  if (IsIntegralType(t)) {
    if (ct == ComparisonType::kSigned) return CompareKind::kSigned;
    if (ct == ComparisonType::kUnsigned) return CompareKind::kUnsigned;
  }
  return CompareKind::kIeee;
}

template <ComparisonDirection D>
BlockFn CompareFnFor(CompareKind k, PrimitiveType t) {
  // Each kind only for the types it applies to (the others never occur), to keep the number of
  // instantiations down.
  return FastTypeSwitch(
      t,
      [&](auto tag) -> BlockFn {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (kIsFloat<T>) {
          if (k == CompareKind::kTotalOrder)
            return &BinaryLoop<CompareOp<D, CompareKind::kTotalOrder>, T>;
          return &BinaryLoop<CompareOp<D, CompareKind::kIeee>, T>;
        } else if constexpr (kIsInt<T>) {
          if (k == CompareKind::kSigned) return &BinaryLoop<CompareOp<D, CompareKind::kSigned>, T>;
          if (k == CompareKind::kUnsigned)
            return &BinaryLoop<CompareOp<D, CompareKind::kUnsigned>, T>;
          return &BinaryLoop<CompareOp<D, CompareKind::kIeee>, T>;
        } else if constexpr (CompareOp<D, CompareKind::kIeee>::template kOk<T>) {
          return &BinaryLoop<CompareOp<D, CompareKind::kIeee>, T>;
        } else {
          return nullptr;
        }
      },
      []() -> BlockFn { return nullptr; });
}

// TotalOrder on lifted half-like values must use the half-like bits' order; f32's total order
// of the decoded value is the same order (decoding is monotone in the key and maps NaN to NaN
// with the same sign), so the lifted loop agrees with the evaluator.

BlockFn CompareFn(const HloInstruction& instr) {
  PrimitiveType t = instr.operand(0)->shape().element_type();
  CompareKind k = KindFor(instr, t);
  switch (instr.attrs().comparison_direction) {
    case ComparisonDirection::kEq: return CompareFnFor<ComparisonDirection::kEq>(k, t);
    case ComparisonDirection::kNe: return CompareFnFor<ComparisonDirection::kNe>(k, t);
    case ComparisonDirection::kGe: return CompareFnFor<ComparisonDirection::kGe>(k, t);
    case ComparisonDirection::kGt: return CompareFnFor<ComparisonDirection::kGt>(k, t);
    case ComparisonDirection::kLe: return CompareFnFor<ComparisonDirection::kLe>(k, t);
    default: return CompareFnFor<ComparisonDirection::kLt>(k, t);
  }
}

#define KILN_CPU_UNARY_OPS(X)                                                               \
  X(kAbs, AbsOp) X(kAcos, AcosOp) X(kAcosh, AcoshOp) X(kAsin, AsinOp) X(kAsinh, AsinhOp)     \
  X(kAtan, AtanOp) X(kAtanh, AtanhOp) X(kCbrt, CbrtOp) X(kCeil, CeilOp) X(kClz, ClzOp)      \
  X(kCos, CosOp) X(kCosh, CoshOp) X(kErf, ErfOp) X(kExp, ExpOp) X(kExpm1, Expm1Op)          \
  X(kFloor, FloorOp) X(kImag, ImagOp) X(kIsFinite, IsFiniteOp) X(kLog, LogOp)               \
  X(kLog1p, Log1pOp) X(kLogistic, LogisticOp) X(kNegate, NegateOp) X(kNot, NotOp)           \
  X(kPopulationCount, PopcntOp) X(kReal, RealOp) X(kRoundNearestAfz, RoundAfzOp)            \
  X(kRoundNearestEven, RoundEvenOp) X(kRsqrt, RsqrtOp) X(kSign, SignOp) X(kSin, SinOp)      \
  X(kSinh, SinhOp) X(kSqrt, SqrtOp) X(kTan, TanOp) X(kTanh, TanhOp)

#define KILN_CPU_BINARY_OPS(X)                                                              \
  X(kAdd, AddOp) X(kSubtract, SubtractOp) X(kMultiply, MultiplyOp) X(kDivide, DivideOp)     \
  X(kRemainder, RemainderOp) X(kMaximum, MaximumOp) X(kMinimum, MinimumOp)                  \
  X(kPower, PowerOp) X(kAtan2, Atan2Op) X(kAnd, AndOp) X(kOr, OrOp) X(kXor, XorOp)          \
  X(kShiftLeft, ShiftLeftOp) X(kShiftRightArithmetic, ShiftRightArithmeticOp)               \
  X(kShiftRightLogical, ShiftRightLogicalOp) X(kMulhi, MulhiOp) X(kComplex, ComplexOp)

}  // namespace

void VectorExpF32(const float* a, float* o, int64_t n) { FastExpF32<1>(a, o, n); }

BlockFn ResolveConvertBlockFn(PrimitiveType from, PrimitiveType to) {
  return FastTypeSwitch(
      from,
      [&](auto stag) -> BlockFn {
        using S = NativeTypeOf<decltype(stag)::value>;
        return FastTypeSwitch(
            to,
            [&](auto dtag) -> BlockFn {
              using D = NativeTypeOf<decltype(dtag)::value>;
              if constexpr (kFastConvert<D, S>) return &ConvertLoop<D, S>;
              else return nullptr;
            },
            []() -> BlockFn { return nullptr; });
      },
      []() -> BlockFn { return nullptr; });
}

BlockFn ResolveUniformOperandBlockFn(const HloInstruction& instr, int uniform) {
  if (instr.operand_count() != 2 || !instr.operand(0)->shape().IsArray() ||
      !instr.operand(1)->shape().IsArray())
    return nullptr;
  const PrimitiveType t = instr.operand(0)->shape().element_type();
  if (instr.operand(1)->shape().element_type() != t || instr.shape().element_type() != t)
    return nullptr;
  auto pick = [&](auto f, auto tag) -> BlockFn {
    using F = decltype(f);
    using T = decltype(tag);
    return uniform == 0 ? &UniformOperandLoop<F, T, 0> : &UniformOperandLoop<F, T, 1>;
  };
  auto for_type = [&](auto f) -> BlockFn {
    switch (t) {
      case PrimitiveType::kF32: return pick(f, float{});
      case PrimitiveType::kF64: return pick(f, double{});
      case PrimitiveType::kBF16: return pick(f, bfloat16{});
      case PrimitiveType::kS32: return pick(f, int32_t{});
      default: return nullptr;
    }
  };
  switch (instr.opcode()) {
    case HloOpcode::kAdd: return for_type(AddOp{});
    case HloOpcode::kSubtract: return for_type(SubtractOp{});
    case HloOpcode::kMultiply: return for_type(MultiplyOp{});
    case HloOpcode::kDivide: return for_type(DivideOp{});
    case HloOpcode::kMaximum: return for_type(MaximumOp{});
    case HloOpcode::kMinimum: return for_type(MinimumOp{});
    default: return nullptr;
  }
}

BlockFn ResolveElementwiseBlockFn(const HloInstruction& instr) {
  for (const HloInstruction* op : instr.operands())
    if (!op->shape().IsArray()) return nullptr;
  const PrimitiveType out = instr.shape().element_type();
  const PrimitiveType t = instr.operand_count() > 0 ? instr.operand(0)->shape().element_type()
                                                     : PrimitiveType::kInvalid;
  if (t == PrimitiveType::kF32 && out == PrimitiveType::kF32 && instr.operand_count() == 1)
    if (BlockFn fast = FastF32Fn(instr.opcode())) return fast;
  switch (instr.opcode()) {
#define KILN_UNARY_CASE(opc, F) \
  case HloOpcode::opc:          \
    return TypedFn<F, false>(t, out);
    KILN_CPU_UNARY_OPS(KILN_UNARY_CASE)
#undef KILN_UNARY_CASE
#define KILN_BINARY_CASE(opc, F)                                          \
  case HloOpcode::opc:                                                    \
    if (instr.operand(1)->shape().element_type() != t) return nullptr;    \
    return TypedFn<F, true>(t, out);
    KILN_CPU_BINARY_OPS(KILN_BINARY_CASE)
#undef KILN_BINARY_CASE
    case HloOpcode::kCompare:
      if (instr.operand(1)->shape().element_type() != t || out != PrimitiveType::kPred)
        return nullptr;
      return CompareFn(instr);
    case HloOpcode::kSelect: {
      if (t != PrimitiveType::kPred || instr.operand(1)->shape().element_type() != out ||
          instr.operand(2)->shape().element_type() != out)
        return nullptr;
      switch (PrimitiveByteWidth(out)) {
        case 1: return &SelectLoop<uint8_t>;
        case 2: return &SelectLoop<uint16_t>;
        case 4: return &SelectLoop<uint32_t>;
        case 8: return &SelectLoop<uint64_t>;
        case 16: return &SelectLoop<Bytes<16>>;
        default: return nullptr;
      }
    }
    case HloOpcode::kClamp:
      for (int k = 0; k < 3; ++k)
        if (instr.operand(k)->shape().element_type() != out) return nullptr;
      return FastTypeSwitch(
          out,
          [&](auto tag) -> BlockFn {
            using T = NativeTypeOf<decltype(tag)::value>;
            if constexpr (kIsComplex<T>) return nullptr;
            else return &ClampLoop<T>;
          },
          []() -> BlockFn { return nullptr; });
    case HloOpcode::kConvert:
      return ResolveConvertBlockFn(t, out);
    case HloOpcode::kBitcastConvert: {
      // Equal widths, no pred (whose bytes are normalized) and no sub-byte types: a copy.
      int w = PrimitiveBitWidth(t);
      if (w != PrimitiveBitWidth(out) || w % 8 != 0 || t == PrimitiveType::kPred ||
          out == PrimitiveType::kPred)
        return nullptr;
      return &BitcastCopyLoop;
    }
    default:
      return nullptr;
  }
}

void GenericElementwiseBlock(const ExprOp& op, int64_t n, void* const* p) {
  const uint8_t* in[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < op.num_in; ++k) in[k] = static_cast<const uint8_t*>(p[op.in[k]]);
  uint8_t* o = static_cast<uint8_t*>(p[op.out]);
  const void* args[3];
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < op.num_in; ++k) args[k] = in[k] + i * op.in_width[k];
    op.efn(op.instr, args, o + i * op.width);
  }
}


// ---- Fused op chains (Note [Fused op chains], expr_compile.cc) ----

namespace {

namespace ei = Eigen::internal;

// A step as executed: code = op | kChainRev | operand kind (kOpBlock, kOpScalar, kOpSelf).
struct ChainStep {
  const float* p;  // block operand
  float s;         // scalar operand
  int code;
};
constexpr int kOpBlock = 0, kOpScalar = 8, kOpSelf = 16, kOpUnary = 24;

template <int C, class P>
inline P ChainOp(P a, P b) {
  constexpr int op = C & 3;
  constexpr bool rev = (C & kChainRev) != 0;
  const P x = rev ? b : a, y = rev ? a : b;
  if constexpr (op == kChainAdd) return ei::padd(x, y);
  else if constexpr (op == kChainSub) return ei::psub(x, y);
  else if constexpr (op == kChainMul) return ei::pmul(x, y);
  else return ei::pdiv(x, y);
}

// One step over the K packets of a group: the operand kind and the op known at compile time.
template <int C, class P, int K>
inline void ChainStepK(P* a, const ChainStep& st, int64_t i) {
  constexpr int64_t kW = static_cast<int64_t>(sizeof(P) / sizeof(float));
  constexpr int kind = C & ~7;
  if constexpr (kind == kOpUnary) {
    for (int k = 0; k < K; ++k) a[k] = ei::ptanh(a[k]);
  } else if constexpr (kind == kOpScalar) {
    const P b = ei::pset1<P>(st.s);
    for (int k = 0; k < K; ++k) a[k] = ChainOp<C>(a[k], b);
  } else if constexpr (kind == kOpSelf) {
    for (int k = 0; k < K; ++k) a[k] = ChainOp<C>(a[k], a[k]);
  } else {
    for (int k = 0; k < K; ++k) a[k] = ChainOp<C>(a[k], ei::ploadu<P>(st.p + i + k * kW));
  }
}

#define KILN_CHAIN_CASES8(base) \
  KILN_CHAIN_CASE(base + 0) KILN_CHAIN_CASE(base + 1) KILN_CHAIN_CASE(base + 2) \
  KILN_CHAIN_CASE(base + 3) KILN_CHAIN_CASE(base + 4) KILN_CHAIN_CASE(base + 5) \
  KILN_CHAIN_CASE(base + 6) KILN_CHAIN_CASE(base + 7)

// K packets of type P at element i, the chain value in registers through every step.
template <class P, int K>
inline void ChainGroup(const ChainStep& first, const ChainStep* steps, int ns, float* __restrict o,
                       int64_t i) {
  constexpr int64_t kW = static_cast<int64_t>(sizeof(P) / sizeof(float));
  P a[K];
  if (first.p) {
    for (int k = 0; k < K; ++k) a[k] = ei::ploadu<P>(first.p + i + k * kW);
  } else {
    for (int k = 0; k < K; ++k) a[k] = ei::pset1<P>(first.s);
  }
  for (int s = 0; s < ns; ++s) {
    const ChainStep& st = steps[s];
    switch (st.code) {
#define KILN_CHAIN_CASE(c) \
  case (c): ChainStepK<(c), P, K>(a, st, i); break;
      KILN_CHAIN_CASES8(kOpBlock)
      KILN_CHAIN_CASES8(kOpScalar)
      KILN_CHAIN_CASES8(kOpSelf)
      KILN_CHAIN_CASE(kOpUnary)
#undef KILN_CHAIN_CASE
      default: break;
    }
  }
  for (int k = 0; k < K; ++k) ei::pstoreu(o + i + k * kW, a[k]);
}
#undef KILN_CHAIN_CASES8

}  // namespace

void ChainBlockF32(const ExprOp& op, int64_t n, void* const* ptrs, const uint8_t* uniform) {
  using P = ei::packet_traits<float>::type;
  constexpr int64_t kW = static_cast<int64_t>(sizeof(P) / sizeof(float));
  const int ns = static_cast<int>(op.codes.size());
  ChainStep first{};
  ChainStep steps[kMaxChainSteps];
  auto operand = [&](int v, ChainStep& st) {
    const float* p = static_cast<const float*>(ptrs[v]);
    if (n == 1 || (uniform && uniform[v] != 0)) {
      st.p = nullptr;
      st.s = p[0];
      st.code |= kOpScalar;
    } else {
      st.p = p;
    }
  };
  operand(op.values[0], first);
  for (int s = 0; s < ns; ++s) {
    const uint8_t c = op.codes[s];
    if (c == kChainTanh) {
      steps[s] = {nullptr, 0.0f, kOpUnary};
    } else {
      steps[s] = {nullptr, 0.0f, c & 7};
      if (c & kChainSelf) steps[s].code |= kOpSelf;
      else operand(op.values[s + 1], steps[s]);
    }
  }
  float* o = static_cast<float*>(ptrs[op.out]);
  int64_t i = 0;
  for (; i + 8 * kW <= n; i += 8 * kW) ChainGroup<P, 8>(first, steps, ns, o, i);
  for (; i + 2 * kW <= n; i += 2 * kW) ChainGroup<P, 2>(first, steps, ns, o, i);
  for (; i + kW <= n; i += kW) ChainGroup<P, 1>(first, steps, ns, o, i);
  if (i == n) return;
  // The tail (fewer than a packet): through the packet path on padded copies, so that every
  // element sees the same arithmetic (tanh's packet approximation included).
  alignas(64) float pad[kMaxChainSteps + 1][kW];
  alignas(64) float out[kW];
  const int64_t r = n - i;
  auto padded = [&](ChainStep& st, int slot) {
    if (!st.p) return;
    std::fill_n(pad[slot], kW, 0.0f);
    std::copy_n(st.p + i, r, pad[slot]);
    st.p = pad[slot];
  };
  padded(first, 0);
  for (int s = 0; s < ns; ++s) padded(steps[s], s + 1);
  ChainGroup<P, 1>(first, steps, ns, out, 0);
  std::copy_n(out, r, o + i);
}

}  // namespace kiln::cpu::internal
