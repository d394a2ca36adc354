#include "kiln/eval/reference_cases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"

namespace kiln::reference_cases {

StatusOr<Literal> RunHlo(std::string_view hlo, const std::vector<Literal>& args) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(hlo));
  Evaluator evaluator;
  return evaluator.Run(*module, args);
}

namespace {

StatusOr<double> JsonDouble(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (s == "nan") return nan;
    if (s == "-nan") return std::copysign(nan, -1.0);
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return InvalidArgument("bad JSON number ", v.dump());
}

}  // namespace

StatusOr<Literal> LiteralFromJson(const nlohmann::json& j) {
  std::optional<PrimitiveType> t = ParsePrimitiveType(j.at("type").get<std::string>());
  if (!t) return InvalidArgument("bad type in ", j.at("type").dump());
  std::vector<int64_t> dims = j.at("dims").get<std::vector<int64_t>>();
  Literal l(Shape::ArrayWithDefaultLayout(*t, dims));
  const nlohmann::json& values = j.at("values");
  if (static_cast<int64_t>(values.size()) != l.element_count())
    return InvalidArgument("expected ", l.element_count(), " values, got ", values.size());
  for (int64_t i = 0; i < l.element_count(); ++i) {
    const nlohmann::json& v = values[i];
    if (IsComplexType(*t)) {
      KILN_ASSIGN_OR_RETURN(double re, JsonDouble(v.at(0)));
      KILN_ASSIGN_OR_RETURN(double im, JsonDouble(v.at(1)));
      l.SetFromComplex(i, {re, im});
    } else if (*t == PrimitiveType::kU64) {
      l.data<uint64_t>()[i] = v.is_string() ? std::stoull(v.get<std::string>()) : v.get<uint64_t>();
    } else if (IsIntegralType(*t)) {
      l.SetFromInt64(i, v.get<int64_t>());
    } else if (*t == PrimitiveType::kPred) {
      l.data<bool>()[i] = v.get<bool>();
    } else {
      KILN_ASSIGN_OR_RETURN(double d, JsonDouble(v));
      l.SetFromDouble(i, d);
    }
  }
  return l;
}

std::string TestdataPath(std::string_view file) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) return "";
  return StrCat(src, "/src/kiln/eval/testdata/", file);
}

nlohmann::json LoadTestdata(std::string_view file) {
  std::string path = TestdataPath(file);
  if (path.empty()) {
    ADD_FAILURE() << "KILN_SOURCE_DIR is not set (run the test through ctest)";
    return {};
  }
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

namespace {

void CheckCase(const nlohmann::json& c) {
  const std::string name = c.at("name").get<std::string>();
  SCOPED_TRACE("case " + name);
  std::vector<Literal> args;
  for (const auto& a : c.at("args")) {
    StatusOr<Literal> l = LiteralFromJson(a);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    args.push_back(std::move(l).value());
  }
  StatusOr<Literal> result = RunHlo(c.at("hlo").get<std::string>(), args);
  ASSERT_TRUE(result.ok()) << name << ": " << result.status().ToString();
  std::vector<Literal> expected;
  for (const auto& e : c.at("expected")) {
    StatusOr<Literal> l = LiteralFromJson(e);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    expected.push_back(std::move(l).value());
  }
  std::vector<const Literal*> actual = result->FlattenedLeaves();
  ASSERT_EQ(actual.size(), expected.size()) << name << ": result " << result->ToShortString();
  const bool exact = c.value("exact", false);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(Shape::Compatible(actual[i]->shape(), expected[i].shape()))
        << name << " out" << i << ": got " << actual[i]->shape().ToString(false) << ", expected "
        << expected[i].shape().ToString(false);
    Tolerance tol = DefaultTolerance(expected[i].shape().element_type());
    if (c.contains("rtol")) tol.rtol = c["rtol"].get<double>();
    if (c.contains("atol")) tol.atol = c["atol"].get<double>();
    if (exact) tol = Tolerance{0, 0, 0};
    ArrayComparison cmp = CompareArrays(*actual[i], expected[i], tol, StrCat("out", i));
    EXPECT_TRUE(cmp.ok()) << name << ": " << cmp.ToString();
    if (exact && cmp.ok()) {
      EXPECT_TRUE(actual[i]->BitwiseEquals(expected[i]))
          << name << " out" << i << " differs in bits (signed zero or NaN payload): got "
          << actual[i]->ToShortString(32) << ", expected " << expected[i].ToShortString(32);
    }
  }
}

}  // namespace

int RunJsonCases(std::string_view file) {
  nlohmann::json j = LoadTestdata(file);
  if (j.is_discarded() || !j.contains("cases")) {
    ADD_FAILURE() << "no cases in " << file;
    return 0;
  }
  int n = 0;
  for (const auto& c : j["cases"]) {
    CheckCase(c);
    ++n;
  }
  return n;
}

void RunJsonCase(std::string_view file, std::string_view name) {
  nlohmann::json j = LoadTestdata(file);
  if (j.is_discarded() || !j.contains("cases")) {
    ADD_FAILURE() << "no cases in " << file;
    return;
  }
  for (const auto& c : j["cases"])
    if (c.at("name").get<std::string>() == name) {
      CheckCase(c);
      return;
    }
  ADD_FAILURE() << "no case " << name << " in " << file;
}

}  // namespace kiln::reference_cases
