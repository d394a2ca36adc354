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
    for (size_t i = 0; i < out.size(); ++i) out[i] = WidenElement<double>(data[i]);
  });
  return out;
}

std::vector<std::complex<double>> LiteralToComplexes(const Literal& l) {
  std::vector<std::complex<double>> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = l.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = WidenElement<std::complex<double>>(data[i]);
  });
  return out;
}

std::vector<int64_t> LiteralToInt64s(const Literal& l) {
  std::vector<int64_t> out(l.element_count());
  ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = l.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = WidenElement<int64_t>(data[i]);
  });
  return out;
}

namespace {
template <typename W>
void Store(std::span<const W> values, Literal& out) {
  const PrimitiveType t = out.shape().element_type();
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto data = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = NarrowElement<T>(values[i], t);
  });
}
}  // namespace

void StoreDoubles(std::span<const double> values, Literal& out) { Store(values, out); }
void StoreComplexes(std::span<const std::complex<double>> values, Literal& out) {
  Store(values, out);
}
void StoreInt64s(std::span<const int64_t> values, Literal& out) { Store(values, out); }

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
