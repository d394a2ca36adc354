// The host factory end to end: a real dot tuned among the evaluator and the tiled GEMM.
#include "kiln/autotune/host_backends.h"

#include <gtest/gtest.h>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/hlo/computation.h"

namespace kiln::autotune {
namespace {

constexpr char kDot[] = R"(
HloModule m
ENTRY e {
  a = f32[96,80]{1,0} parameter(0)
  b = f32[80,64]{1,0} parameter(1)
  d = f32[96,64]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[64,80]{1,0} transpose(b), dimensions={1,0}
  ROOT e = f32[96,64]{1,0} dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})";

TEST(HostBackendsTest, TunesADotEndToEnd) {
  testing::HostDevice host = testing::HostDevice::Create();
  ASSERT_NE(host.device, nullptr);
  testing::ScopedTempDir cache_dir, locks;
  auto cache = Cache::Create({.directory = cache_dir.path()});
  ASSERT_TRUE(cache.ok());
  BackendFactoryRegistry registry;
  KILN_ASSERT_OK(RegisterHostAutotuneFactory(registry));
  KILN_ASSERT_OK_AND_ASSIGN(BackendFactory factory, registry.Get("host"));

  AutotuneOptions options;
  options.profile.redzone.redzone_bytes = 1 << 20;
  options.profile.repetitions = 2;
  options.lock.directory = locks.path();
  auto module = testing::ParseOrDie(kDot);
  KILN_ASSERT_OK_AND_ASSIGN(auto tuner, Autotuner::Create(factory, host.device->description(),
                                                          host.device, cache->get(), options));
  KILN_ASSERT_OK_AND_ASSIGN(AutotuneReport report, tuner->Run(*module));

  // d: five GEMM configs and the evaluator (the reference); e (contracting rhs dim 1) only has
  // the evaluator, so there is nothing to measure.
  ASSERT_EQ(report.groups.size(), 2u);
  const InstructionReport& d = report.groups[0];
  EXPECT_EQ(d.names, std::vector<std::string>{"d"});
  EXPECT_EQ(d.source, ChoiceSource::kTuned);
  ASSERT_EQ(d.candidates.size(), 6u);
  EXPECT_EQ(d.candidates[5].config.backend(), "host_eval");
  EXPECT_TRUE(d.candidates[5].is_reference);
  for (const CandidateRecord& c : d.candidates) {
    Verdict v = c.measurement.verdict;
    EXPECT_TRUE(v == Verdict::kOk || v == Verdict::kTooSlow)
        << c.config.ToString() << ": " << VerdictName(v) << " " << c.measurement.message;
  }
  EXPECT_EQ(report.groups[1].names, std::vector<std::string>{"e"});
  EXPECT_EQ(report.groups[1].source, ChoiceSource::kOnlyCandidate);

  // The choice is in the module, readable back.
  HloInstruction* dot = module->entry_computation()->GetInstructionWithName("d");
  KILN_ASSERT_OK_AND_ASSIGN(Config applied, ReadConfigFromBackendConfig(*dot));
  EXPECT_EQ(applied, *d.chosen);
  // The default is the 64x64x64 ikj GEMM.
  auto is_default = [](const CandidateRecord& c) { return c.is_default; };
  auto def = std::find_if(d.candidates.begin(), d.candidates.end(), is_default);
  ASSERT_NE(def, d.candidates.end());
  EXPECT_EQ(def->config.params()["tile_m"], 64);
  EXPECT_EQ(def->config.params()["order"], "ikj");
}

TEST(HostBackendsTest, ExhaustiveListsTheWholeGrid) {
  testing::HostDevice host = testing::HostDevice::Create();
  ASSERT_NE(host.device, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(BackendList on,
                            CreateHostBackends(host.device->description(), host.device, {}));
  KILN_ASSERT_OK_AND_ASSIGN(
      BackendList all,
      CreateHostBackends(host.device->description(), host.device, {.exhaustive = true}));
  auto module = testing::ParseOrDie(kDot);
  HloInstruction* d = module->entry_computation()->GetInstructionWithName("d");
  KILN_ASSERT_OK_AND_ASSIGN(auto few, on[0]->SupportedConfigs(*d));
  KILN_ASSERT_OK_AND_ASSIGN(auto many, all[0]->SupportedConfigs(*d));
  EXPECT_EQ(few.size(), 5u);
  EXPECT_EQ(many.size(), 128u);
  // The config space: tiles 1..4096, loop order ikj or ijk (cache entries are checked with it).
  KILN_EXPECT_OK(on[0]->CheckConfig(*d, few[0]));
  for (const nlohmann::json& bad :
       {nlohmann::json{{"tile_m", -5}, {"tile_n", 64}, {"tile_k", 64}, {"order", "ikj"}},
        nlohmann::json{{"tile_m", 0}, {"tile_n", 64}, {"tile_k", 64}, {"order", "ikj"}},
        nlohmann::json{{"tile_m", int64_t{1} << 40}, {"tile_n", 64}, {"tile_k", 64}, {"order", "ikj"}},
        nlohmann::json{{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 64}, {"order", "kji"}},
        nlohmann::json{{"tile_m", "big"}}}) {
    EXPECT_FALSE(on[0]->CheckConfig(*d, Config("host_gemm", bad)).ok()) << bad.dump();
  }
  EXPECT_FALSE(on[0]->CheckConfig(*d, Config("cublas", few[0].params())).ok());
  // A malformed config is a compile failure, not a crash.
  EXPECT_FALSE(on[0]->Compile(*d, Config("host_gemm", {{"tile_m", "big"}})).ok());
  EXPECT_FALSE(on[0]->Compile(*d, Config("host_gemm", {{"tile_m", 0}})).ok());
  // Without a device nothing compiles, but listing and defaults still work.
  KILN_ASSERT_OK_AND_ASSIGN(BackendList none,
                            CreateHostBackends(host.device->description(), nullptr, {}));
  EXPECT_EQ(none[0]->Compile(*d, few[0]).status().code(), StatusCode::kFailedPrecondition);
  KILN_EXPECT_OK(none[0]->DefaultConfig(*d));
}

}  // namespace
}  // namespace kiln::autotune
