#include "kiln/eval/compare.h"

#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>

#include "kiln/base/strings.h"

namespace kiln {

namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

std::vector<int64_t> MultiIndex(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] > 0) {
      idx[k] = linear % dims[k];
      linear /= dims[k];
    }
  }
  return idx;
}

bool IsExactType(PrimitiveType t) { return t == PrimitiveType::kPred || IsIntegralType(t); }

}  // namespace

Tolerance ToleranceFor(PrimitiveType t, const CompareOptions& options, const OutputTraits* traits) {
  if (IsExactType(t)) return {};
  if (traits && traits->exact) return {.exact = true};
  Tolerance tol = options.backend_vs_evaluator ? BackendTolerance(t) : DefaultTolerance(t);
  const bool tf32 = options.reference_tf32 && (traits == nullptr || traits->uses_f32_products);
  if (tf32 && (t == PrimitiveType::kF32 || t == PrimitiveType::kC64)) tol = kTf32Tolerance;
  if (options.rtol) tol.rtol = *options.rtol;
  if (options.atol) tol.atol = *options.atol;
  return tol;
}

ArrayComparison CompareArrays(const Literal& actual, const Literal& expected,
                              const Tolerance& tolerance, std::string name) {
  ArrayComparison r;
  r.name = std::move(name);
  r.actual_shape = actual.shape().ToString(false);
  r.tolerance = tolerance;
  if (!actual.shape().IsArray() || !expected.shape().IsArray()) {
    r.error = StrCat("cannot compare ", actual.shape().ToString(false), " with ",
                     expected.shape().ToString(false));
    return r;
  }
  if (actual.shape().dimensions() != expected.shape().dimensions()) {
    r.error = StrCat("shape ", actual.shape().ToString(false), " differs from the expected ",
                     expected.shape().ToString(false));
    return r;
  }
  PrimitiveType at = actual.shape().element_type(), et = expected.shape().element_type();
  const int64_t n = actual.element_count();
  r.elements = n;
  r.exact = (IsExactType(at) && IsExactType(et)) || tolerance.exact;
  const std::vector<int64_t>& dims = actual.shape().dimensions();
  bool complex = IsComplexType(at) || IsComplexType(et);
  // Element i of a literal as a complex number (real types: imaginary part 0).
  auto value = [complex](const Literal& l, int64_t i) -> std::complex<double> {
    return complex ? l.GetAsComplex(i) : std::complex<double>(l.GetAsDouble(i), 0.0);
  };

  if (r.exact && !(IsExactType(at) && IsExactType(et))) {
    // Floats bit for bit: the same value (every type widens exactly to double) with the same
    // sign, or NaN against NaN (any payload).
    r.tolerance = {.exact = true};
    auto same = [](double a, double e) {
      if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
      return a == e && std::signbit(a) == std::signbit(e);
    };
    for (int64_t i = 0; i < n; ++i) {
      const std::complex<double> a = value(actual, i), e = value(expected, i);
      if (same(a.real(), e.real()) && same(a.imag(), e.imag())) continue;
      const bool nan = std::isnan(a.real()) != std::isnan(e.real()) || std::isnan(a.imag()) != std::isnan(e.imag());
      const double err = nan ? std::numeric_limits<double>::quiet_NaN() : std::abs(a - e);
      if (std::isfinite(err)) r.max_abs_error = std::max(r.max_abs_error, err);
      // The worst: the first NaN mismatch, else the largest difference (a sign of zero: 0).
      const bool better = r.mismatches == 0 || (nan && r.nan_mismatches == 0) ||
                          (!nan && r.nan_mismatches == 0 && !(err <= r.worst_abs_error));
      if (better) {
        r.worst_index = MultiIndex(dims, i);
        r.worst_actual = a.real();
        r.worst_expected = e.real();
        r.worst_abs_error = err;
        r.worst_rel_error = std::abs(e) != 0 ? err / std::abs(e) : std::numeric_limits<double>::infinity();
      }
      ++r.mismatches;
      if (nan) ++r.nan_mismatches;
    }
    if (r.mismatches == 0 && n > 0) r.worst_index = MultiIndex(dims, 0);
    return r;
  }
  if (r.exact) {
    r.tolerance = {};
    auto get = [](const Literal& l, int64_t i) -> __int128 {
      return l.shape().element_type() == PrimitiveType::kU64 ? __int128(l.data<uint64_t>()[i])
                                                              : __int128(l.GetAsInt64(i));
    };
    for (int64_t i = 0; i < n; ++i) {
      __int128 ai = get(actual, i), ei = get(expected, i);
      bool same = ai == ei;
      double a = static_cast<double>(ai), e = static_cast<double>(ei);
      double err = std::fabs(a - e);
      r.max_abs_error = std::max(r.max_abs_error, err);
      if (!same) {
        if (r.mismatches == 0 || err > r.worst_abs_error) {
          r.worst_index = MultiIndex(dims, i);
          r.worst_actual = a;
          r.worst_expected = e;
          r.worst_abs_error = err;
          r.worst_rel_error = e != 0 ? err / std::fabs(e) : std::numeric_limits<double>::infinity();
        }
        ++r.mismatches;
      }
    }
    if (r.mismatches == 0 && n > 0) r.worst_index = MultiIndex(dims, 0);
    return r;
  }

  // Floating comparison, by value in double (complex: the modulus of the difference).
  double max_expected = 0;
  for (int64_t i = 0; i < n; ++i) {
    double m = complex ? std::abs(expected.GetAsComplex(i)) : std::fabs(expected.GetAsDouble(i));
    if (std::isfinite(m)) max_expected = std::max(max_expected, m);
  }
  const double base = tolerance.atol + tolerance.scaled_atol * max_expected;
  double worst_ratio = -1;
  bool worst_is_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const std::complex<double> a = value(actual, i), e = value(expected, i);
    bool a_nan = std::isnan(a.real()) || std::isnan(a.imag());
    bool e_nan = std::isnan(e.real()) || std::isnan(e.imag());
    bool a_inf = !a_nan && (std::isinf(a.real()) || std::isinf(a.imag()));
    bool e_inf = !e_nan && (std::isinf(e.real()) || std::isinf(e.imag()));
    double ratio;  // error over bound; > 1 is a mismatch
    double err = 0, rel = 0;
    bool nan_mismatch = false;
    if (a_nan || e_nan) {
      nan_mismatch = a_nan != e_nan;
      ratio = nan_mismatch ? std::numeric_limits<double>::infinity() : 0;
      err = rel = nan_mismatch ? std::numeric_limits<double>::quiet_NaN() : 0;
    } else if (a_inf || e_inf) {
      bool same = a == e;
      ratio = same ? 0 : std::numeric_limits<double>::infinity();
      err = rel = same ? 0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::abs(a - e);
      double mag = std::abs(e);
      rel = mag > 0 ? err / mag : (err > 0 ? std::numeric_limits<double>::infinity() : 0);
      double bound = base + tolerance.rtol * mag;
      ratio = bound > 0 ? err / bound : (err > 0 ? std::numeric_limits<double>::infinity() : 0);
      r.max_abs_error = std::max(r.max_abs_error, err);
      if (std::isfinite(rel)) r.max_rel_error = std::max(r.max_rel_error, rel);
    }
    if (ratio > 1) ++r.mismatches;
    if (nan_mismatch) ++r.nan_mismatches;
    // The worst: the first NaN mismatch, else the largest ratio.
    bool better = nan_mismatch ? !worst_is_nan : (!worst_is_nan && ratio > worst_ratio);
    if (better) {
      worst_ratio = ratio;
      worst_is_nan = nan_mismatch;
      r.worst_index = MultiIndex(dims, i);
      r.worst_actual = a.real();
      r.worst_expected = e.real();
      r.worst_abs_error = err;
      r.worst_rel_error = rel;
    }
  }
  return r;
}

