// The autotuner end to end on the host platform with scripted fake backends: selection,
// failure handling, grouping, the cache and its modes, forced/excluded/allowed backends,
// determinism.
#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/device_lock.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <thread>

#include "kiln/autotune/testing/fake_backend.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/hlo/computation.h"

namespace kiln::autotune {
namespace {

using testing::FakeBackend;
using testing::FakeBehavior;
using testing::FakeConfig;
using testing::ScopedTempDir;

// s1 and s2 are identical (one group); m1 differs. The fakes compute a sum for any of them.
constexpr char kModule[] = R"(
HloModule m
ENTRY e {
  a = f32[1000]{0} parameter(0)
  b = f32[1000]{0} parameter(1)
  s1 = f32[1000]{0} add(a, b)
  s2 = f32[1000]{0} add(a, b)
  m1 = f32[1000]{0} multiply(s1, s2)
  ROOT t = (f32[1000]{0}, f32[1000]{0}) tuple(s2, m1)
})";

constexpr char kAddOnly[] = R"(
HloModule m
ENTRY e {
  a = f32[1000]{0} parameter(0)
  b = f32[1000]{0} parameter(1)
  ROOT s1 = f32[1000]{0} add(a, b)
})";

std::vector<FakeConfig> GenConfigs() {
  return {{.id = 0, .behavior = FakeBehavior::kCompileError},
          {.id = 1, .behavior = FakeBehavior::kKernelError},
          {.id = 2, .behavior = FakeBehavior::kRedzoneWrite},
          {.id = 3, .behavior = FakeBehavior::kWrong},
          {.id = 4, .behavior = FakeBehavior::kCorrect, .busy_us = 300},
          {.id = 5, .behavior = FakeBehavior::kCorrect, .busy_us = 40000}};
}

class AutotunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = testing::HostDevice::Create();
    ASSERT_NE(host_.device, nullptr);
    options_.profile.redzone.redzone_bytes = 64 << 10;
    options_.profile.repetitions = 3;
    options_.compile_threads = 2;
    options_.lock.directory = locks_.path();
  }

  // A trusted reference backend (slow but right) and an untrusted one with every failure.
  BackendList Backends(std::vector<FakeConfig> gen = GenConfigs()) {
    BackendList list;
    auto ref = std::make_unique<FakeBackend>(
        "ref", false, host_.device,
        std::vector<FakeConfig>{{.id = 0, .behavior = FakeBehavior::kCorrect, .busy_us = 3000}});
    auto g = std::make_unique<FakeBackend>("gen", true, host_.device, std::move(gen));
    ref_ = ref.get();
    gen_ = g.get();
    list.push_back(std::move(ref));
    list.push_back(std::move(g));
    return list;
  }

  std::unique_ptr<Cache> OpenCache(CacheMode mode = CacheMode::kReadWrite) {
    auto cache = Cache::Create({.directory = cache_dir_.path(), .mode = mode});
    EXPECT_TRUE(cache.ok());
    return std::move(cache).value();
  }

  StatusOr<AutotuneReport> Tune(HloModule& module, Cache* cache, BackendList backends,
                                runtime::Device* device) {
    KILN_ASSIGN_OR_RETURN(auto tuner, Autotuner::Create(std::move(backends),
                                                        host_.device->description(), device,
                                                        cache, options_));
    return tuner->Run(module);
  }
  StatusOr<AutotuneReport> Tune(HloModule& module, Cache* cache) {
    return Tune(module, cache, Backends(), host_.device);
  }

  static std::optional<Config> ChosenFor(const HloModule& module, std::string_view name) {
    auto c = ReadConfigFromBackendConfig(
        *module.entry_computation()->GetInstructionWithName(std::string(name)));
    if (!c.ok()) return std::nullopt;
    return *c;
  }

  testing::HostDevice host_;
  ScopedTempDir cache_dir_, locks_;
  AutotuneOptions options_;
  FakeBackend* ref_ = nullptr;
  FakeBackend* gen_ = nullptr;
};

