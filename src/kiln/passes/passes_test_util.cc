#include "kiln/passes/passes_test_util.h"

#include <cmath>
#include <limits>

#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/verifier.h"

namespace kiln::testing {

std::unique_ptr<HloModule> ParseOrDie(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

std::string EntryOps(const HloModule& module) {
  std::string s;
  for (HloInstruction* i : module.entry_computation()->MakeInstructionPostOrder()) {
    if (!s.empty()) s += ",";
    s += HloOpcodeString(i->opcode());
  }
  return s;
}

std::string RootSummary(const HloModule& module) {
  const HloInstruction* root = module.entry_computation()->root_instruction();
  std::string s(HloOpcodeString(root->opcode()));
  if (root->operand_count() == 0) return s;
  s += "(";
  for (int64_t i = 0; i < root->operand_count(); ++i) {
    if (i) s += ",";
    s += HloOpcodeString(root->operand(i)->opcode());
  }
  return s + ")";
}

namespace {

std::vector<Shape> ParameterShapes(const HloModule& module) {
  std::vector<Shape> shapes;
  for (HloInstruction* p : module.entry_computation()->parameter_instructions())
    shapes.push_back(p->shape());
  return shapes;
}

void InjectSpecials(Literal& l, uint64_t seed) {
  if (l.shape().IsTuple()) {
    for (int64_t i = 0; i < l.tuple_size(); ++i) InjectSpecials(l.mutable_tuple_element(i), seed + 3 * i);
    return;
  }
  if (!l.shape().IsArray()) return;
  const PrimitiveType t = l.shape().element_type();
  const int64_t n = l.element_count();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> fspecial = {std::nan(""), inf, -inf, -0.0, 0.0, 1.0, -1.0, 0.5, 65504.0,
                                  1e-30};
  std::vector<int64_t> ispecial = {0, 1, -1, 2};
  if (IsIntegralType(t)) {
    const int bits = PrimitiveBitWidth(t);
    if (IsSignedIntegralType(t)) {
      ispecial.push_back(bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1)));
      ispecial.push_back(bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1);
    } else {
      ispecial.push_back(-1);  // wraps to the maximum
    }
  }
  // Consecutive elements walk through the special values (each seed starting further on), so
  // even a 4-element array sees all of them over three seeds; every fifth stays random.
  for (int64_t i = 0; i < n; ++i) {
    if (i % 5 == 4) continue;
    const uint64_t k = static_cast<uint64_t>(i) + seed * 4;
    if (IsFloatingPointType(t)) {
      l.SetFromDouble(i, fspecial[k % fspecial.size()]);
    } else if (IsIntegralType(t)) {
      l.SetFromInt64(i, ispecial[k % ispecial.size()]);
    }
  }
}

bool SameFloat(double a, double b, Match match) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a != b) return false;
  return match != Match::kExact || std::signbit(a) == std::signbit(b);
}

std::string CompareLeaf(const Literal& a, const Literal& b, Match match, const std::string& name) {
  if (!Shape::Compatible(a.shape(), b.shape()))
    return StrCat(name, ": shape ", b.shape().ToString(false), " after, ", a.shape().ToString(false),
                  " before");
  if (!a.shape().IsArray()) return "";
  const PrimitiveType t = a.shape().element_type();
  if (match == Match::kClose && (IsFloatingPointType(t) || IsComplexType(t))) {
    ArrayComparison c = CompareArrays(b, a, DefaultTolerance(t), name);
    return c.ok() ? "" : c.ToString();
  }
  for (int64_t i = 0; i < a.element_count(); ++i) {
    bool same;
    if (IsFloatingPointType(t)) {
      same = SameFloat(a.GetAsDouble(i), b.GetAsDouble(i), match);
    } else if (IsComplexType(t)) {
      same = SameFloat(a.GetAsComplex(i).real(), b.GetAsComplex(i).real(), match) &&
             SameFloat(a.GetAsComplex(i).imag(), b.GetAsComplex(i).imag(), match);
    } else {
      same = a.GetAsInt64(i) == b.GetAsInt64(i);
    }
    if (!same)
      return StrCat(name, " element ", i, ": before ", a.ToShortString(16), "; after ",
                    b.ToShortString(16));
  }
  return "";
}

}  // namespace

