// Element functors of the elementwise kernels (internal to src/kiln/eval).
//
// Each functor has
//   template <class T> static constexpr bool kOk   -- whether operand type T is accepted
//   template <class T> static R Apply(const HloInstruction* ctx, T a[, T b])
// where R is the result's native type (T for most ops, bool for compare/is-finite, the component
// type for abs/real/imag of complex, complex for the complex op). The same functors drive the
// array kernels (typed loops) and the element functions of ScalarProgram.
//
// Semantics follow XLA's evaluator (hlo_evaluator_typed_visitor.h): narrow floats computed in
// f32 and rounded back per op; integers computed in 64 bits and wrapped; integer x/0 = -1 (all
// ones), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0; shift amounts are unsigned and amounts
// >= the bit width give 0 (left, logical right) or the sign fill (arithmetic right); maximum and
// minimum propagate NaN (the lhs NaN first) and otherwise return the lhs on ties, so
// max(-0, +0) = -0 and max(+0, -0) = +0, like std::max; integer x^n with n < 0 is 1 when x == 1
// and 0 otherwise, x^0 = 1 (also 0^0). popcnt/count-leading-zeros count within the type's own
// bit width (s4: 4 bits), where XLA's evaluator miscounts sub-byte types.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <limits>

#include "kiln/eval/eval_util.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/attributes.h"

namespace kiln::eval_internal {

template <typename T>
inline constexpr bool kIsRealOrComplex = kIsFloat<T> || kIsComplex<T>;

// ---------------------------------------------------------------------------------------------
// Binary ops.

struct AddOp {
  template <class T> static constexpr bool kOk = true;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a || b;
    else if constexpr (kIsInt<T>) return FromU64<T>(U64(a) + U64(b));
    else return Narrow<T>(Widen(a) + Widen(b));
  }
};

struct SubtractOp {
  template <class T> static constexpr bool kOk = true;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a != b;
    else if constexpr (kIsInt<T>) return FromU64<T>(U64(a) - U64(b));
    else return Narrow<T>(Widen(a) - Widen(b));
  }
};

struct MultiplyOp {
  template <class T> static constexpr bool kOk = true;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a && b;
    else if constexpr (kIsInt<T>) return FromU64<T>(U64(a) * U64(b));
    else return Narrow<T>(Widen(a) * Widen(b));
  }
};

struct DivideOp {
  template <class T> static constexpr bool kOk = !kIsPred<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsInt<T>) {
      auto wa = Widen(a), wb = Widen(b);
      if (wb == 0) return FromU64<T>(~uint64_t{0});  // -1: all ones
      if constexpr (IsSignedInt<T>()) {
        if (wb == -1) return FromU64<T>(uint64_t{0} - U64(a));  // INT_MIN / -1 = INT_MIN
      }
      return Narrow<T>(wa / wb);
    } else {
      return Narrow<T>(Widen(a) / Widen(b));
    }
  }
};

struct RemainderOp {
  template <class T> static constexpr bool kOk = kIsInt<T> || kIsFloat<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsInt<T>) {
      auto wa = Widen(a), wb = Widen(b);
      if (wb == 0) return a;
      if constexpr (IsSignedInt<T>()) {
        if (wb == -1) return Narrow<T>(0);
      }
      return Narrow<T>(wa % wb);
    } else {
      return Narrow<T>(std::fmod(Widen(a), Widen(b)));
    }
  }
};

struct MaximumOp {
  template <class T> static constexpr bool kOk = !kIsComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a || b;
    else {
      auto wa = Widen(a), wb = Widen(b);
      if constexpr (kIsFloat<T>) {
        if (std::isnan(wa)) return Narrow<T>(wa);
        if (std::isnan(wb)) return Narrow<T>(wb);
      }
      return Narrow<T>(wa < wb ? wb : wa);  // std::max: the lhs on ties
    }
  }
};

struct MinimumOp {
  template <class T> static constexpr bool kOk = !kIsComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a && b;
    else {
      auto wa = Widen(a), wb = Widen(b);
      if constexpr (kIsFloat<T>) {
        if (std::isnan(wa)) return Narrow<T>(wa);
        if (std::isnan(wb)) return Narrow<T>(wb);
      }
      return Narrow<T>(wb < wa ? wb : wa);  // std::min: the lhs on ties
    }
  }
};

