#include "kiln/eval/array_util.h"

#include <cmath>
#include <limits>

#include "kiln/base/strings.h"

namespace kiln::eval_internal {

int64_t ElementProduct(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool NextRowMajorIndex(std::span<int64_t> index, std::span<const int64_t> dims) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return true;
    index[d] = 0;
  }
  return false;
}

namespace {

// Integer range of an integral type as [lo, hi] in double, for saturation.
void IntRange(PrimitiveType t, double& lo, double& hi) {
  int bits = PrimitiveBitWidth(t);
  if (IsSignedIntegralType(t)) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1);  // exclusive
  } else {
    lo = 0;
    hi = std::ldexp(1.0, bits);  // exclusive
  }
}

template <typename T>
double ElemToDouble(const T& v) {
  if constexpr (kIsComplexNative<T>) {
    return static_cast<double>(v.real());
  } else if constexpr (kIsMiniFloat<T>) {
    return v.ToDouble();
  } else if constexpr (kIsIntN<T>) {
    return static_cast<double>(static_cast<int64_t>(v));
  } else {
    return static_cast<double>(v);
  }
}

}  // namespace

int64_t SaturatingFloatToInt(double v, PrimitiveType t) {
  if (std::isnan(v)) return 0;
  if (t == PrimitiveType::kPred) return v != 0;
  double lo, hi;
  IntRange(t, lo, hi);
  double tr = std::trunc(v);
  if (tr < lo) tr = lo;
  if (tr >= hi) {
    // The largest value: hi - 1 (exact in int64 arithmetic, not in double for 64 bits).
    if (t == PrimitiveType::kU64) return static_cast<int64_t>(~uint64_t{0});
    if (t == PrimitiveType::kS64) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(hi) - 1;
  }
  if (t == PrimitiveType::kU64 && tr >= std::ldexp(1.0, 63))
    return static_cast<int64_t>(static_cast<uint64_t>(tr));
  return static_cast<int64_t>(tr);
}

std::vector<double> LiteralToDoubles(const Literal& l) {
  std::vector<double> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = l.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, uint64_t>) {
        out[i] = static_cast<double>(data[i]);
      } else {
        out[i] = ElemToDouble(data[i]);
      }
    }
  });
  return out;
}

std::vector<std::complex<double>> LiteralToComplexes(const Literal& l) {
  std::vector<std::complex<double>> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = l.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (kIsComplexNative<T>) {
        out[i] = {static_cast<double>(data[i].real()), static_cast<double>(data[i].imag())};
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        out[i] = static_cast<double>(data[i]);
      } else {
        out[i] = ElemToDouble(data[i]);
      }
    }
  });
  return out;
}

std::vector<int64_t> LiteralToInt64s(const Literal& l) {
  std::vector<int64_t> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = l.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (kIsIntN<T>) {
        out[i] = static_cast<int64_t>(data[i]);
      } else if constexpr (std::is_integral_v<T>) {
        out[i] = static_cast<int64_t>(data[i]);  // bool -> 0/1; u64 keeps its bits
      } else {
        out[i] = SaturatingFloatToInt(ElemToDouble(data[i]), PrimitiveType::kS64);
      }
    }
  });
  return out;
}

void StoreDoubles(std::span<const double> values, Literal& out) {
  const PrimitiveType t = out.shape().element_type();
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      if constexpr (kIsComplexNative<T>) {
        data[i] = T(static_cast<typename T::value_type>(v), 0);
      } else if constexpr (std::is_same_v<T, bool>) {
        data[i] = v != 0;
      } else if constexpr (kIsMiniFloat<T>) {
        data[i] = T(v);
      } else if constexpr (std::is_floating_point_v<T>) {
        data[i] = static_cast<T>(v);
      } else if constexpr (kIsIntN<T>) {
        data[i] = T(SaturatingFloatToInt(v, t));
      } else {
        data[i] = static_cast<T>(SaturatingFloatToInt(v, t));
      }
    }
  });
}

void StoreComplexes(std::span<const std::complex<double>> values, Literal& out) {
  const PrimitiveType t = out.shape().element_type();
  if (!IsComplexType(t)) {
    std::vector<double> re(values.size());
    for (size_t i = 0; i < values.size(); ++i) re[i] = values[i].real();
    StoreDoubles(re, out);
    return;
  }
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (kIsComplexNative<T>) {
      using C = typename T::value_type;
      auto data = out.data<T>();
      for (size_t i = 0; i < values.size(); ++i)
        data[i] = T(static_cast<C>(values[i].real()), static_cast<C>(values[i].imag()));
    }
  });
}

void StoreInt64s(std::span<const int64_t> values, Literal& out) {
  const PrimitiveType t = out.shape().element_type();
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t v = values[i];
      if constexpr (kIsComplexNative<T>) {
        data[i] = T(static_cast<typename T::value_type>(v), 0);
      } else if constexpr (std::is_same_v<T, bool>) {
        data[i] = v != 0;
      } else if constexpr (kIsMiniFloat<T>) {
        data[i] = T(v);
      } else if constexpr (std::is_floating_point_v<T>) {
        data[i] = static_cast<T>(v);
      } else if constexpr (kIsIntN<T>) {
        data[i] = T(v);  // wraps
      } else {
        data[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<uint64_t>(v)));
      }
    }
  });
}

Status ExpectArrayOperand(const HloInstruction& instr, const Literal& l, int64_t operand,
                          int64_t rank) {
  if (!l.shape().IsArray())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                           operand, " must be an array, got ", l.shape().ToString(false));
  if (rank >= 0 && l.shape().rank() != rank)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                           operand, " must have rank ", rank, ", got ", l.shape().ToString(false));
  return OkStatus();
}

}  // namespace kiln::eval_internal
