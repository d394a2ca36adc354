// The conformance harness: the reference evaluator against XLA's own results.
//
//   BenchSmall/<case>   $KILN_SHARED_DIR/bench/suite/*_small/{module.hlo,case.npz}: inputs
//                       in0.., XLA's outputs out0.. computed on an NVIDIA GPU, so f32 dots ran
//                       in TF32: f32 outputs of f32 dots/convolutions are compared with
//                       kTf32Tolerance, others with the default tolerance of their type
//                       (tolerance.h).
//   TestData/<case>     $KILN_SOURCE_DIR/tests/data/**/{module.hlo,case.npz}: small JAX
//                       programs with XLA CPU's outputs (tools/gen_cases.py); default
//                       tolerances.
// In both, outputs that no arithmetic produced (converts, bitcast-converts and data movement of
// inputs: Note [Exact outputs] in output_traits.h) must match bit for bit.
//   XlaFuzz/<module>    $KILN_SHARED_DIR/corpus/xla-fuzz/*.hlo: each module evaluates without
//                       error on seeded random inputs (there are no stored outputs), except
//                       that the modules XLA excludes may fail (XlaExcludedFuzzModules).
//
// One test per case, so a failure names it; each prints its worst error. Cases listed in the
// tables below are skipped with their reason -- and a listed case that starts passing fails,
// so the tables shrink as the evaluator grows.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/npy_literal.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// Cases expected to fail today, with the reason. Keep each reason specific.
const std::map<std::string, std::string>& KnownFailures() {
  static const auto* m = new std::map<std::string, std::string>{
      // Found when converts became exact (issue 16): the evaluator, the cpu backend and ml_dtypes
      // round f64 -> bf16 once; XLA's CPU goes through f32 (double rounding).
      {"ew_convert_round_f64",
       "f64 -> bf16 of 1 + 2^-8 + 2^-40: XLA's CPU rounds through f32 (double rounding) to 1, the "
       "evaluator once to 1.0078125 (as ml_dtypes); 2 of 40 elements of out1"},
      // XLA's CPU runs with denormals flushed (FTZ/DAZ); the evaluator is IEEE, as are the
      // backends it checks (the differential suite runs this case exactly to catch a flush).
      {"ew_denormal_f32",
       "XLA's CPU flushes f32 denormals to zero (its outputs here are zeros); the evaluator keeps "
       "them, and the case scales each denormal result by 2^126 so that the difference shows"},
      // XLA's CPU applies reduce-precision to the f16 bits themselves (an f16 subnormal keeps its
      // mantissa's top bits); the evaluator widens to f32 first, where exponent_bits=5 flushes it.
      {"ew_reduce_precision_f16",
       "reduce-precision(exponent_bits=5, mantissa_bits=3) of the f16 subnormal 1.0014e-05: XLA's "
       "CPU works on the f16 bits (7.63e-06), the evaluator on f32 (flushed to 0); 1 of 64 elements"},
  };
  return *m;
}

// Fuzz modules XLA's own BUILD file (corpus/xla-fuzz/BUILD.txt) excludes from its tests. They
// run here too -- all of them evaluate today -- but an error in one of them is reported as a
// skip with XLA's reason rather than a failure.
const std::map<std::string, std::string>& XlaExcludedFuzzModules() {
  static const auto* m = new std::map<std::string, std::string>{
      {"rand_000001", "XLA: 'fails on GPU'"},
      {"rand_000004", "XLA: 'times out during coverage' (a reduce-window over a 5-d window)"},
      {"rand_000060", "XLA: 'fails on all platforms'"},
      {"rand_000067", "XLA: 'fails on all platforms'"},
      {"rand_000072", "XLA: 'fails on all platforms'"},
  };
  return *m;
}

struct Case {
  std::string name;  // test name: [A-Za-z0-9_]
  fs::path dir;      // holds module.hlo and case.npz (or the .hlo file itself for fuzz)
};

// gtest prints a failing case's parameter with this.
void PrintTo(const Case& c, std::ostream* os) { *os << c.dir.string(); }

std::string TestName(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::vector<Case> Sorted(std::vector<Case> v) {
  std::sort(v.begin(), v.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return v;
}

// A placeholder case that skips, so an absent data folder shows as a skip rather than nothing.
std::vector<Case> OrMissing(std::vector<Case> v, const std::string& why) {
  if (v.empty()) v.push_back({"no_cases", why});
  return v;
}

std::vector<Case> FindBenchCases() {
  const char* shared = std::getenv("KILN_SHARED_DIR");
  fs::path suite = shared ? fs::path(shared) / "bench" / "suite" : fs::path();
  std::vector<Case> v;
  std::error_code ec;
  if (shared && fs::is_directory(suite, ec))
    for (const auto& e : fs::directory_iterator(suite, ec))
      if (EndsWith(e.path().filename().string(), "_small") && fs::exists(e.path() / "case.npz"))
        v.push_back({TestName(e.path().filename().string()), e.path()});
  return OrMissing(Sorted(v), "KILN_SHARED_DIR/bench/suite not found");
}

std::vector<Case> FindTestDataCases() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  fs::path root = src ? fs::path(src) / "tests" / "data" : fs::path();
  std::vector<Case> v;
  std::error_code ec;
  if (src && fs::is_directory(root, ec))
    for (const auto& e : fs::recursive_directory_iterator(root, ec))
      // tests/data/collectives: shard_map programs over several devices, which the evaluator
      // runs as per-device programs (passes/shard_map_lowering.h, outside this room): the
      // differential suite checks them against XLA's outputs.
      if (e.is_directory() && fs::exists(e.path() / "module.hlo") && fs::exists(e.path() / "case.npz") &&
          !StartsWith(fs::relative(e.path(), root).string(), "collectives"))
        v.push_back({TestName(fs::relative(e.path(), root).string()), e.path()});
  return OrMissing(Sorted(v), "KILN_SOURCE_DIR/tests/data holds no cases");
}

std::vector<Case> FindFuzzModules() {
  const char* shared = std::getenv("KILN_SHARED_DIR");
  fs::path dir = shared ? fs::path(shared) / "corpus" / "xla-fuzz" : fs::path();
  std::vector<Case> v;
  std::error_code ec;
  if (shared && fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".hlo") v.push_back({TestName(e.path().stem().string()), e.path()});
  return OrMissing(Sorted(v), "KILN_SHARED_DIR/corpus/xla-fuzz not found");
}

// Skips a case without data; for a known failure, runs `body` and skips with the reason if it
// fails (and fails if it now passes).
template <typename Body>
void RunCase(const Case& c, Body body) {
  if (c.name == "no_cases") GTEST_SKIP() << c.dir.string();
  auto known = KnownFailures().find(c.name);
  if (known == KnownFailures().end()) {
    body();
    return;
  }
  bool failed = false;
  // Run the body with failures captured: a known failure must still fail.
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    body();
  }
  for (int i = 0; i < results.size(); ++i) failed |= results.GetTestPartResult(i).failed();
  if (failed) GTEST_SKIP() << "known failure: " << known->second;
  FAIL() << c.name << " now passes: remove it from KnownFailures() in " << __FILE__;
}

