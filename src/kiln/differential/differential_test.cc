// The differential suite: every case kiln knows, run on every available compiled backend and
// compared with the reference evaluator on the same inputs -- all through the public API
// (api/client.h): the oracle is the "interpreter" device, the backends under test the others.
//
//   Backends   every backend the Client has except the interpreter (cpu; cuda and rocm where
//              they are built and see a device).
//   Cases      TestData/<case>   $KILN_SOURCE_DIR/tests/data/<case>/ and tests/data/hlo/<case>/
//                                (module.hlo, inputs in0.. of
//                                case.npz), the linear-algebra custom-call cases (linalg_*_cpu_*,
//                                linalg_*_cuda_*) included: backends run them on the host
//              BenchSmall/<case> $KILN_SHARED_DIR/bench/suite/*_small/ (module.hlo + case.npz)
//              BenchSmallOpt/<case>  the same cases' module.opt.hlo (or xla-optimized.hlo: XLA's GPU post-optimization
//                                dump: fusions, bitcasts, layouts) with the same inputs -- those
//                                without custom calls (cuDNN calls run on no kiln backend)
//              XlaFuzz/<module>  $KILN_SHARED_DIR/corpus/xla-fuzz/*.hlo on seeded random inputs
//                                (MakeRandomArguments, seed 42)
//              Collectives/<case> tests/data/collectives/coll_*_n<N>: shard_map programs on meshes
//                                of N = 1, 2, 4, 8 devices, lowered to their per-device program
//                                (passes/shard_map_lowering.h) and run over N participants: the
//                                global inputs of case.npz split by the parameters' shardings, the
//                                backend's participants against the interpreter's, and the
//                                interpreter's outputs joined by the root's sharding against XLA's
//                                (case.npz out*). Backends that run one participant (cuda) get the
//                                N = 1 cases.
// Tolerances: BackendTolerance (src/kiln/eval/tolerance.h) -- exact for integers and pred, and
// for float outputs that no arithmetic produced (converts, bitcast-converts, moved inputs:
// Note [Exact outputs] in eval/output_traits.h); kTf32Tolerance for the f32 outputs of a backend
// that runs f32 products in TF32, where they depend on an f32 dot or convolution.
// Autotuning: KILN_DIFFERENTIAL_AUTOTUNE=on|exhaustive compiles every case with the autotuner
// (CompileOptions::autotune; the cuda backend tunes, the others ignore it),
// with a cache in a fresh temporary directory per process (removed at exit), so every distinct
// instruction is measured once per process and nothing is read from an earlier run.
// KILN_DIFFERENTIAL_AUTOTUNE_BACKENDS=NAME[,NAME...] restricts tuning to those backends (the
// allowlist, e.g. "fission"); unset or empty: every backend of the factory. Unset (or "off"):
// no tuning, the defaults.
// KILN_DIFFERENTIAL_REQUIRE=NAME[,NAME...] names backends that must be present: each case gets a
// test for them anyway, which fails naming why the backend is absent (the gpu-labelled entries
// require cuda, so on a machine without a GPU they fail instead of running zero tests).
// One test per (case, backend): a failure names both. Nothing is skipped: a case a backend
// cannot run fails with the backend's error; only an absent data folder shows as a skip.
// Host fallbacks: a case whose backend runs an instruction on the host evaluator fails unless
// fallback_allowlist.txt names it (Note [Fallback allowlist]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fnmatch.h>
#include <fstream>
#include <sstream>
#include <stdlib.h>  // mkdtemp
#include <string>
#include <vector>

#include "kiln/api/client.h"
#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/npy_literal.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/sharding_tiles.h"
#include "kiln/passes/shard_map_lowering.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The client, created once (never destroyed: executables of the last test may still hold
// device memory at exit, and the driver may be shut down by then).
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

std::vector<std::string> BackendsPresent() {
  std::vector<std::string> out;
  for (const PlatformInfo& p : TheClient().Platforms())
    if (p.built && p.name != "interpreter" && !p.devices.empty()) out.push_back(p.name);
  return out;
}

// KILN_DIFFERENTIAL_REQUIRE=NAME[,NAME...]: backends that must be present. The gpu-labelled
// entries (CMakeLists.txt) set it to cuda and filter on *_cuda: without it, a machine with no
// usable GPU would select zero tests and pass.
std::vector<std::string> RequiredBackends() {
  std::vector<std::string> out;
  if (const char* r = std::getenv("KILN_DIFFERENTIAL_REQUIRE"))
    for (std::string_view name : StrSplit(r, ','))
      if (!name.empty()) out.emplace_back(name);
  return out;
}

// The backends present, then the required ones that are not (each of their tests fails).
std::vector<std::string> BackendsUnderTest() {
  std::vector<std::string> out = BackendsPresent();
  for (const std::string& name : RequiredBackends())
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

// Why a backend is not present: the platform's status, or that kiln does not know it.
std::string WhyAbsent(const std::string& backend) {
  for (const PlatformInfo& p : TheClient().Platforms()) {
    if (p.name != backend) continue;
    if (!p.built) return "this build lacks it";
    if (!p.status.ok()) return std::string(p.status.message());
    return "no devices";
  }
  return "no such backend";
}

// The autotuning settings KILN_DIFFERENTIAL_AUTOTUNE* ask for (level off: no tuning). The cache
// directory is created on first use and removed when the process exits.
const autotune::AutotuneSettings& DifferentialAutotuneSettings() {
  struct TunedFlags {
    autotune::AutotuneSettings flags;
    bool on = false;
    ~TunedFlags() {
      std::error_code ec;
      if (!flags.cache_dir.empty()) fs::remove_all(flags.cache_dir, ec);
    }
  };
  static TunedFlags* const tuned = [] {
    static TunedFlags t;
    t.flags.level = "off";
    const char* level = std::getenv("KILN_DIFFERENTIAL_AUTOTUNE");
    if (level == nullptr || *level == '\0' || std::string(level) == "off") return &t;
    t.flags.level = level;  // MakeAutotuneOptions rejects a bad level: every case then fails, naming it
    std::string dir = (fs::temp_directory_path() / "kiln-differential-autotune-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      ADD_FAILURE() << "KILN_DIFFERENTIAL_AUTOTUNE: cannot create a temporary cache directory";
      return &t;
    }
    t.flags.cache_dir = dir;
    t.flags.cache_mode = "read-write";
    if (const char* b = std::getenv("KILN_DIFFERENTIAL_AUTOTUNE_BACKENDS"))
      for (std::string_view name : StrSplit(b, ','))
        if (!name.empty()) t.flags.backends.emplace_back(name);
    t.on = true;
    return &t;
  }();
  return tuned->flags;
}

enum class Inputs { kNpz, kRandom };

struct Case {
  std::string name;  // [A-Za-z0-9_]
  std::string suite;  // TestData, BenchSmall, BenchSmallOpt, XlaFuzz, Collectives
  fs::path module;   // the .hlo file
  fs::path npz;      // inputs in0.. (kNpz)
  Inputs inputs = Inputs::kNpz;
};

struct Param {
  Case c;
  std::string backend;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.backend << " " << p.c.module.string(); }

std::string TestName(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Note [Fallback allowlist]
//   A backend that runs an instruction on the host evaluator instead of a native kernel (the
//   cpu backend's evaluator kernels, the cuda backend's host thunks: CompileReport::
//   host_fallbacks) compares the evaluator with itself there, so such a case fails unless
//   src/kiln/differential/fallback_allowlist.txt names it: lines "BACKEND SUITE/CASE REASON",
//   CASE a shell pattern (fnmatch: `linalg_eig*`), REASON a few words on why it is allowed.
//   An entry without a pattern character whose case no longer falls back fails the case too,
//   so the list only shrinks.
struct AllowEntry {
  std::string backend, pattern, reason;
  bool exact = false;
};

const std::vector<AllowEntry>& FallbackAllowlist() {
  static const std::vector<AllowEntry>* list = [] {
    auto* v = new std::vector<AllowEntry>;
    const char* src = std::getenv("KILN_SOURCE_DIR");
    if (!src) return v;
    std::ifstream in(fs::path(src) / "src" / "kiln" / "differential" / "fallback_allowlist.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      AllowEntry e;
      if (!(ls >> e.backend) || e.backend[0] == '#' || !(ls >> e.pattern)) continue;
      std::getline(ls, e.reason);
      e.exact = e.pattern.find_first_of("*?[") == std::string::npos;
      v->push_back(std::move(e));
    }
    return v;
  }();
  return *list;
}

// The allowlist entry for (backend, suite/case), or null.
const AllowEntry* AllowedFallback(const std::string& backend, const std::string& suite, const std::string& name) {
  const std::string key = suite + "/" + name;
  for (const AllowEntry& e : FallbackAllowlist())
    if (e.backend == backend && fnmatch(e.pattern.c_str(), key.c_str(), 0) == 0) return &e;
  return nullptr;
}

// Fails the case when the backend fell back to the evaluator outside the allowlist, or when
// an exact entry for it is no longer needed.
void CheckFallbacks(const std::string& backend, const Case& c,
                    const std::vector<std::pair<std::string, int64_t>>& fallbacks) {
  const AllowEntry* allowed = AllowedFallback(backend, c.suite, c.name);
  if (!fallbacks.empty() && allowed == nullptr)
    ADD_FAILURE() << backend << " " << HostFallbackLine(fallbacks)
                  << "  (not on src/kiln/differential/fallback_allowlist.txt, Note [Fallback allowlist]): "
                  << c.suite << "/" << c.name;
  if (fallbacks.empty() && allowed != nullptr && allowed->exact)
    ADD_FAILURE() << backend << " runs " << c.suite << "/" << c.name
                  << " without a fallback now: remove its entry from src/kiln/differential/fallback_allowlist.txt";
}

std::vector<Case> FindTestData() {
  std::vector<Case> v;
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) return v;
  fs::path root = fs::path(src) / "tests" / "data";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return v;
  // The JAX-made cases, and the hand-written HLO ones under hlo/ (tools/gen_hlo_cases.py).
  for (const fs::path& dir : {root, root / "hlo"}) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_directory()) continue;
      if (fs::exists(e.path() / "module.hlo") && fs::exists(e.path() / "case.npz"))
        v.push_back({TestName(e.path().filename().string()), "TestData", e.path() / "module.hlo", e.path() / "case.npz"});
    }
  }
  return v;
}

std::vector<Case> FindBenchSmall() {
  std::vector<Case> v;
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) return v;
  fs::path suite = fs::path(shared) / "bench" / "suite";
  std::error_code ec;
  if (!fs::is_directory(suite, ec)) return v;
  for (const auto& e : fs::directory_iterator(suite, ec))
    if (e.path().filename().string().ends_with("_small") && fs::exists(e.path() / "module.hlo") &&
        fs::exists(e.path() / "case.npz"))
      v.push_back({TestName(e.path().filename().string()), "BenchSmall", e.path() / "module.hlo", e.path() / "case.npz"});
  return v;
}

std::vector<Case> FindBenchSmallOptimized() {
  std::vector<Case> v;
  for (Case c : FindBenchSmall()) {
    c.suite = "BenchSmallOpt";
    // module.opt.hlo; for the loop cases XLA's optimized module is xla-optimized.hlo (the
    // shared suite is read-only: it is read under that name).
    const fs::path dir = c.module.parent_path();
    c.module = fs::exists(dir / "module.opt.hlo") ? dir / "module.opt.hlo" : dir / "xla-optimized.hlo";
    std::ifstream in(c.module);
    std::stringstream text;
    text << in.rdbuf();
    if (in && text.str().find("custom-call(") == std::string::npos) v.push_back(c);
  }
  return v;
}

std::vector<Case> FindFuzz() {
  std::vector<Case> v;
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) return v;
  fs::path dir = fs::path(shared) / "corpus" / "xla-fuzz";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return v;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".hlo") v.push_back({TestName(e.path().stem().string()), "XlaFuzz", e.path(), {}, Inputs::kRandom});
  return v;
}

// Cases x backends, sorted by case name; a placeholder that skips when there is no data.
std::vector<Param> Params(std::vector<Case> cases, const std::string& missing) {
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  std::vector<Param> out;
  std::vector<std::string> backends = BackendsUnderTest();
  if (cases.empty()) cases.push_back({"no_cases", "", missing, {}, Inputs::kNpz});
  if (backends.empty()) backends.push_back("none");
  for (const Case& c : cases)
    for (const std::string& b : backends) out.push_back({c, b});
  return out;
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return info.param.c.name + "_" + info.param.backend;
}

// Compiles the case's module for `device` through the public API and runs it on `args`.
StatusOr<Literal> CompileAndRun(const HloModule& module, const std::string& device, const CompileOptions& options,
                                std::span<const Literal> args, bool* tf32,
                                std::vector<std::pair<std::string, int64_t>>* fallbacks = nullptr) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, TheClient().Compile(module, device, options));
  if (tf32) *tf32 = exe->RunsF32ProductsInTf32();
  if (fallbacks) *fallbacks = exe->compile_report().host_fallbacks;
  ExecuteOptions eo;
  eo.poison = true;  // an element no kernel writes comes back as NaN
  return exe->Run(args, eo);
}

void RunDifferential(const Param& p) {
  ASSERT_NE(p.backend, "none") << "no compiled backend registered and present";
  static const std::vector<std::string> present = BackendsPresent();
  ASSERT_NE(std::find(present.begin(), present.end(), p.backend), present.end())
      << "backend " << p.backend << " is required (KILN_DIFFERENTIAL_REQUIRE) but not present: "
      << WhyAbsent(p.backend);
  if (p.c.name == "no_cases") GTEST_SKIP() << "no data: " << p.c.module.string();
  ParseModuleOptions po;
  po.verify = false;  // what a backend cannot take fails in its Compile, naming the backend
  auto module = ParseModuleFile(p.c.module.string(), po);
  ASSERT_TRUE(module.ok()) << module.status().message();
  const HloComputation* entry = (*module)->entry_computation();
  ASSERT_NE(entry, nullptr);
  std::vector<Literal> args;
  if (p.c.inputs == Inputs::kNpz) {
    auto npz = LoadedNpz::Read(p.c.npz.string());
    ASSERT_TRUE(npz.ok()) << npz.status().message();
    for (int64_t i = 0; i < entry->num_parameters(); ++i) {
      auto arg = npz->ForParameter(StrCat("in", i), entry->parameter_instruction(i)->shape(), {});
      ASSERT_TRUE(arg.ok()) << arg.status().message();
      args.push_back(std::move(*arg));
    }
  } else {
    std::vector<Shape> shapes;
    for (const HloInstruction* prm : entry->parameter_instructions()) shapes.push_back(prm->shape());
    args = MakeRandomArguments(shapes, /*seed=*/42);
  }
  CompileOptions reference;
  reference.verify = false;
  reference.flags["interpreter_max_loop_iterations"] = "1048576";
  auto expected = CompileAndRun(**module, "interpreter", reference, args, nullptr);
  ASSERT_TRUE(expected.ok()) << "reference: " << expected.status().message();
  CompileOptions options;
  options.verify = false;
  options.threads = 2;
  options.autotune = DifferentialAutotuneSettings();
  bool tf32 = false;
  std::vector<std::pair<std::string, int64_t>> fallbacks;
  auto actual = CompileAndRun(**module, p.backend, options, args, &tf32, &fallbacks);
  ASSERT_TRUE(actual.ok()) << p.backend << ": " << actual.status().message();
  CheckFallbacks(p.backend, p.c, fallbacks);
  CompareOptions co;
  co.backend_vs_evaluator = true;
  // Backends that run f32 products in TF32 (cuda, as XLA) are held to the TF32 tolerance there.
  co.reference_tf32 = tf32;
  // Converts, bitcast-converts and moved inputs bit for bit; TF32 only where an f32 dot is.
  co.outputs = AnalyzeOutputs(**module);
  Comparison cmp = CompareLiterals(*actual, *expected, co);
  EXPECT_TRUE(cmp.ok()) << p.backend << " vs evaluator on " << p.c.module.string() << ":\n" << cmp.ToString();
}

std::vector<Case> FindCollectives() {
  std::vector<Case> v;
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) return v;
  fs::path dir = fs::path(src) / "tests" / "data" / "collectives";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return v;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && fs::exists(e.path() / "module.hlo") && fs::exists(e.path() / "case.npz"))
      v.push_back({TestName(e.path().filename().string()), "Collectives", e.path() / "module.hlo", e.path() / "case.npz"});
  return v;
}

// The collective cases x backends; the backends that run one participant (cuda, rocm) get the
// one-device cases only (NCCL runs are the next step).
std::vector<Param> CollectiveParams() {
  std::vector<Param> all = Params(FindCollectives(), "KILN_SOURCE_DIR/tests/data/collectives");
  std::vector<Param> out;
  for (Param& p : all)
    if (p.backend == "cpu" || p.c.name == "no_cases" || p.c.name.ends_with("_n1")) out.push_back(std::move(p));
  return out;
}

// The participant ids in sharding tile assignments: partitions (shard_map programs run over
// num_partitions devices).
void RunCollectiveCase(const Param& p) {
  ASSERT_NE(p.backend, "none") << "no compiled backend registered and present";
  static const std::vector<std::string> present = BackendsPresent();
  ASSERT_NE(std::find(present.begin(), present.end(), p.backend), present.end())
      << "backend " << p.backend << " is required (KILN_DIFFERENTIAL_REQUIRE) but not present: "
      << WhyAbsent(p.backend);
  if (p.c.name == "no_cases") GTEST_SKIP() << "no data: " << p.c.module.string();
  auto module = ParseModuleFile(p.c.module.string());
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto lowered = LowerShardMap(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const HloComputation* entry = (*module)->entry_computation();
  const int64_t n = (*module)->header().num_partitions * (*module)->header().replica_count;
  auto npz = LoadedNpz::Read(p.c.npz.string());
  ASSERT_TRUE(npz.ok()) << npz.status().message();
  // Participant i's inputs: its tiles of the global in<k> (whole where the sharding does not tile).
  std::vector<std::vector<Literal>> args(n);
  for (int64_t k = 0; k < entry->num_parameters(); ++k) {
    const HloInstruction* prm = entry->parameter_instruction(k);
    const std::vector<int64_t>& local = prm->shape().dimensions();
    std::optional<TilePlacement> place0;
    if (prm->sharding()) {
      auto pl = PlaceTile(*prm->sharding(), local, 0);
      ASSERT_TRUE(pl.ok()) << pl.status().message();
      place0 = *pl;
    }
    Shape global = prm->shape();
    if (place0) global = Shape::Array(prm->shape().element_type(), place0->global_dims);
    auto whole = npz->ForParameter(StrCat("in", k), global, {});
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    for (int64_t i = 0; i < n; ++i) {
      if (!place0) {
        args[i].push_back(*whole);
        continue;
      }
      auto pl = PlaceTile(*prm->sharding(), local, i);
      ASSERT_TRUE(pl.ok() && pl->has_value()) << "participant " << i;
      args[i].push_back(SplitTile(*whole, **pl, local));
    }
  }
  bool tf32 = false;  // f32 products in TF32 (the cuda backend's default): judged as such
  std::vector<std::pair<std::string, int64_t>> fallbacks;
  auto run = [&](const std::string& device, const CompileOptions& o) -> StatusOr<std::vector<Literal>> {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, TheClient().Compile(**module, device, o));
    tf32 = exe->RunsF32ProductsInTf32();
    fallbacks = exe->compile_report().host_fallbacks;
    if (exe->num_participants() != n)
      return Internal(device, " compiled ", exe->num_participants(), " participants, the module has ", n);
    ExecuteOptions eo;
    eo.poison = true;
    eo.collective_timeout_ms = 120000;
    return exe->RunParticipants(args, eo);
  };
  CompileOptions reference;
  reference.verify = false;
  auto expected = run("interpreter", reference);
  ASSERT_TRUE(expected.ok()) << "reference: " << expected.status().message();
  // The oracle against XLA: the interpreter's outputs joined by the root's sharding.
  {
    const HloInstruction* root = entry->root_instruction();
    std::vector<const Literal*> leaves0 = ArrayLeaves((*expected)[0]);
    std::vector<Literal> joined;
    for (size_t j = 0; j < leaves0.size(); ++j) {
      const HloSharding* s = nullptr;
      if (root->sharding())
        s = root->sharding()->kind == HloSharding::Kind::kTuple ? &root->sharding()->tuple_elements[j]
                                                                : &*root->sharding();
      std::optional<TilePlacement> first;
      if (s) {
        auto pl = PlaceTile(*s, leaves0[j]->shape().dimensions(), 0);
        ASSERT_TRUE(pl.ok()) << pl.status().message();
        first = *pl;
      }
      if (!first) {
        joined.push_back(*leaves0[j]);
        continue;
      }
      Literal global(Shape::Array(leaves0[j]->shape().element_type(), first->global_dims));
      for (int64_t i = 0; i < n; ++i) {
        auto pl = PlaceTile(*s, leaves0[j]->shape().dimensions(), i);
        ASSERT_TRUE(pl.ok() && pl->has_value());
        JoinTile(*ArrayLeaves((*expected)[i])[j], **pl, global);
      }
      joined.push_back(std::move(global));
    }
    std::vector<const Literal*> a, e;
    std::vector<Literal> xla;
    for (size_t j = 0; j < joined.size(); ++j) {
      auto l = npz->AsLiteral(StrCat("out", j));
      ASSERT_TRUE(l.ok()) << l.status().message();
      xla.push_back(std::move(*l));
    }
    for (const Literal& l : joined) a.push_back(&l);
    for (const Literal& l : xla) e.push_back(&l);
    Comparison vs_xla = CompareLeaves(a, e, CompareOptions{});
    EXPECT_TRUE(vs_xla.ok()) << "interpreter vs XLA on " << p.c.module.string() << ":\n" << vs_xla.ToString();
  }
  CompileOptions options;
  options.verify = false;
  options.threads = 2;
  options.autotune = DifferentialAutotuneSettings();
  auto actual = run(p.backend, options);
  ASSERT_TRUE(actual.ok()) << p.backend << ": " << actual.status().message();
  CheckFallbacks(p.backend, p.c, fallbacks);
  CompareOptions co;
  co.backend_vs_evaluator = true;
  co.reference_tf32 = tf32;
  co.outputs = AnalyzeOutputs(**module);
  for (int64_t i = 0; i < n; ++i) {
    Comparison cmp = CompareLiterals((*actual)[i], (*expected)[i], co);
    EXPECT_TRUE(cmp.ok()) << p.backend << " vs evaluator, participant " << i << " of " << n << " on "
                          << p.c.module.string() << ":\n" << cmp.ToString();
  }
}