struct PowerOp {
  template <class T> static constexpr bool kOk = true;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) {
      return a || !b;
    } else if constexpr (kIsInt<T>) {
      auto wa = Widen(a), wb = Widen(b);
      if (wa == 1 || wb == 0) return Narrow<T>(1);
      if constexpr (IsSignedInt<T>()) {
        if (wb < 0) return Narrow<T>(0);
      }
      uint64_t base = static_cast<uint64_t>(wa), e = static_cast<uint64_t>(wb), r = 1;
      while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
      }
      return FromU64<T>(r);
    } else {
      using W = Wide<T>;
      W wa = Widen(a), wb = Widen(b);
      if (wa == W(1) || wb == W(0)) return Narrow<T>(W(1));
      if constexpr (kIsComplex<T>) {
        auto pos_inf = [](W c) { return c.imag() == 0 && c.real() > 0 && std::isinf(c.real()); };
        if (pos_inf(wa) && wb.imag() == 0 && wb.real() > 0) return wa;
        if (pos_inf(wa) && wb.imag() == 0 && wb.real() < 0) return W(0);
        return std::pow(wa, wb);
      } else {
        return Narrow<T>(std::pow(wa, wb));
      }
    }
  }
};

struct Atan2Op {
  template <class T> static constexpr bool kOk = kIsRealOrComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsComplex<T>) {
      // atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y))
      const T i(0, 1);
      return -i * std::log((b + i * a) / std::sqrt(b * b + a * a));
    } else {
      return Narrow<T>(std::atan2(Widen(a), Widen(b)));
    }
  }
};

struct AndOp {
  template <class T> static constexpr bool kOk = kIsPred<T> || kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a && b;
    else return FromU64<T>(U64(a) & U64(b));
  }
};
struct OrOp {
  template <class T> static constexpr bool kOk = kIsPred<T> || kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a || b;
    else return FromU64<T>(U64(a) | U64(b));
  }
};
struct XorOp {
  template <class T> static constexpr bool kOk = kIsPred<T> || kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsPred<T>) return a != b;
    else return FromU64<T>(U64(a) ^ U64(b));
  }
};

struct ShiftLeftOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    uint64_t amount = IntBitsOf(b);
    if (amount >= static_cast<uint64_t>(IntBits<T>())) return Narrow<T>(0);
    return FromU64<T>(U64(a) << amount);
  }
};
struct ShiftRightArithmeticOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    uint64_t amount = IntBitsOf(b);
    int64_t s = SignExtend(IntBitsOf(a), IntBits<T>());
    if (amount >= static_cast<uint64_t>(IntBits<T>())) return FromU64<T>(s < 0 ? ~uint64_t{0} : 0);
    return FromU64<T>(static_cast<uint64_t>(s >> amount));
  }
};
struct ShiftRightLogicalOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    uint64_t amount = IntBitsOf(b);
    if (amount >= static_cast<uint64_t>(IntBits<T>())) return Narrow<T>(0);
    return FromU64<T>(IntBitsOf(a) >> amount);
  }
};

struct MulhiOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a, T b) {
    constexpr int w = IntBits<T>();
    if constexpr (IsSignedInt<T>()) {
      __int128 p = static_cast<__int128>(Widen(a)) * static_cast<__int128>(Widen(b));
      return FromU64<T>(static_cast<uint64_t>(static_cast<int64_t>(p >> w)));
    } else {
      unsigned __int128 p =
          static_cast<unsigned __int128>(Widen(a)) * static_cast<unsigned __int128>(Widen(b));
      return FromU64<T>(static_cast<uint64_t>(p >> w));
    }
  }
};

struct ComplexOp {
  template <class T>
  static constexpr bool kOk = std::is_same_v<T, float> || std::is_same_v<T, double>;
  template <class T>
  static std::complex<T> Apply(const HloInstruction*, T a, T b) {
    return std::complex<T>(a, b);
  }
};

// compare: K is the effective comparison kind.
enum class CompareKind { kIeee, kTotalOrder, kSigned, kUnsigned };

// Key of a float in the total order -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
template <class T>
inline int64_t TotalOrderKey(T v) {
  uint64_t bits = 0;
  int width;
  bool has_sign = true;
  if constexpr (std::is_same_v<T, float>) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    bits = u;
    width = 32;
  } else if constexpr (std::is_same_v<T, double>) {
    std::memcpy(&bits, &v, 8);
    width = 64;
  } else {
    bits = v.bits();
    width = T::kFormat.total_bits;
    has_sign = T::kFormat.has_sign;
  }
  if (!has_sign) return static_cast<int64_t>(bits);
  int64_t s = SignExtend(bits, width);
  return s < 0 ? (s ^ static_cast<int64_t>(LowMask(width - 1))) : s;
}