// Generated kernels have no trusted twin: the default config's outputs are the reference, so a
// wrong candidate is still caught.
TEST_F(AutotunerTest, WithoutTrustedBackendsTheDefaultIsTheReference) {
  auto module = testing::ParseOrDie(kAddOnly);
  BackendList list;
  list.push_back(std::make_unique<FakeBackend>(
      "gen", true, host_.device,
      std::vector<FakeConfig>{{.id = 0, .behavior = FakeBehavior::kWrong},
                              {.id = 1, .behavior = FakeBehavior::kCorrect, .busy_us = 2000},
                              {.id = 2, .behavior = FakeBehavior::kWrong}},
      /*default_index=*/1));
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, nullptr, std::move(list), host_.device));
  ASSERT_EQ(report.groups.size(), 1u);
  const InstructionReport& g = report.groups[0];
  EXPECT_EQ(g.note, "");
  ASSERT_EQ(g.candidates.size(), 3u);
  EXPECT_TRUE(g.candidates[1].is_reference);
  EXPECT_EQ(g.candidates[0].measurement.verdict, Verdict::kWrongResult);
  EXPECT_EQ(g.candidates[2].measurement.verdict, Verdict::kWrongResult);
  ASSERT_TRUE(g.chosen.has_value());
  EXPECT_EQ(*g.chosen, FakeBackend::MakeConfig("gen", 1));
}

TEST_F(AutotunerTest, PicksTheFastestValidAndDropsEveryFailure) {
  auto module = testing::ParseOrDie(kModule);
  auto cache = OpenCache();
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get()));

  EXPECT_EQ(report.instructions, 3);
  ASSERT_EQ(report.groups.size(), 2u);
  const InstructionReport& adds = report.groups[0];
  EXPECT_EQ(adds.names, (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(adds.kind, "add");
  EXPECT_EQ(adds.source, ChoiceSource::kTuned);
  ASSERT_TRUE(adds.chosen.has_value());
  EXPECT_EQ(*adds.chosen, FakeBackend::MakeConfig("gen", 4));
  ASSERT_TRUE(adds.runner_up.has_value());
  EXPECT_EQ(*adds.runner_up, FakeBackend::MakeConfig("ref", 0));
  EXPECT_GT(adds.speedup_over_default(), 2.0);  // 3 ms default vs 0.3 ms
  ASSERT_EQ(adds.candidates.size(), 7u);
  EXPECT_TRUE(adds.candidates[0].is_reference);
  EXPECT_TRUE(adds.candidates[0].is_default);
  const Verdict expected[] = {Verdict::kOk,         Verdict::kCompileFailed, Verdict::kLaunchFailed,
                              Verdict::kRedzoneWritten, Verdict::kWrongResult, Verdict::kOk,
                              Verdict::kTooSlow};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(adds.candidates[i].measurement.verdict, expected[i])
        << i << ": " << adds.candidates[i].measurement.message;
  }
  EXPECT_EQ(report.groups[1].names, std::vector<std::string>{"m1"});

  // Every member of both groups got the choice.
  for (const char* name : {"s1", "s2", "m1"}) {
    EXPECT_EQ(ChosenFor(*module, name), FakeBackend::MakeConfig("gen", 4)) << name;
  }
  // Each distinct instruction compiled each config once.
  EXPECT_EQ(gen_->compile_calls(), 2 * 6);
  EXPECT_EQ(report.verdicts[static_cast<int>(Verdict::kOk)], 4);
  EXPECT_EQ(report.verdicts[static_cast<int>(Verdict::kWrongResult)], 2);
  std::string summary = report.SummaryLine();
  EXPECT_NE(summary.find("3 instructions (2 distinct): 2 tuned"), std::string::npos) << summary;
  EXPECT_NE(summary.find("14 candidates: 4 ok, 2 compile failed, 2 launch failed, 2 redzone "
                         "written, 2 wrong result, 2 too slow"),
            std::string::npos)
      << summary;

  nlohmann::json dump = report.ToJson();
  EXPECT_EQ(dump["groups"][0]["candidates"][4]["verdict"], "wrong result");
  EXPECT_EQ(dump["groups"][0]["chosen"]["params"]["id"], 4);
  EXPECT_EQ(cache->stats().stores, 2u);
}