std::string ArrayComparison::ToString() const {
  std::string s = StrCat(name, " ", actual_shape, ": ");
  if (!error.empty()) return s + error;
  std::string tol = exact ? "exact" : StrCat("rtol ", Sci(tolerance.rtol), ", atol ", Sci(tolerance.atol));
  if (!exact && tolerance.scaled_atol > 0) tol += StrCat(" + ", Sci(tolerance.scaled_atol), " * max|expected|");
  if (mismatches == 0 && exact) return s + "ok (exact)";
  if (mismatches == 0)
    return s + StrCat("ok (", tol, "; max abs err ", Sci(max_abs_error), ", max rel err ",
                      Sci(max_rel_error), ")");
  s += StrCat(mismatches, " of ", elements, " elements differ (", tol, ")");
  if (nan_mismatches) s += StrCat(", ", nan_mismatches, " NaN mismatches");
  s += StrCat("; worst at [", StrJoin(worst_index, ", "), "]: actual ", Num(worst_actual),
              ", expected ", Num(worst_expected), ", abs err ", Sci(worst_abs_error), ", rel err ",
              Sci(worst_rel_error));
  return s;
}

bool Comparison::ok() const {
  if (!error.empty()) return false;
  for (const ArrayComparison& a : arrays)
    if (!a.ok()) return false;
  return true;
}

std::string Comparison::ToString() const {
  std::string s;
  if (!error.empty()) s += error + "\n";
  for (const ArrayComparison& a : arrays) s += a.ToString() + "\n";
  return s;
}

std::vector<const Literal*> ArrayLeaves(const Literal& literal) {
  std::vector<const Literal*> out;
  for (const Literal* l : literal.FlattenedLeaves())
    if (l->shape().IsArray()) out.push_back(l);
  return out;
}

Comparison CompareLeaves(const std::vector<const Literal*>& actual,
                         const std::vector<const Literal*>& expected, const CompareOptions& options) {
  Comparison c;
  if (actual.size() != expected.size())
    c.error = StrCat("the result has ", actual.size(), " output arrays, the reference ", expected.size());
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    PrimitiveType t = actual[i]->shape().element_type();
    const OutputTraits* traits = i < options.outputs.size() ? &options.outputs[i] : nullptr;
    c.arrays.push_back(
        CompareArrays(*actual[i], *expected[i], ToleranceFor(t, options, traits), StrCat("out", i)));
  }
  return c;
}

Comparison CompareLiterals(const Literal& actual, const Literal& expected, const CompareOptions& options) {
  return CompareLeaves(ArrayLeaves(actual), ArrayLeaves(expected), options);
}

}  // namespace kiln
