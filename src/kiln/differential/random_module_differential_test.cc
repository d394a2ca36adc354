// Differential fuzzing with fixed seeds: random valid modules (hlo/random_module.h) with random
// inputs, run on the interpreter (the reference evaluator) and on every other backend present
// through the public API, as the differential suite does; every result must agree within
// BackendTolerance (exact where Note [Exact outputs] says so), and every module must compile and
// run on every backend. A failure prints the seed and the module's text (save it as a .hlo file
// and `kiln compare FILE --device cpu --reference interpreter --seed SEED` reproduces it).
//
//   KILN_RANDOM_MODULE_SEEDS=N        how many seeds (default 300)
//   KILN_RANDOM_MODULE_FIRST_SEED=S   the first seed (default 0)
//   KILN_RANDOM_MODULE_INSTRUCTIONS=N at most N instructions per entry (default: the generator's)
//   KILN_RANDOM_MODULE_FLAGS=K=V,...  backend flags for every seed (CompileOptions::flags)
// Without KILN_RANDOM_MODULE_FLAGS, every fourth seed (seed % 4 == 3) runs the cpu backend with
// row tiling forced on small tiles (cpu_row_tiling=force, cpu_row_tile_bytes=512), the others
// with the defaults.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/api/client.h"
#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/random_module.h"

namespace kiln {
namespace {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

const Client& TheClient() {
  static const Client* c = [] {
    auto client = Client::Create();
    if (!client.ok()) {
      ADD_FAILURE() << "Client::Create: " << client.status().message();
      std::abort();
    }
    return client->release();
  }();
  return *c;
}

RandomModuleOptions Options() {
  RandomModuleOptions o;
  o.max_instructions = static_cast<int>(EnvInt("KILN_RANDOM_MODULE_INSTRUCTIONS", o.max_instructions));
  return o;
}

// What the seeds compared (so that a run comparing nothing fails).
struct Counts {
  int64_t runs = 0;      // (seed, backend) pairs compared
  int64_t elements = 0;  // output elements compared
  // Instructions a backend ran on the host evaluator (CompileReport::host_fallbacks): there
  // the comparison checks the evaluator against itself.
  std::map<std::string, int64_t> fallbacks;
};

StatusOr<Literal> CompileAndRun(const HloModule& module, const std::string& device, std::span<const Literal> args,
                                uint64_t seed, Counts* counts = nullptr) {
  CompileOptions options;
  options.threads = 2;
  if (const char* f = std::getenv("KILN_RANDOM_MODULE_FLAGS"); f && *f) {
    for (std::string_view kv : StrSplit(f, ',')) {
      const size_t eq = kv.find('=');
      if (eq != std::string_view::npos) options.flags[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  } else if (seed % 4 == 3) {
    options.flags["cpu_row_tiling"] = "force";
    options.flags["cpu_row_tile_bytes"] = "512";
  }
  if (device == "interpreter") options.flags["interpreter_max_loop_iterations"] = "1024";
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, TheClient().Compile(module, device, options));
  if (counts)
    for (const auto& [what, n] : exe->compile_report().host_fallbacks) counts->fallbacks[device + " " + what] += n;
  ExecuteOptions eo;
  eo.poison = true;  // an element no kernel writes comes back as NaN
  return exe->Run(args, eo);
}

// Runs seed `seed` on every backend; "" when all agree, else what went wrong.
std::string CheckSeed(uint64_t seed, Counts& counts) {
  const RandomModule m = GenerateRandomModule(seed, Options());
  auto module = ParseModule(m.text, StrCat("random_", seed, ".hlo"));
  if (!module.ok()) return StrCat("the generated module does not verify: ", module.status().message());
  std::vector<Literal> args = MakeRandomArguments(m.parameters, seed);
  auto expected = CompileAndRun(**module, "interpreter", args, seed);
  if (!expected.ok()) return StrCat("interpreter: ", expected.status().message());
  std::string problems;
  for (const PlatformInfo& p : TheClient().Platforms()) {
    if (!p.built || p.name == "interpreter" || p.devices.empty()) continue;
    auto actual = CompileAndRun(**module, p.name, args, seed, &counts);
    if (!actual.ok()) {
      problems += StrCat(p.name, ": ", actual.status().message(), "\n");
      continue;
    }
    CompareOptions co;
    co.backend_vs_evaluator = true;
    co.outputs = AnalyzeOutputs(**module);
    Comparison cmp = CompareLiterals(*actual, *expected, co);
    ++counts.runs;
    for (const ArrayComparison& a : cmp.arrays) counts.elements += a.elements;
    if (!cmp.ok()) problems += StrCat(p.name, " vs interpreter:\n", cmp.ToString(), "\n");
  }
  return problems;
}

TEST(RandomModuleDifferential, BackendsMatchEvaluator) {
  const int64_t first = EnvInt("KILN_RANDOM_MODULE_FIRST_SEED", 0);
  const int64_t seeds = EnvInt("KILN_RANDOM_MODULE_SEEDS", 300);
  int failures = 0;
  Counts counts;
  for (int64_t seed = first; seed < first + seeds; ++seed) {
    const std::string problems = CheckSeed(static_cast<uint64_t>(seed), counts);
    if (problems.empty()) continue;
    ++failures;
    if (failures <= 10)
      ADD_FAILURE() << "seed " << seed << " (inputs: MakeRandomArguments seed " << seed << "):\n"
                    << problems << "--- module ---\n" << GenerateRandomModule(seed, Options()).text;
  }
  EXPECT_EQ(failures, 0) << failures << " of " << seeds << " seeds from " << first << " failed";
  // The cpu backend is always built: every seed is compared on it at least.
  EXPECT_GE(counts.runs, seeds - failures);
  EXPECT_GT(counts.elements, seeds);
  std::printf("%lld seeds, %lld backend runs compared, %lld output elements\n", static_cast<long long>(seeds),
              static_cast<long long>(counts.runs), static_cast<long long>(counts.elements));
  for (const auto& [what, n] : counts.fallbacks)
    std::printf("  host fallback: %s x%lld\n", what.c_str(), static_cast<long long>(n));
}

}  // namespace
}  // namespace kiln