TEST_F(AutotunerTest, ASecondRunIsAllCacheHitsAndMeasuresNothing) {
  auto cache = OpenCache();
  auto first = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK(Tune(*first, cache.get()));
  auto second = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*second, cache.get()));
  EXPECT_EQ(report.CountSource(ChoiceSource::kCache), 2);
  EXPECT_EQ(gen_->compile_calls(), 0);
  EXPECT_EQ(gen_->launch_calls(), 0);
  EXPECT_EQ(ref_->launch_calls(), 0);
  EXPECT_EQ(ChosenFor(*second, "m1"), FakeBackend::MakeConfig("gen", 4));
  EXPECT_GT(report.groups[0].time_us, 0);  // the cached measurement is reported
}

// Two tuners on one cache: the one that waited for the device lock looks again once it holds
// it, and takes what the other stored meanwhile instead of measuring it again.
TEST_F(AutotunerTest, AfterWaitingForTheLockTheCacheIsAskedAgain) {
  auto cache = OpenCache();
  KILN_ASSERT_OK_AND_ASSIGN(auto held, DeviceLock::Acquire(host_.device->description(), options_.lock));
  BackendList waiting_backends = Backends();
  FakeBackend* waiting_gen = gen_;
  auto waiting_module = testing::ParseOrDie(kModule);
  StatusOr<AutotuneReport> waited = Internal("not run");
  KILN_ASSERT_OK_AND_ASSIGN(auto waiting_tuner, Autotuner::Create(std::move(waiting_backends),
                                                                 host_.device->description(), host_.device,
                                                                 cache.get(), options_));
  std::thread waiter([&] { waited = waiting_tuner->Run(*waiting_module); });
  // The waiter's first lookups (all misses) come within milliseconds; then it waits for the
  // lock. The other tuner (here: one that takes no lock) fills the cache meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  AutotuneOptions saved = options_;
  options_.lock_device = false;
  auto other = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK(Tune(*other, cache.get()));
  options_ = saved;
  held.reset();
  waiter.join();
  KILN_ASSERT_OK(waited.status());
  EXPECT_EQ(waited->CountSource(ChoiceSource::kCache), 2);
  EXPECT_EQ(waiting_gen->compile_calls(), 0);
  EXPECT_EQ(ChosenFor(*waiting_module, "m1"), FakeBackend::MakeConfig("gen", 4));
}

TEST_F(AutotunerTest, RequireCompleteNamesWhatIsMissingAndNeedsNoDevice) {
  {
    auto cache = OpenCache(CacheMode::kRequireComplete);
    auto module = testing::ParseOrDie(kModule);
    auto report = Tune(*module, cache.get(), Backends(), nullptr);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), StatusCode::kFailedPrecondition);
    const std::string& msg = report.status().message();
    EXPECT_NE(msg.find("lacks 2 instructions"), std::string::npos) << msg;
    EXPECT_NE(msg.find("s1, s2 (add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("m1 (multiply"), std::string::npos) << msg;
  }
  {
    auto cache = OpenCache();  // tune only the add
    auto module = testing::ParseOrDie(kAddOnly);
    KILN_ASSERT_OK(Tune(*module, cache.get()));
  }
  {
    auto cache = OpenCache(CacheMode::kRequireComplete);
    auto module = testing::ParseOrDie(kModule);
    auto report = Tune(*module, cache.get(), Backends(), nullptr);
    ASSERT_FALSE(report.ok());
    const std::string& msg = report.status().message();
    EXPECT_NE(msg.find("lacks 1 instruction: m1 (multiply"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("s1"), std::string::npos) << msg;
    // The hit was applied meanwhile.
    EXPECT_EQ(ChosenFor(*module, "s1"), FakeBackend::MakeConfig("gen", 4));
  }
  {
    auto cache = OpenCache();  // now everything
    auto module = testing::ParseOrDie(kModule);
    KILN_ASSERT_OK(Tune(*module, cache.get()));
  }
  auto cache = OpenCache(CacheMode::kRequireComplete);
  auto module = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get(), Backends(), nullptr));
  EXPECT_EQ(report.CountSource(ChoiceSource::kCache), 2);
}