template <ComparisonDirection D, typename V>
inline bool Cmp(V a, V b) {
  if constexpr (D == ComparisonDirection::kEq) return a == b;
  else if constexpr (D == ComparisonDirection::kNe) return a != b;
  else if constexpr (D == ComparisonDirection::kGe) return a >= b;
  else if constexpr (D == ComparisonDirection::kGt) return a > b;
  else if constexpr (D == ComparisonDirection::kLe) return a <= b;
  else return a < b;
}

template <ComparisonDirection D, CompareKind K>
struct CompareOp {
  static constexpr bool kEqNe = D == ComparisonDirection::kEq || D == ComparisonDirection::kNe;
  template <class T>
  static constexpr bool kOk = !kIsComplex<T> || kEqNe;
  template <class T>
  static bool Apply(const HloInstruction*, T a, T b) {
    if constexpr (kIsComplex<T> || kIsPred<T>) {
      return Cmp<D>(a, b);
    } else if constexpr (kIsInt<T>) {
      if constexpr (K == CompareKind::kUnsigned) {
        return Cmp<D>(IntBitsOf(a), IntBitsOf(b));
      } else if constexpr (K == CompareKind::kSigned) {
        return Cmp<D>(SignExtend(IntBitsOf(a), IntBits<T>()), SignExtend(IntBitsOf(b), IntBits<T>()));
      } else {
        return Cmp<D>(Widen(a), Widen(b));
      }
    } else {
      if constexpr (K == CompareKind::kTotalOrder) {
        return Cmp<D>(TotalOrderKey(a), TotalOrderKey(b));
      } else {
        return Cmp<D>(Widen(a), Widen(b));
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Unary ops.

// A float/complex math function applied in the wide type; real-only when kRealOnly.
#define KILN_FLOAT_UNARY(Name, kRealOnly, expr)                                  \
  struct Name {                                                                  \
    template <class T>                                                           \
    static constexpr bool kOk = kIsFloat<T> || (!(kRealOnly) && kIsComplex<T>); \
    template <class T>                                                           \
    static T Apply(const HloInstruction*, T a) {                                 \
      using W = Wide<T>;                                                         \
      W x = Widen(a);                                                            \
      (void)sizeof(W);                                                           \
      return Narrow<T>(expr);                                                    \
    }                                                                            \
  };

KILN_FLOAT_UNARY(AcosOp, false, std::acos(x))
KILN_FLOAT_UNARY(AcoshOp, false, std::acosh(x))
KILN_FLOAT_UNARY(AsinOp, false, std::asin(x))
KILN_FLOAT_UNARY(AsinhOp, false, std::asinh(x))
KILN_FLOAT_UNARY(AtanOp, false, std::atan(x))
KILN_FLOAT_UNARY(AtanhOp, false, std::atanh(x))
KILN_FLOAT_UNARY(CbrtOp, true, std::cbrt(x))
KILN_FLOAT_UNARY(CeilOp, true, std::ceil(x))
KILN_FLOAT_UNARY(FloorOp, true, std::floor(x))
KILN_FLOAT_UNARY(CosOp, false, std::cos(x))
KILN_FLOAT_UNARY(CoshOp, false, std::cosh(x))
KILN_FLOAT_UNARY(SinOp, false, std::sin(x))
KILN_FLOAT_UNARY(SinhOp, false, std::sinh(x))
KILN_FLOAT_UNARY(TanOp, false, std::tan(x))
KILN_FLOAT_UNARY(TanhOp, false, std::tanh(x))
KILN_FLOAT_UNARY(ErfOp, true, std::erf(x))
KILN_FLOAT_UNARY(ExpOp, false, std::exp(x))
KILN_FLOAT_UNARY(LogOp, false, std::log(x))
KILN_FLOAT_UNARY(SqrtOp, false, std::sqrt(x))
KILN_FLOAT_UNARY(RsqrtOp, false, W(1) / std::sqrt(x))
KILN_FLOAT_UNARY(LogisticOp, false, W(1) / (W(1) + std::exp(-x)))
KILN_FLOAT_UNARY(RoundAfzOp, true, std::round(x))
KILN_FLOAT_UNARY(RoundEvenOp, true, std::nearbyint(x))
#undef KILN_FLOAT_UNARY

struct Expm1Op {
  template <class T> static constexpr bool kOk = kIsRealOrComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    if constexpr (kIsComplex<T>) {
      // e^z - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y, accurate near 0.
      auto x = a.real(), y = a.imag();
      auto s = std::sin(y / 2);
      return T(std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y));
    } else {
      return Narrow<T>(std::expm1(Widen(a)));
    }
  }
};

struct Log1pOp {
  template <class T> static constexpr bool kOk = kIsRealOrComplex<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    if constexpr (kIsComplex<T>) {
      // log(1 + z) = 0.5 * log1p(2x + x^2 + y^2) + i atan2(y, 1 + x).
      auto x = a.real(), y = a.imag();
      return T(std::log1p(2 * x + x * x + y * y) / 2, std::atan2(y, 1 + x));
    } else {
      return Narrow<T>(std::log1p(Widen(a)));
    }
  }
};

struct AbsOp {
  template <class T> static constexpr bool kOk = !kIsPred<T>;
  template <class T>
  static auto Apply(const HloInstruction*, T a) {
    if constexpr (kIsComplex<T>) {
      return std::abs(a);
    } else if constexpr (kIsInt<T>) {
      if constexpr (IsSignedInt<T>()) {
        return Widen(a) < 0 ? FromU64<T>(uint64_t{0} - U64(a)) : a;  // abs(INT_MIN) = INT_MIN
      } else {
        return a;
      }
    } else {
      return Narrow<T>(std::fabs(Widen(a)));
    }
  }
};

struct NegateOp {
  template <class T> static constexpr bool kOk = !kIsPred<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    if constexpr (kIsInt<T>) return FromU64<T>(uint64_t{0} - U64(a));
    else return Narrow<T>(-Widen(a));
  }
};

