#include "kiln/autotune/output_compare.h"

#include <cmath>
#include <complex>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/hlo/literal.h"

namespace kiln::autotune {

Tolerance DefaultTolerance(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF64:
    case PrimitiveType::kC128:
      return {1e-6};
    case PrimitiveType::kF32:
    case PrimitiveType::kC64:
      return {1e-2};
    case PrimitiveType::kF16:
      return {2e-2};
    case PrimitiveType::kBF16:
      return {5e-2};
    default:
      if (IsF8Type(type) || type == PrimitiveType::kF4E2M1FN) return {0.25};
      return {0};  // pred and integers: exact
  }
}

std::string CompareResult::ToString() const {
  if (ok) return "match";
  return StrCat(mismatches, " element", mismatches == 1 ? "" : "s", " differ; first at ",
                first_mismatch, ": ", RoundTripDouble(got), " vs ", RoundTripDouble(expected));
}

CompareResult CompareArrays(const Shape& shape, const void* got, const void* expected,
                            double rtol) {
  CompareResult result;
  const PrimitiveType type = shape.element_type();
  // Literals give typed element access for every element type, narrow floats included.
  Shape dense = Shape::ArrayWithDefaultLayout(type, shape.dimensions());
  Literal g(dense), e(dense);
  std::memcpy(g.untyped_data(), got, g.size_bytes());
  std::memcpy(e.untyped_data(), expected, e.size_bytes());
  const int64_t n = g.element_count();
  auto note = [&](int64_t i, double gv, double ev) {
    if (result.mismatches++ == 0) {
      result.first_mismatch = i;
      result.got = gv;
      result.expected = ev;
    }
  };

  if (!IsFloatingPointType(type) && !IsComplexType(type)) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t gv = g.GetAsInt64(i), ev = e.GetAsInt64(i);
      if (gv != ev) note(i, static_cast<double>(gv), static_cast<double>(ev));
    }
    result.ok = result.mismatches == 0;
    return result;
  }

  if (rtol < 0) rtol = DefaultTolerance(type).rtol;
  double sum_sq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::complex<double> ev = e.GetAsComplex(i);
    if (std::isfinite(ev.real()) && std::isfinite(ev.imag())) {
      sum_sq += std::norm(ev);
      ++finite;
    }
  }
  const double scale = std::max(finite > 0 ? std::sqrt(sum_sq / finite) : 0.0, 1e-6);
  auto same_special = [](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b;  // infinities
  };
  for (int64_t i = 0; i < n; ++i) {
    std::complex<double> gv = g.GetAsComplex(i), ev = e.GetAsComplex(i);
    bool special = !std::isfinite(gv.real()) || !std::isfinite(gv.imag()) ||
                   !std::isfinite(ev.real()) || !std::isfinite(ev.imag());
    bool ok = special ? same_special(gv.real(), ev.real()) && same_special(gv.imag(), ev.imag())
                      : std::abs(gv - ev) <= rtol * (std::abs(ev) + scale);
    if (!ok) note(i, gv.real(), ev.real());
  }
  result.ok = result.mismatches == 0;
  return result;
}

}  // namespace kiln::autotune