TEST_F(AutotunerTest, DeterminismModeTakesTheFirstValidInOrder) {
  options_.deterministic = true;
  auto module = testing::ParseOrDie(kAddOnly);
  auto cache = OpenCache();
  std::vector<FakeConfig> gen = {{.id = 0, .behavior = FakeBehavior::kWrong},
                                 {.id = 1, .behavior = FakeBehavior::kCorrect, .busy_us = 5000},
                                 {.id = 2, .behavior = FakeBehavior::kCorrect}};
  // The untrusted backend first: its candidates come first in the fixed order.
  BackendList list;
  list.push_back(std::make_unique<FakeBackend>("gen", true, host_.device, gen));
  list.push_back(std::make_unique<FakeBackend>(
      "ref", false, host_.device, std::vector<FakeConfig>{{.id = 0, .busy_us = 2000}}));
  auto* g = static_cast<FakeBackend*>(list[0].get());
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get(), std::move(list),
                                                        host_.device));
  ASSERT_EQ(report.groups.size(), 1u);
  EXPECT_EQ(*report.groups[0].chosen, FakeBackend::MakeConfig("gen", 1));
  EXPECT_FALSE(report.groups[0].candidates[2].profiled);  // never needed
  EXPECT_EQ(g->launch_calls(), 2);  // a warm-up each for configs 0 and 1, nothing timed
  // A different selection policy is a different cache entry.
  options_.deterministic = false;
  auto again = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*again, cache.get()));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kTuned);
}

TEST_F(AutotunerTest, TuningOffAppliesDefaultsAndTouchesNothing) {
  options_.level = TuningLevel::kOff;
  auto module = testing::ParseOrDie(kModule);
  auto cache = OpenCache();
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get()));
  EXPECT_EQ(report.CountSource(ChoiceSource::kDefault), 2);
  EXPECT_EQ(ChosenFor(*module, "s2"), FakeBackend::MakeConfig("ref", 0));
  EXPECT_EQ(gen_->compile_calls(), 0);
  EXPECT_EQ(cache->stats().stores, 0u);
  EXPECT_TRUE(std::filesystem::is_empty(cache_dir_.path()));
}

TEST_F(AutotunerTest, ForcedConfigsAndExcludedBackends) {
  KILN_ASSERT_OK_AND_ASSIGN(ForcedConfig forced, ParseForcedConfig(R"(add=gen:{"id":3})"));
  options_.forced = {forced};
  auto module = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, nullptr));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kForced);
  EXPECT_EQ(ChosenFor(*module, "s1"), FakeBackend::MakeConfig("gen", 3));  // even a wrong one
  EXPECT_EQ(report.groups[1].source, ChoiceSource::kTuned);  // multiply is tuned as usual

  KILN_ASSERT_OK_AND_ASSIGN(forced, ParseForcedConfig("multiply=ref"));
  EXPECT_FALSE(forced.params.has_value());
  EXPECT_FALSE(ParseForcedConfig("add").ok());
  EXPECT_FALSE(ParseForcedConfig("add=gen:{bad").ok());
  options_.forced = {ForcedConfig{"add", "nonesuch", std::nullopt}};
  EXPECT_EQ(Tune(*module, nullptr).status().code(), StatusCode::kInvalidArgument);

  options_.forced.clear();
  options_.exclude_backends = {"gen"};
  auto other = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*other, nullptr));
  EXPECT_EQ(report.CountSource(ChoiceSource::kOnlyCandidate), 2);  // nothing to measure
  EXPECT_EQ(ref_->launch_calls(), 0);
  options_.exclude_backends = {"nonesuch"};
  EXPECT_EQ(Tune(*other, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(AutotunerTest, AllowlistKeepsOnlyTheNamedBackends) {
  auto module = testing::ParseOrDie(kModule);
  // Only "gen": "ref" is dropped before anything is asked of it.
  options_.allow_backends = {"gen"};
  BackendList list = Backends();
  auto ref_asked = ref_->supported_calls();
  auto gen_asked = gen_->supported_calls();
  KILN_ASSERT_OK_AND_ASSIGN(
      auto tuner, Autotuner::Create(std::move(list), host_.device->description(), host_.device,
                                    nullptr, options_));
  ASSERT_EQ(tuner->backends().size(), 1u);
  EXPECT_EQ(tuner->backends()[0]->name(), "gen");
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, tuner->Run(*module));
  EXPECT_EQ(ref_asked->load(), 0);
  EXPECT_GT(gen_asked->load(), 0);
  for (const InstructionReport& g : report.groups) {
    ASSERT_TRUE(g.chosen.has_value());
    EXPECT_EQ(g.chosen->backend(), "gen");
    for (const CandidateRecord& c : g.candidates) EXPECT_EQ(c.config.backend(), "gen");
  }

  // Both allowed, "gen" excluded: the exclusion applies after the allowlist.
  options_.allow_backends = {"gen", "ref"};
  options_.exclude_backends = {"gen"};
  list = Backends();
  ref_asked = ref_->supported_calls();
  gen_asked = gen_->supported_calls();
  auto other = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*other, nullptr, std::move(list), host_.device));
  EXPECT_EQ(report.CountSource(ChoiceSource::kOnlyCandidate), 2);
  EXPECT_GT(ref_asked->load(), 0);
  EXPECT_EQ(gen_asked->load(), 0);

  // Allowed and excluded alike: nothing is left, nothing is tuned.
  options_.allow_backends = {"gen"};
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*testing::ParseOrDie(kModule), nullptr));
  EXPECT_EQ(report.CountSource(ChoiceSource::kTuned), 0);

  // An unknown name is an error that names the known backends.
  options_.exclude_backends.clear();
  options_.allow_backends = {"gen", "nonesuch"};
  auto bad = Tune(*other, nullptr);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'nonesuch' (have: ref, gen)"), std::string::npos)
      << bad.status().message();
}