struct NotOp {
  template <class T> static constexpr bool kOk = kIsPred<T> || kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    if constexpr (kIsPred<T>) return !a;
    else return FromU64<T>(~U64(a));
  }
};

struct SignOp {
  template <class T> static constexpr bool kOk = !kIsPred<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    if constexpr (kIsInt<T>) {
      auto w = Widen(a);
      return Narrow<T>(static_cast<Wide<T>>((w > 0) - (w < 0)));
    } else if constexpr (kIsComplex<T>) {
      auto m = std::abs(a);
      return m == 0 ? T(0) : a / m;
    } else {
      using W = Wide<T>;
      W x = Widen(a);
      if (std::isnan(x)) return Narrow<T>(x);
      return Narrow<T>(std::copysign(x != W(0) ? W(1) : W(0), x));  // sign(-0) = -0
    }
  }
};

struct PopcntOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    return Narrow<T>(static_cast<Wide<T>>(std::popcount(IntBitsOf(a))));
  }
};

struct ClzOp {
  template <class T> static constexpr bool kOk = kIsInt<T>;
  template <class T>
  static T Apply(const HloInstruction*, T a) {
    return Narrow<T>(static_cast<Wide<T>>(IntBits<T>() - std::bit_width(IntBitsOf(a))));
  }
};

struct IsFiniteOp {
  template <class T> static constexpr bool kOk = kIsFloat<T>;
  template <class T>
  static bool Apply(const HloInstruction*, T a) {
    return std::isfinite(Widen(a));
  }
};

struct RealOp {
  template <class T> static constexpr bool kOk = kIsRealOrComplex<T>;
  template <class T>
  static auto Apply(const HloInstruction*, T a) {
    if constexpr (kIsComplex<T>) return a.real();
    else return a;
  }
};

struct ImagOp {
  template <class T> static constexpr bool kOk = kIsRealOrComplex<T>;
  template <class T>
  static auto Apply(const HloInstruction*, T a) {
    if constexpr (kIsComplex<T>) return a.imag();
    else return Narrow<T>(Wide<T>(0));
  }
};

}  // namespace kiln::eval_internal

namespace kiln {
class KernelRegistry;
namespace eval_internal {
// convert.cc: convert, bitcast-convert, reduce-precision, stochastic-convert.
void RegisterConvertKernels(KernelRegistry& r);
// Element functions of convert / bitcast-convert (equal widths) / reduce-precision.
StatusOr<ElementFn> ResolveConvertElementFn(const HloInstruction& instr);
}  // namespace eval_internal
}  // namespace kiln
