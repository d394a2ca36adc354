// Test helpers for the evaluator's kernel tests: parse an HLO snippet, run it, read values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/eval/evaluator.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/parser.h"

namespace kiln::testing {

// Parses `hlo` (a module or a bare ENTRY computation) and evaluates it on `args`.
inline StatusOr<Literal> RunHlo(std::string_view hlo, const std::vector<Literal>& args = {}) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(hlo));
  Evaluator evaluator;
  return evaluator.Run(*module, args);
}

// Runs and asserts success.
inline Literal MustRun(std::string_view hlo, const std::vector<Literal>& args = {}) {
  StatusOr<Literal> r = RunHlo(hlo, args);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
  if (!r.ok()) return Literal();
  return std::move(r).value();
}

inline std::vector<double> Doubles(const Literal& l) {
  std::vector<double> v;
  for (int64_t i = 0; i < l.element_count(); ++i) v.push_back(l.GetAsDouble(i));
  return v;
}
inline std::vector<int64_t> Ints(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.element_count(); ++i) v.push_back(l.GetAsInt64(i));
  return v;
}
inline std::vector<uint64_t> U64s(const Literal& l) {
  std::vector<uint64_t> v;
  int w = PrimitiveByteWidth(l.shape().element_type());
  for (int64_t i = 0; i < l.element_count(); ++i) {
    uint64_t x = 0;
    std::memcpy(&x, l.untyped_data() + i * w, std::min(w, 8));
    v.push_back(x);
  }
  return v;
}
inline std::vector<bool> Bools(const Literal& l) {
  std::vector<bool> v;
  for (int64_t i = 0; i < l.element_count(); ++i) v.push_back(l.GetAsBool(i));
  return v;
}
// Raw f32 bits (to check -0 and NaN payload-insensitively use std::signbit / isnan instead).
inline std::vector<uint32_t> F32Bits(const Literal& l) {
  std::vector<uint32_t> v;
  for (float f : l.data<float>()) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v.push_back(u);
  }
  return v;
}

// Checks doubles with NaN == NaN and exact -0/+0 distinction.
inline void ExpectSameDoubles(const std::vector<double>& got, const std::vector<double>& want,
                              std::string_view what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] got " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " sign [" << i << "]";
    }
  }
}

inline void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                       double tol, std::string_view what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
}

// A one-line HLO module computing `body` (which must define ROOT) with no parameters.
inline std::string Entry(std::string_view body) {
  return "HloModule m\n\nENTRY e {\n" + std::string(body) + "\n}\n";
}

}  // namespace kiln::testing