TEST_F(AutotunerTest, NoValidCandidateFallsBackToTheDefault) {
  std::vector<FakeConfig> bad = {{.id = 0, .behavior = FakeBehavior::kKernelError},
                                 {.id = 1, .behavior = FakeBehavior::kCompileError}};
  BackendList list;
  list.push_back(std::make_unique<FakeBackend>("gen", true, host_.device, bad, /*default=*/1));
  auto module = testing::ParseOrDie(kAddOnly);
  auto cache = OpenCache();
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report,
                            Tune(*module, cache.get(), std::move(list), host_.device));
  const InstructionReport& g = report.groups[0];
  EXPECT_EQ(g.source, ChoiceSource::kFallback);
  EXPECT_EQ(*g.chosen, FakeBackend::MakeConfig("gen", 1));
  EXPECT_NE(g.note.find("no valid candidate (1 compile failed, 1 launch failed)"),
            std::string::npos)
      << g.note;
  EXPECT_EQ(cache->stats().stores, 0u);  // nothing worth remembering
}

TEST_F(AutotunerTest, WithoutADeviceMissesFallBackToDefaults) {
  auto module = testing::ParseOrDie(kAddOnly);
  auto cache = OpenCache();
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get(), Backends(), nullptr));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kFallback);
  EXPECT_NE(report.groups[0].note.find("no device"), std::string::npos) << report.groups[0].note;
  EXPECT_EQ(ChosenFor(*module, "s1"), FakeBackend::MakeConfig("ref", 0));
}

TEST_F(AutotunerTest, ASingleCandidateIsNeverMissing) {
  // Only the reference backend: one config, nothing to measure, nothing the cache must hold.
  options_.exclude_backends = {"gen"};
  auto cache = OpenCache(CacheMode::kRequireComplete);
  auto module = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get(), Backends(), nullptr));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kOnlyCandidate);
  EXPECT_EQ(cache->stats().misses, 1u);  // without a device the cache is asked first
  EXPECT_EQ(ChosenFor(*module, "s1"), FakeBackend::MakeConfig("ref", 0));
}