// Evaluates a case folder and compares with its out0, out1, ...
void CheckCase(const Case& c, bool reference_tf32) {
  auto module = ParseHloModuleFile((c.dir / "module.hlo").string());
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto npz = LoadedNpz::Read((c.dir / "case.npz").string());
  ASSERT_TRUE(npz.ok()) << npz.status().message();
  const HloComputation* entry = (*module)->entry_computation();
  ASSERT_NE(entry, nullptr);
  std::vector<Literal> args;
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    auto arg = npz->ForParameter(StrCat("in", i), entry->parameter_instruction(i)->shape(), {});
    ASSERT_TRUE(arg.ok()) << arg.status().message();
    args.push_back(std::move(*arg));
  }
  auto start = std::chrono::steady_clock::now();
  auto result = EvaluateModule(**module, args);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result.ok()) << result.status().message();
  std::vector<const Literal*> actual = ArrayLeaves(*result);
  std::vector<Literal> expected;
  for (size_t i = 0; npz->Has(StrCat("out", i)); ++i) {
    std::string name = StrCat("out", i);
    std::optional<PrimitiveType> raw = npz->RawType(name);
    if (!raw && npz->Find(name)->dtype.kind == 'V' && i < actual.size())
      raw = actual[i]->shape().element_type();
    auto l = NpyToLiteral(*npz->Find(name), raw, StrCat(c.name, ":", name));
    ASSERT_TRUE(l.ok()) << l.status().message();
    expected.push_back(std::move(*l));
  }
  std::vector<const Literal*> expected_ptrs;
  for (const Literal& l : expected) expected_ptrs.push_back(&l);
  CompareOptions options;
  options.reference_tf32 = reference_tf32;
  options.outputs = AnalyzeOutputs(**module);  // converts and bitcasts exact, TF32 where a dot is
  Comparison cmp = CompareLeaves(actual, expected_ptrs, options);
  std::cout << c.name << " (" << RoundTripDouble(std::round(ms * 10) / 10) << " ms):\n" << cmp.ToString();
  EXPECT_TRUE(cmp.ok()) << cmp.ToString();
}

class BenchSmall : public ::testing::TestWithParam<Case> {};
TEST_P(BenchSmall, MatchesXla) {
  RunCase(GetParam(), [&] { CheckCase(GetParam(), /*reference_tf32=*/true); });
}
INSTANTIATE_TEST_SUITE_P(Conformance, BenchSmall, ::testing::ValuesIn(FindBenchCases()),
                         [](const auto& info) { return info.param.name; });

class TestData : public ::testing::TestWithParam<Case> {};
TEST_P(TestData, MatchesXla) {
  RunCase(GetParam(), [&] { CheckCase(GetParam(), /*reference_tf32=*/false); });
}
INSTANTIATE_TEST_SUITE_P(Conformance, TestData, ::testing::ValuesIn(FindTestDataCases()),
                         [](const auto& info) { return info.param.name; });

class XlaFuzz : public ::testing::TestWithParam<Case> {};
TEST_P(XlaFuzz, Evaluates) {
  const Case& c = GetParam();
  RunCase(c, [&] {
    auto module = ParseHloModuleFile(c.dir.string());
    ASSERT_TRUE(module.ok()) << module.status().message();
    const HloComputation* entry = (*module)->entry_computation();
    ASSERT_NE(entry, nullptr);
    std::vector<Shape> shapes;
    for (const HloInstruction* p : entry->parameter_instructions()) shapes.push_back(p->shape());
    std::vector<Literal> args = MakeRandomArguments(shapes, /*seed=*/42);
    EvaluatorOptions eo;
    eo.max_loop_iterations = 1 << 20;
    Evaluator evaluator(eo);
    auto result = evaluator.Run(**module, args);
    if (!result.ok())
      if (auto ex = XlaExcludedFuzzModules().find(c.name); ex != XlaExcludedFuzzModules().end())
        GTEST_SKIP() << ex->second << "; here: " << result.status().message();
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_TRUE(Shape::Compatible(result->shape(), entry->root_instruction()->shape()))
        << result->shape().ToString(false) << " vs " << entry->root_instruction()->shape().ToString(false);
  });
}
INSTANTIATE_TEST_SUITE_P(Conformance, XlaFuzz, ::testing::ValuesIn(FindFuzzModules()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln
