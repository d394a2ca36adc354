#include "kiln/autotune/output_compare.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <thread>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/hlo/float_types.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"

namespace kiln::autotune {

namespace {

// Real floats of the common widths, compared straight from the buffers on a few threads: the
// generic path (Literal element access) costs tens of ns per element, seconds for the
// 100-MiB outputs of a large GEMM -- per candidate.
template <typename T>
double Value(const void* p, int64_t i) {
  return static_cast<double>(static_cast<const T*>(p)[i]);
}

template <typename T>
CompareResult CompareReal(const void* got, const void* expected, int64_t n, double rtol) {
  const int threads = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(std::thread::hardware_concurrency(), n / (1 << 20) + 1), 1, 16));
  const int64_t chunk = (n + threads - 1) / threads;
  auto run = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
    body(0);
    for (std::thread& th : pool) th.join();
  };
  std::vector<double> sums(threads, 0.0);
  std::vector<int64_t> finite(threads, 0);
  run([&](int t) {
    double s = 0;
    int64_t f = 0;
    for (int64_t i = t * chunk, end = std::min(n, (t + 1) * chunk); i < end; ++i) {
      const double e = Value<T>(expected, i);
      if (std::isfinite(e)) {
        s += e * e;
        ++f;
      }
    }
    sums[t] = s;
    finite[t] = f;
  });
  double sum_sq = 0;
  int64_t count = 0;
  for (int t = 0; t < threads; ++t) {
    sum_sq += sums[t];
    count += finite[t];
  }
  const double scale = std::max(count > 0 ? std::sqrt(sum_sq / count) : 0.0, 1e-6);
  struct Part {
    int64_t mismatches = 0, first = -1;
    double got = 0, expected = 0;
  };
  std::vector<Part> parts(threads);
  run([&](int t) {
    Part& p = parts[t];
    for (int64_t i = t * chunk, end = std::min(n, (t + 1) * chunk); i < end; ++i) {
      const double g = Value<T>(got, i), e = Value<T>(expected, i);
      bool ok;
      if (std::isfinite(g) && std::isfinite(e)) {
        ok = std::abs(g - e) <= rtol * (std::abs(e) + scale);
      } else if (std::isnan(g) || std::isnan(e)) {
        ok = std::isnan(g) && std::isnan(e);
      } else {
        ok = g == e;
      }
      if (!ok && p.mismatches++ == 0) {
        p.first = i;
        p.got = g;
        p.expected = e;
      }
    }
  });
  CompareResult result;
  for (const Part& p : parts) {
    if (p.mismatches == 0) continue;
    if (result.mismatches == 0) {
      result.first_mismatch = p.first;
      result.got = p.got;
      result.expected = p.expected;
    }
    result.mismatches += p.mismatches;
  }
  result.ok = result.mismatches == 0;
  return result;
}

}  // namespace

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

bool AsksHighestPrecision(const HloInstruction& instr) {
  for (Precision p : instr.attrs().precision_config.operand_precision)
    if (p == Precision::kHighest) return true;
  const std::string& text = instr.backend_config().text;
  for (std::string_view form : {"\"precision\":\"highest\"", "\"precision\": \"highest\""})
    if (text.find(form) != std::string::npos) return true;
  return false;
}

double CandidateRtol(PrimitiveType type, bool highest, double rtol) {
  if (rtol >= 0) return rtol;
  if (highest && (type == PrimitiveType::kF32 || type == PrimitiveType::kC64)) return kHighestF32Rtol;
  return DefaultTolerance(type).rtol;
}

std::string CompareResult::ToString() const {
  if (ok) return "match";
  return StrCat(mismatches, " element", mismatches == 1 ? "" : "s", " differ; first at ",
                first_mismatch, ": ", RoundTripDouble(got), " vs ", RoundTripDouble(expected));
}

CompareResult CompareArrays(const Shape& shape, const void* got, const void* expected,
                            double rtol) {
  const PrimitiveType type = shape.element_type();
  {
    const double r = rtol < 0 ? DefaultTolerance(type).rtol : rtol;
    const int64_t n = shape.num_elements();
    switch (type) {
      case PrimitiveType::kF32: return CompareReal<float>(got, expected, n, r);
      case PrimitiveType::kF64: return CompareReal<double>(got, expected, n, r);
      case PrimitiveType::kBF16: return CompareReal<bfloat16>(got, expected, n, r);
      case PrimitiveType::kF16: return CompareReal<half>(got, expected, n, r);
      default: break;
    }
  }
  CompareResult result;
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