std::vector<Literal> RandomArguments(const HloModule& module, uint64_t seed) {
  return MakeRandomArguments(ParameterShapes(module), seed);
}

std::vector<Literal> SpecialArguments(const HloModule& module, uint64_t seed) {
  std::vector<Literal> args = MakeRandomArguments(ParameterShapes(module), seed);
  for (size_t i = 0; i < args.size(); ++i) InjectSpecials(args[i], seed + 7 * i);
  return args;
}

std::string CompareModules(const HloModule& before, const HloModule& after,
                           const std::vector<Literal>& args, Match match) {
  EvaluatorOptions options;
  options.max_loop_iterations = 10000;
  Evaluator e1(options);
  StatusOr<Literal> expected = e1.Run(before, args);
  if (!expected.ok()) return StrCat("skip: ", expected.status().message());
  Evaluator e2(options);
  StatusOr<Literal> actual = e2.Run(after, args);
  if (!actual.ok()) return StrCat("after the pass: ", actual.status().ToString());
  std::vector<const Literal*> x = expected->FlattenedLeaves();
  std::vector<const Literal*> y = actual->FlattenedLeaves();
  if (x.size() != y.size()) return StrCat(y.size(), " outputs after, ", x.size(), " before");
  for (size_t i = 0; i < x.size(); ++i) {
    std::string d = CompareLeaf(*x[i], *y[i], match, StrCat("out", i));
    if (!d.empty()) return d;
  }
  return "";
}

namespace {

void CheckValues(const HloModule& before, const HloModule& after, Match match) {
  int compared = 0;
  std::string last_skip;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    for (bool special : {false, true}) {
      std::vector<Literal> args =
          special ? SpecialArguments(before, seed) : RandomArguments(before, seed);
      std::string d = CompareModules(before, after, args, match);
      if (d.rfind("skip: ", 0) == 0) {
        // Unimplemented evaluator ops skip the value check; other errors in the original
        // module (loops running too long on special inputs) skip this input only.
        if (d.find("unsupported") != std::string::npos) GTEST_SKIP() << d;
        last_skip = d;
        continue;
      }
      ASSERT_EQ(d, "") << (special ? "special" : "random") << " inputs, seed " << seed
                       << "\nafter:\n" << after.ToString();
      ++compared;
    }
  }
  // A check that compared nothing is no check: every input failed on the original module.
  EXPECT_GT(compared, 0) << "no input could be compared (" << last_skip << ")\nbefore:\n"
                         << before.ToString();
}

}  // namespace

std::unique_ptr<HloModule> RunPassAndCheck(HloPass& pass, std::string_view text,
                                           bool expect_changed, Match match) {
  std::unique_ptr<HloModule> before = ParseOrDie(text);
  std::unique_ptr<HloModule> after = ParseOrDie(text);
  if (!before || !after) return nullptr;
  Status v0 = VerifyModule(*before);
  EXPECT_TRUE(v0.ok()) << "the test's input is invalid: " << v0.ToString();
  StatusOr<bool> changed = pass.Run(*after);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  if (!changed.ok()) return after;
  EXPECT_EQ(*changed, expect_changed) << after->ToString();
  Status v = VerifyModule(*after);
  EXPECT_TRUE(v.ok()) << v.ToString() << "\n" << after->ToString();
  StatusOr<bool> again = pass.Run(*after);
  EXPECT_TRUE(again.ok() && !*again) << "second run changed the module:\n" << after->ToString();
  CheckValues(*before, *after, match);
  return after;
}

}  // namespace kiln::testing