TEST_F(AutotunerTest, CorruptEntriesAreRetunedAndReplaced) {
  auto cache = OpenCache();
  auto module = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get()));
  std::string path = cache_dir_.path() + "/" + report.groups[0].key_hash + ".json";
  ASSERT_TRUE(std::filesystem::exists(path));
  std::ofstream(path) << "{\"format\": \"kiln-autotune-entry\", \"key\": ";  // truncated
  auto fresh = OpenCache();
  auto again = testing::ParseOrDie(kAddOnly);
  ::testing::internal::CaptureStderr();
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*again, fresh.get()));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kTuned);
  EXPECT_EQ(fresh->stats().invalid, 1u);
  EXPECT_NE(err.find("ignoring"), std::string::npos) << err;
  auto third = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*third, fresh.get()));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kCache);
}

// An entry that parses but is outside its backend's config space (a hand-edited cache, another
// version's config) is ignored with a warning and the instruction tuned again, never applied.
TEST_F(AutotunerTest, EntriesOutsideTheConfigSpaceAreRetuned) {
  auto cache = OpenCache();
  auto module = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, cache.get()));
  const std::string path = cache_dir_.path() + "/" + report.groups[0].key_hash + ".json";
  ASSERT_TRUE(std::filesystem::exists(path));
  nlohmann::json entry;
  {
    std::ifstream in(path);
    in >> entry;
  }
  ASSERT_TRUE(entry.contains("result"));
  const std::string backend = entry["result"]["config"]["backend"].get<std::string>();
  entry["result"]["config"]["params"] = {{"id", 999}};  // no such config in the script
  std::ofstream(path) << entry.dump();
  auto fresh = OpenCache();
  auto again = testing::ParseOrDie(kAddOnly);
  ::testing::internal::CaptureStderr();
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*again, fresh.get()));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kTuned) << backend;
  EXPECT_NE(err.find("ignoring the cache entry"), std::string::npos) << err;
  EXPECT_NE(ChosenFor(*again, "s1"), FakeBackend::MakeConfig(backend, 999));
}

TEST_F(AutotunerTest, ExhaustiveRetunesEntriesMadeWithoutIt) {
  auto cache = OpenCache();
  auto a = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK(Tune(*a, cache.get()));
  options_.level = TuningLevel::kExhaustive;
  auto b = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*b, cache.get()));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kTuned);
  auto c = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*c, cache.get()));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kCache);
  options_.level = TuningLevel::kOn;  // an exhaustive entry serves the usual level too
  auto d = testing::ParseOrDie(kAddOnly);
  KILN_ASSERT_OK_AND_ASSIGN(report, Tune(*d, cache.get()));
  EXPECT_EQ(report.groups[0].source, ChoiceSource::kCache);
}

TEST_F(AutotunerTest, FusionBodiesAreNotTunedSeparately) {
  auto module = testing::ParseOrDie(R"(
HloModule m
fused {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  ROOT inner = f32[1000]{0} add(p0, p1)
}
ENTRY e {
  a = f32[1000]{0} parameter(0)
  b = f32[1000]{0} parameter(1)
  ROOT f = f32[1000]{0} fusion(a, b), kind=kLoop, calls=fused
})");
  ASSERT_NE(module, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, Tune(*module, nullptr));
  ASSERT_EQ(report.groups.size(), 1u);
  EXPECT_EQ(report.groups[0].names, std::vector<std::string>{"f"});
  EXPECT_EQ(report.groups[0].kind, "fusion");
}

TEST_F(AutotunerTest, ProgressIsReported) {
  std::vector<AutotuneProgress> seen;
  options_.progress = [&](const AutotuneProgress& p) { seen.push_back(p); };
  auto module = testing::ParseOrDie(kModule);
  KILN_ASSERT_OK(Tune(*module, nullptr));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().groups_done, 2);
  EXPECT_EQ(seen.back().groups_total, 2);
  EXPECT_EQ(seen.back().candidates_profiled, 2 * 6);  // compile failures are not profiled
  EXPECT_TRUE(seen.back().current.empty());
}

TEST(TuningLevelTest, Names) {
  for (TuningLevel l : {TuningLevel::kOff, TuningLevel::kOn, TuningLevel::kExhaustive}) {
    KILN_ASSERT_OK_AND_ASSIGN(TuningLevel parsed, ParseTuningLevel(TuningLevelName(l)));
    EXPECT_EQ(parsed, l);
  }
  EXPECT_FALSE(ParseTuningLevel("max").ok());
}

}  // namespace
}  // namespace kiln::autotune