class Collectives : public ::testing::TestWithParam<Param> {};
TEST_P(Collectives, MatchesEvaluator) { RunCollectiveCase(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Differential, Collectives, ::testing::ValuesIn(CollectiveParams()), ParamName);

class TestData : public ::testing::TestWithParam<Param> {};
TEST_P(TestData, MatchesEvaluator) { RunDifferential(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Differential, TestData,
                         ::testing::ValuesIn(Params(FindTestData(), "KILN_SOURCE_DIR/tests/data")), ParamName);

class BenchSmall : public ::testing::TestWithParam<Param> {};
TEST_P(BenchSmall, MatchesEvaluator) { RunDifferential(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Differential, BenchSmall,
                         ::testing::ValuesIn(Params(FindBenchSmall(), "KILN_SHARED_DIR/bench/suite")), ParamName);

class BenchSmallOpt : public ::testing::TestWithParam<Param> {};
TEST_P(BenchSmallOpt, MatchesEvaluator) { RunDifferential(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Differential, BenchSmallOpt,
                         ::testing::ValuesIn(Params(FindBenchSmallOptimized(), "KILN_SHARED_DIR/bench/suite")),
                         ParamName);

class XlaFuzz : public ::testing::TestWithParam<Param> {};
TEST_P(XlaFuzz, MatchesEvaluator) { RunDifferential(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Differential, XlaFuzz,
                         ::testing::ValuesIn(Params(FindFuzz(), "KILN_SHARED_DIR/corpus/xla-fuzz")), ParamName);

}  // namespace
}  // namespace kiln
