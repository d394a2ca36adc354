#include "kiln/cpu/kernels/reduce_ops.h"

#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "kiln/cpu/kernels/convert_ops.h"
#include "kiln/eval/elementwise_ops.h"

namespace kiln::cpu::internal {
namespace {

using eval_internal::kIsComplex;
using eval_internal::kIsInt;

enum class RedOp { kAdd, kMul, kMax, kMin, kAnd, kOr, kXor };

template <class T>
inline constexpr bool kIsRealFloat = std::is_floating_point_v<T> || kIsHalfLike<T>;

// Accumulator type of reducer K on data type T.
template <RedOp K, class T>
struct AccOf {
  using type = T;
};
template <RedOp K, class T>
  requires(kIsRealFloat<T> && (K == RedOp::kAdd || K == RedOp::kMul))
struct AccOf<K, T> {
  using type = double;
};
template <RedOp K, class T>
  requires(kIsHalfLike<T> && (K == RedOp::kMax || K == RedOp::kMin))
struct AccOf<K, T> {
  using type = float;
};
template <RedOp K, class T>
  requires(kIsComplex<T> && (K == RedOp::kAdd || K == RedOp::kMul))
struct AccOf<K, T> {
  using type = std::complex<double>;
};
template <RedOp K, class T>
  requires(kIsInt<T> && (K == RedOp::kAdd || K == RedOp::kMul))
struct AccOf<K, T> {
  using type = eval_internal::Wide<T>;
};

// Lane type of row folds: float sums of f32/f16/bf16 use f32 lanes within a block.
template <RedOp K, class T>
using LaneOf = std::conditional_t<K == RedOp::kAdd && (std::is_same_v<T, float> || kIsHalfLike<T>),
                                  float, typename AccOf<K, T>::type>;

template <RedOp K, class T>
struct Red {
  using A = typename AccOf<K, T>::type;

  template <class V>
  static V Identity() {
    if constexpr (std::is_same_v<V, bool>) {
      return K == RedOp::kMul || K == RedOp::kMin || K == RedOp::kAnd;
    } else if constexpr (K == RedOp::kAdd || K == RedOp::kOr || K == RedOp::kXor) {
      return V(0);
    } else if constexpr (K == RedOp::kMul) {
      return V(1);
    } else if constexpr (K == RedOp::kAnd) {
      return static_cast<V>(~V(0));
    } else if constexpr (K == RedOp::kMax) {
      if constexpr (std::is_floating_point_v<V>) return -std::numeric_limits<V>::infinity();
      else return std::numeric_limits<V>::lowest();
    } else {  // kMin
      if constexpr (std::is_floating_point_v<V>) return std::numeric_limits<V>::infinity();
      else return std::numeric_limits<V>::max();
    }
  }

