#include "kiln/hlo/random_literal.h"

#include <algorithm>
#include <cmath>

#include "kiln/base/strings.h"

namespace kiln {

namespace {

// SplitMix64: tiny, fast, and fully specified (unlike std:: distributions).
class Rng {
 public:
  explicit Rng(uint64_t state) : s_(state) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Symmetric() { return static_cast<double>(Next() >> 11) * 0x1p-52 - 1.0; }
  // Uniform integer in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t s_;
};

uint64_t Mix(uint64_t a, uint64_t b) { return Rng(a ^ Rng(b + 0x632be59bd9b4e019ull).Next()).Next(); }

void FillArray(Literal& l, Rng& rng) {
  PrimitiveType t = l.shape().element_type();
  const int64_t n = l.element_count();
  if (t == PrimitiveType::kPred) {
    for (int64_t i = 0; i < n; ++i) l.SetFromInt64(i, static_cast<int64_t>(rng.Next() >> 63));
  } else if (IsComplexType(t)) {
    for (int64_t i = 0; i < n; ++i) {
      double re = rng.Symmetric();
      l.SetFromComplex(i, {re, rng.Symmetric()});
    }
  } else if (t == PrimitiveType::kF8E8M0FNU) {
    for (int64_t i = 0; i < n; ++i) l.SetFromDouble(i, std::ldexp(1.0, static_cast<int>(rng.Int(-4, 4))));
  } else if (IsFloatingPointType(t)) {
    for (int64_t i = 0; i < n; ++i) l.SetFromDouble(i, rng.Symmetric());
  } else {
    // Only the width matters for the sub-byte types; wider types all get the same small range.
    int bits = std::min(PrimitiveBitWidth(t), 8);
    int64_t lo = 0, hi = std::min<int64_t>(7, (int64_t(1) << bits) - 1);
    if (IsSignedIntegralType(t)) {
      lo = std::max<int64_t>(-4, -(int64_t(1) << (bits - 1)));
      hi = std::min<int64_t>(4, (int64_t(1) << (bits - 1)) - 1);
    }
    for (int64_t i = 0; i < n; ++i) l.SetFromInt64(i, rng.Int(lo, hi));
  }
  if (n == 0) return;
  for (int64_t i = 0; i < n; ++i)
    if (IsComplexType(t) ? l.GetAsComplex(i) != std::complex<double>(0) : l.GetAsBool(i)) return;
  l.SetFromInt64(0, 1);
}

void Fill(Literal& l, uint64_t seed, uint64_t stream) {
  const Shape& shape = l.shape();
  if (shape.IsTuple()) {
    for (int64_t i = 0; i < l.tuple_size(); ++i)
      Fill(l.mutable_tuple_element(i), seed, Mix(stream, static_cast<uint64_t>(i) + 1));
    return;
  }
  if (!shape.IsArray()) return;
  Rng rng(Mix(seed, stream));
  FillArray(l, rng);
}

}  // namespace

Literal MakeRandomLiteral(const Shape& shape, uint64_t seed, uint64_t stream) {
  Literal l(shape);
  Fill(l, seed, stream);
  return l;
}

std::vector<Literal> MakeRandomArguments(const std::vector<Shape>& parameter_shapes, uint64_t seed) {
  std::vector<Literal> out;
  out.reserve(parameter_shapes.size());
  for (size_t i = 0; i < parameter_shapes.size(); ++i)
    out.push_back(MakeRandomLiteral(parameter_shapes[i], seed, i));
  return out;
}

StatusOr<std::vector<Literal>> CreateRandomArguments(const std::vector<Shape>& parameter_shapes,
                                                     uint64_t seed) {
  std::vector<Literal> out;
  out.reserve(parameter_shapes.size());
  for (size_t i = 0; i < parameter_shapes.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Literal l, Literal::Create(parameter_shapes[i], StrCat("random input ", i)));
    Fill(l, seed, i);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace kiln
