// The simplification pipeline on real modules: every ../shared/bench/suite/*_small module and
// every tests/data case (their case.npz inputs), every ../shared/corpus/xla-fuzz module (random
// inputs), plus inputs full of special values for all. For each: the pipeline (with the
// verifier after every pass) succeeds, the result verifies, a second run changes nothing, and
// the reference evaluator gives the same values before and after -- exactly, except that NaN
// matches NaN and -0 matches +0 (dot-k1 keeps the sign of a zero product where the dot's sum
// gives +0, as XLA's own rewrite does: see algebraic_simplifier.h and the case
// tests/data/dot_einsum_outer_f32). Modules the evaluator cannot run yet are skipped with the
// op named.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "kiln/hlo/npy_literal.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/passes_test_util.h"
#include "kiln/passes/simplification_pipeline.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;  // test name: letters, digits, '_'
  std::string hlo;
  std::string npz;   // "" for random inputs
};

std::string SharedDir() {
  const char* d = std::getenv("KILN_SHARED_DIR");
  return d && *d && fs::is_directory(d) ? d : "";
}

std::string Sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::vector<Case> FindCases() {
  std::vector<Case> cases;
  std::error_code ec;
  const std::string shared = SharedDir();
  if (!shared.empty()) {
    const fs::path suite = fs::path(shared) / "bench" / "suite";
    for (const auto& e : fs::directory_iterator(suite, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < 6 || name.substr(name.size() - 6) != "_small") continue;
      if (!fs::exists(e.path() / "module.hlo") || !fs::exists(e.path() / "case.npz")) continue;
      cases.push_back({Sanitize("bench_" + name), (e.path() / "module.hlo").string(),
                       (e.path() / "case.npz").string()});
    }
    const fs::path corpus = fs::path(shared) / "corpus" / "xla-fuzz";
    for (const auto& e : fs::directory_iterator(corpus, ec)) {
      if (e.path().extension() != ".hlo") continue;
      cases.push_back({Sanitize("fuzz_" + e.path().stem().string()), e.path().string(), ""});
    }
  }
  const char* source = std::getenv("KILN_SOURCE_DIR");
  if (source && *source) {
    for (const auto& e : fs::directory_iterator(fs::path(source) / "tests" / "data", ec)) {
      if (!fs::exists(e.path() / "module.hlo") || !fs::exists(e.path() / "case.npz")) continue;
      cases.push_back({Sanitize("data_" + e.path().filename().string()),
                       (e.path() / "module.hlo").string(), (e.path() / "case.npz").string()});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return cases;
}

std::unique_ptr<HloModule> ParseFile(const std::string& path) {
  auto m = ParseHloModuleFile(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Runs the pipeline with the verifier after every pass; returns whether it changed the module.
bool Simplify(HloModule& m, bool canonicalize_dots = false) {
  PipelineOptions options;
  options.verifier = [](const HloModule& module) { return VerifyModule(module); };
  HloPassPipeline pipeline("neutral", options);
  SimplificationOptions simplification;
  simplification.canonicalize_dots = canonicalize_dots;
  AddSimplificationPasses(pipeline, simplification);
  StatusOr<bool> changed = pipeline.Run(m);
  EXPECT_TRUE(changed.ok()) << changed.status().ToString();
  return changed.ok() && *changed;
}

class SimplificationConformanceTest : public ::testing::TestWithParam<Case> {};

void CheckCase(const Case& c, bool canonicalize_dots) {
  std::unique_ptr<HloModule> before = ParseFile(c.hlo);
  std::unique_ptr<HloModule> after = ParseFile(c.hlo);
  ASSERT_TRUE(before && after);
  const int64_t count_before = CountInstructions(*after);
  Simplify(*after, canonicalize_dots);
  Status v = VerifyModule(*after);
  ASSERT_TRUE(v.ok()) << v.ToString() << "\n" << after->ToString();
  EXPECT_FALSE(Simplify(*after, canonicalize_dots))
      << "a second run changed the module:\n" << after->ToString();
  if (!canonicalize_dots)
    std::cout << "[ counts   ] " << c.name << ": " << count_before << " -> "
              << CountInstructions(*after) << " instructions\n";

  std::vector<std::vector<Literal>> inputs;
  if (!c.npz.empty()) {
    StatusOr<LoadedNpz> npz = LoadedNpz::Read(c.npz);
    ASSERT_TRUE(npz.ok()) << npz.status().ToString();
    std::vector<Literal> args;
    for (const HloInstruction* p : before->entry_computation()->parameter_instructions()) {
      StatusOr<Literal> l = npz->ForParameter("in" + std::to_string(p->parameter_number()),
                                              p->shape(), {});
      ASSERT_TRUE(l.ok()) << l.status().ToString();
      args.push_back(std::move(l).value());
    }
    inputs.push_back(std::move(args));
  } else {
    inputs.push_back(testing::RandomArguments(*before, 42));
  }
  inputs.push_back(testing::SpecialArguments(*before, 1));
  int compared = 0;
  std::string last_skip;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::string d = testing::CompareModules(*before, *after, inputs[k],
                                            testing::Match::kExactIgnoreZeroSign);
    if (d.rfind("skip: ", 0) == 0) {
      if (d.find("unsupported") != std::string::npos) GTEST_SKIP() << d;
      last_skip = d;
      continue;  // e.g. a loop that does not end on special inputs
    }
    EXPECT_EQ(d, "") << (k + 1 == inputs.size() ? "special" : "given/random") << " inputs\n"
                     << after->ToString();
    ++compared;
  }
  EXPECT_GT(compared, 0) << "no input could be compared (" << last_skip << ")";
}

TEST_P(SimplificationConformanceTest, SameValuesVerifiedIdempotent) {
  CheckCase(GetParam(), /*canonicalize_dots=*/false);
}

TEST_P(SimplificationConformanceTest, WithCanonicalDots) {
  CheckCase(GetParam(), /*canonicalize_dots=*/true);
}

std::vector<Case> Cases() {
  static const std::vector<Case> cases = FindCases();
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shared, SimplificationConformanceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SimplificationConformanceTest);

TEST(SimplificationConformance, SharedDataPresent) {
  if (SharedDir().empty()) GTEST_SKIP() << "KILN_SHARED_DIR not set: no shared modules to check";
  EXPECT_GT(Cases().size(), 10u);
}

// Every full-size bench module (no evaluation: too big for the reference evaluator): the
// pipeline succeeds, verifies, is idempotent; the counts are printed for the record.
TEST(SimplificationConformance, FullSizeBenchModules) {
  const std::string shared = SharedDir();
  if (shared.empty()) GTEST_SKIP() << "KILN_SHARED_DIR not set";
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(fs::path(shared) / "bench" / "suite", ec))
    if (fs::exists(e.path() / "module.hlo")) paths.push_back(e.path() / "module.hlo");
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    std::unique_ptr<HloModule> m = ParseFile(p.string());
    ASSERT_NE(m, nullptr);
    const int64_t before = CountInstructions(*m);
    Simplify(*m);
    Status v = VerifyModule(*m);
    EXPECT_TRUE(v.ok()) << p << ": " << v.ToString();
    EXPECT_FALSE(Simplify(*m)) << p << ": a second run changed the module";
    std::cout << "[ counts   ] " << p.parent_path().filename().string() << ": " << before
              << " -> " << CountInstructions(*m) << " instructions\n";
  }
}

}  // namespace
}  // namespace kiln