  template <class V>
  static V Op(V a, V b) {
    if constexpr (std::is_same_v<V, bool>) {
      if constexpr (K == RedOp::kAdd || K == RedOp::kMax || K == RedOp::kOr) return a || b;
      else if constexpr (K == RedOp::kMul || K == RedOp::kMin || K == RedOp::kAnd) return a && b;
      else return a != b;
    } else if constexpr (K == RedOp::kAdd) {
      return a + b;
    } else if constexpr (K == RedOp::kMul) {
      return a * b;
    } else if constexpr (K == RedOp::kMax) {
      if constexpr (std::is_floating_point_v<V>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return a < b ? b : a;
    } else if constexpr (K == RedOp::kMin) {
      if constexpr (std::is_floating_point_v<V>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return b < a ? b : a;
    } else if constexpr (K == RedOp::kAnd) {
      return a & b;
    } else if constexpr (K == RedOp::kOr) {
      return a | b;
    } else {
      return a ^ b;
    }
  }

  template <class V>
  static V Lift(T x) {
    if constexpr (kIsHalfLike<T>) return static_cast<V>(HalfToFloat(x));
    else if constexpr (kIsInt<T>) return static_cast<V>(eval_internal::Widen(x));
    else return static_cast<V>(x);
  }

  static void IdentityN(void* acc, int64_t n) {
    A* a = static_cast<A*>(acc);
    for (int64_t i = 0; i < n; ++i) a[i] = Identity<A>();
  }

  static void Row(void* acc, const void* xv, int64_t n) {
    using L = LaneOf<K, T>;
    const T* x = static_cast<const T*>(xv);
    // 64 lanes: four independent vector accumulators hide the add latency.
    constexpr int kW = 64;
    L lanes[kW];
    for (int j = 0; j < kW; ++j) lanes[j] = Identity<L>();
    int64_t i = 0;
    if constexpr ((K == RedOp::kMax || K == RedOp::kMin) && std::is_floating_point_v<L>) {
      // Float max/min: Op's NaN checks make each lane a chain of compares and mask logic. Fold
      // with plain compares (which skip NaNs: vmaxps/vminps) and note NaNs on the side; a row
      // holding one folds its first NaN in, as the sequential fold would have.
      int32_t nan[kW] = {};
      for (; i + kW <= n; i += kW)
        for (int j = 0; j < kW; ++j) {
          const L v = Lift<L>(x[i + j]);
          if constexpr (K == RedOp::kMax) lanes[j] = lanes[j] < v ? v : lanes[j];
          else lanes[j] = v < lanes[j] ? v : lanes[j];
          nan[j] |= v != v;
        }
      int32_t any = 0;
      for (int j = 0; j < kW; ++j) any |= nan[j];
      if (any) {
        for (int64_t f = 0; f < i; ++f) {
          const L v = Lift<L>(x[f]);
          if (v != v) {
            lanes[0] = v;
            break;
          }
        }
      }
    }
    for (; i + kW <= n; i += kW)
      for (int j = 0; j < kW; ++j) lanes[j] = Op<L>(lanes[j], Lift<L>(x[i + j]));
    for (int j = 0; i < n; ++i, ++j) lanes[j] = Op<L>(lanes[j], Lift<L>(x[i]));
    // Fold the lanes as a tree (a sequential fold of 64 lanes would be a chain of 64 dependent
    // adds, longer than the row's own loop for rows of a few thousand elements).
    A t[kW];
    for (int j = 0; j < kW; ++j) t[j] = static_cast<A>(lanes[j]);
    for (int w = kW / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) t[j] = Op<A>(t[j], t[j + w]);
    A* a = static_cast<A*>(acc);
    *a = Op<A>(*a, t[0]);
  }

  static void Cols(void* acc, const void* xv, int64_t n) {
    const T* __restrict x = static_cast<const T*>(xv);
    A* __restrict a = static_cast<A*>(acc);
    for (int64_t i = 0; i < n; ++i) a[i] = Op<A>(a[i], Lift<A>(x[i]));
  }

  static void Combine(void* acc, const void* other, int64_t n) {
    A* __restrict a = static_cast<A*>(acc);
    const A* __restrict b = static_cast<const A*>(other);
    for (int64_t i = 0; i < n; ++i) a[i] = Op<A>(a[i], b[i]);
  }

  static void Finish(const void* acc, const void* init, void* out, int64_t n) {
    const A* a = static_cast<const A*>(acc);
    const T init_v = *static_cast<const T*>(init);
    T* o = static_cast<T*>(out);
    const A iv = Lift<A>(init_v);
    for (int64_t i = 0; i < n; ++i) {
      const A r = Op<A>(iv, a[i]);
      if constexpr (kIsHalfLike<T>) {
        if constexpr (std::is_same_v<A, double>) o[i] = T(r);  // one rounding from double
        else o[i] = FloatToHalf<T>(r);
      } else if constexpr (kIsInt<T>) {
        o[i] = eval_internal::Narrow<T>(static_cast<eval_internal::Wide<T>>(r));
      } else {
        o[i] = static_cast<T>(r);
      }
    }
  }

  static const FastReducer* Get() {
    static const FastReducer r{static_cast<int>(sizeof(A)), &IdentityN, &Row, &Cols, &Combine,
                               &Finish};
    return &r;
  }
};

template <RedOp K, class T>
constexpr bool Valid() {
  if constexpr (kIsComplex<T>) return K == RedOp::kAdd || K == RedOp::kMul;
  else if constexpr (kIsRealFloat<T>) return K != RedOp::kAnd && K != RedOp::kOr && K != RedOp::kXor;
  else return true;
}

template <RedOp K>
const FastReducer* ForType(PrimitiveType t) {
  return FastTypeSwitch(
      t,
      [](auto tag) -> const FastReducer* {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (Valid<K, T>()) return Red<K, T>::Get();
        else return nullptr;
      },
      []() -> const FastReducer* { return nullptr; });
}

}  // namespace

const FastReducer* FindFastReducer(HloOpcode op, PrimitiveType type) {
  switch (op) {
    case HloOpcode::kAdd: return ForType<RedOp::kAdd>(type);
    case HloOpcode::kMultiply: return ForType<RedOp::kMul>(type);
    case HloOpcode::kMaximum: return ForType<RedOp::kMax>(type);
    case HloOpcode::kMinimum: return ForType<RedOp::kMin>(type);
    case HloOpcode::kAnd: return ForType<RedOp::kAnd>(type);
    case HloOpcode::kOr: return ForType<RedOp::kOr>(type);
    case HloOpcode::kXor: return ForType<RedOp::kXor>(type);
    default: return nullptr;
  }
}

}  // namespace kiln::cpu::internal
