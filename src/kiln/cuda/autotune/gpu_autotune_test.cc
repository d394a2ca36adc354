// The GPU compiler's autotuning step without a GPU: fake backends measured on the host device
// (grouping, tuning once, the cache making the second compile measure nothing), and the real
// CUDA factory offline, whose forced choices must reach the thunks (GemmThunk's algorithm,
// KernelThunk's launch configuration).
#include "kiln/cuda/compiler/gpu_autotune.h"

#include <gtest/gtest.h>

#include "kiln/autotune/testing/fake_backend.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/cuda/autotune/codegen_backend.h"
#include "kiln/cuda/autotune/cuda_backends.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/kernel_thunk.h"
#include "kiln/cuda/compiler/library_thunks.h"
#include "kiln/hlo/computation.h"

namespace kiln::cuda {
namespace {

using autotune::ChoiceSource;
using autotune::testing::FakeBackend;
using autotune::testing::FakeBehavior;
using autotune::testing::FakeConfig;
using autotune::testing::ParseOrDie;
using autotune::testing::ScopedTempDir;

// x and y are identical instructions (one group); the dot becomes a __kiln$gemm call.
constexpr char kModule[] = R"(
HloModule m
ENTRY e {
  a = f32[4096]{0} parameter(0)
  b = f32[4096]{0} parameter(1)
  c = f32[4096]{0} parameter(2)
  x = f32[4096]{0} add(a, b)
  y = f32[4096]{0} add(a, c)
  p = f32[64,32]{1,0} parameter(3)
  q = f32[32,16]{1,0} parameter(4)
  d = f32[64,16]{1,0} dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[4096]{0}, f32[4096]{0}, f32[64,16]{1,0}) tuple(x, y, d)
})";

// A loop fusion (exp of a sum) and a GEMM.
constexpr char kFused[] = R"(
HloModule f
ENTRY e {
  a = f32[8192]{0} parameter(0)
  b = f32[8192]{0} parameter(1)
  s = f32[8192]{0} add(a, b)
  x = f32[8192]{0} exponential(s)
  p = f32[64,32]{1,0} parameter(2)
  q = f32[32,16]{1,0} parameter(3)
  d = f32[64,16]{1,0} dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8192]{0}, f32[64,16]{1,0}) tuple(x, d)
})";

runtime::DeviceDescription H200() {
  runtime::DeviceDescription d;
  d.platform = "cuda";
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  d.multiprocessor_count = 132;
  d.library_versions = {{"cublas", "13.0.2"}, {"cublasLt", "13.0.2"}, {"cudnn", "9.13.0"}};
  return d;
}

bool NvrtcPresent() { return NvrtcCompiler::Create({}).ok(); }

HloInstruction* Find(const HloModule& m, std::string_view name) {
  for (HloComputation* c : m.computations())
    for (HloInstruction* i : c->instructions())
      if (i->name() == name) return i;
  return nullptr;
}

class GpuAutotuneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC (thunk emission compiles kernels)";
    host_ = autotune::testing::HostDevice::Create();
    ASSERT_NE(host_.device, nullptr);
    options_.profile.redzone.redzone_bytes = 64 << 10;
    options_.profile.repetitions = 2;
    options_.compile_threads = 2;
    options_.lock.directory = locks_.path();
    auto cache = autotune::Cache::Create({.directory = cache_dir_.path()});
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    cache_ = std::move(cache).value();
  }

  // The CUDA factory without a device (its offline lists), plus a fake measured on the host.
  GpuAutotuneOptions WithFake(FakeBackend** fake) {
    GpuAutotuneOptions o;
    o.factory = [this, fake](const runtime::DeviceDescription& target, runtime::Device*,
                             const autotune::BackendOptions& bo) -> StatusOr<autotune::BackendList> {
      KILN_ASSIGN_OR_RETURN(autotune::BackendList list, CreateCudaBackends(target, nullptr, bo));
      auto f = std::make_unique<FakeBackend>(
          "fake", true, host_.device,
          std::vector<FakeConfig>{{.id = 0, .behavior = FakeBehavior::kCorrect, .busy_us = 1500},
                                  {.id = 1, .behavior = FakeBehavior::kWrong},
                                  {.id = 2, .behavior = FakeBehavior::kCorrect}});
      *fake = f.get();
      // Ahead of codegen, so that the fake (not a codegen list) decides the adds.
      list.insert(list.begin(), std::move(f));
      return list;
    };
    o.target = H200();
    o.device = host_.device;
    o.cache = cache_.get();
    o.options = options_;
    return o;
  }

  StatusOr<std::unique_ptr<CompiledGpuModule>> Compile(const char* text, GpuAutotuneOptions autotune,
                                                       bool fusion) {
    GpuCompileOptions o;
    o.compile_threads = 2;
    o.fusion = fusion;
    o.autotune = std::move(autotune);
    return GpuCompiler::Compile(ParseOrDie(text), o);
  }

  autotune::testing::HostDevice host_;
  ScopedTempDir cache_dir_, locks_;
  std::unique_ptr<autotune::Cache> cache_;
  autotune::AutotuneOptions options_;
};

TEST_F(GpuAutotuneTest, TunesIdenticalInstructionsOnceAndTheSecondCompileMeasuresNothing) {
  FakeBackend* fake = nullptr;
  KILN_ASSERT_OK_AND_ASSIGN(auto first, Compile(kModule, WithFake(&fake), /*fusion=*/false));
  ASSERT_NE(first->stats.autotune, nullptr);
  const autotune::AutotuneReport& r = *first->stats.autotune;
  const autotune::InstructionReport* adds = nullptr;
  const autotune::InstructionReport* gemm = nullptr;
  for (const auto& g : r.groups) {
    if (g.kind == "add") adds = &g;
    if (g.kind == "custom-call:__kiln$gemm") gemm = &g;
  }
  ASSERT_NE(adds, nullptr) << r.SummaryLine();
  EXPECT_EQ(adds->names.size(), 2u);
  EXPECT_EQ(adds->source, ChoiceSource::kTuned);
  ASSERT_TRUE(adds->chosen.has_value());
  EXPECT_EQ(*adds->chosen, FakeBackend::MakeConfig("fake", 2));  // the fast correct one
  EXPECT_EQ(r.verdicts[static_cast<int>(autotune::Verdict::kWrongResult)], 1);
  // Both members carry the choice.
  for (const char* name : {"x", "y"}) {
    HloInstruction* i = Find(*first->module, name);
    ASSERT_NE(i, nullptr) << name;
    auto c = autotune::ReadConfigFromBackendConfig(*i);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status().ToString();
    EXPECT_EQ(*c, FakeBackend::MakeConfig("fake", 2));
  }
  // Nothing can run cuBLAS here: the GEMM gets cuBLAS's default, and its thunk runs that.
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->source, ChoiceSource::kFallback);
  bool found_gemm = false;
  for (const GpuThunk* t : first->entry.Flatten()) {
    if (const auto* g = dynamic_cast<const GemmThunk*>(t)) {
      found_gemm = true;
      ASSERT_TRUE(g->tuned().has_value());
      EXPECT_EQ(g->tuned()->backend, libs::GemmAlgorithm::Backend::kCublas);
    }
  }
  EXPECT_TRUE(found_gemm) << first->ThunkListing();
  EXPECT_EQ(adds->candidates.size(), 3u);

  // Second compile: the adds come from the cache; none of their candidates is compiled or
  // measured. (The GEMM, which nothing could measure, was not cached: it falls back again.)
  KILN_ASSERT_OK_AND_ASSIGN(auto second, Compile(kModule, WithFake(&fake), /*fusion=*/false));
  const autotune::AutotuneReport& r2 = *second->stats.autotune;
  bool saw_adds = false;
  for (const auto& g : r2.groups) {
    if (g.kind != "add") continue;
    saw_adds = true;
    EXPECT_EQ(g.source, ChoiceSource::kCache) << r2.SummaryLine();
    EXPECT_TRUE(g.candidates.empty());
  }
  EXPECT_TRUE(saw_adds) << r2.SummaryLine();
  EXPECT_EQ(r2.verdicts[static_cast<int>(autotune::Verdict::kOk)], 0) << r2.SummaryLine();
  auto c = autotune::ReadConfigFromBackendConfig(*Find(*second->module, "x"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, FakeBackend::MakeConfig("fake", 2));
}

TEST_F(GpuAutotuneTest, ForcedChoicesReachTheThunks) {
  GpuAutotuneOptions o;
  o.factory = CudaAutotuneFactory();
  o.target = H200();
  o.device = nullptr;
  o.cache = nullptr;
  o.options.level = autotune::TuningLevel::kOff;
  KILN_ASSERT_OK_AND_ASSIGN(auto gemm_force, autotune::ParseForcedConfig(
                                                 "custom-call:__kiln$gemm=cublas:{\"algo\":3}"));
  KILN_ASSERT_OK_AND_ASSIGN(auto fusion_force,
                            autotune::ParseForcedConfig("fusion=codegen:{\"config\":\"b128.v1.u1\"}"));
  o.options.forced = {gemm_force, fusion_force};
  KILN_ASSERT_OK_AND_ASSIGN(auto c, Compile(kFused, o, /*fusion=*/true));
  int kernels = 0, gemms = 0;
  for (const GpuThunk* t : c->entry.Flatten()) {
    if (const auto* k = dynamic_cast<const KernelThunk*>(t)) {
      ++kernels;
      EXPECT_EQ(k->spec().config.block_size, 128) << k->ToString();
      EXPECT_EQ(k->spec().config.vector_width, 1) << k->ToString();
    }
    if (const auto* g = dynamic_cast<const GemmThunk*>(t)) {
      ++gemms;
      ASSERT_TRUE(g->tuned().has_value());
      EXPECT_EQ(g->tuned()->backend, libs::GemmAlgorithm::Backend::kCublas);
      EXPECT_EQ(g->tuned()->cublas_algo, 3);
      EXPECT_NE(g->ToString().find("[tuned]"), std::string::npos);
    }
  }
  EXPECT_EQ(kernels, 1) << c->ThunkListing();
  EXPECT_EQ(gemms, 1) << c->ThunkListing();

  // Without the step, the same module has untuned thunks.
  KILN_ASSERT_OK_AND_ASSIGN(auto plain, Compile(kFused, GpuAutotuneOptions{}, /*fusion=*/true));
  EXPECT_EQ(plain->stats.autotune, nullptr);
  for (const GpuThunk* t : plain->entry.Flatten()) {
    if (const auto* g = dynamic_cast<const GemmThunk*>(t)) {
      EXPECT_FALSE(g->tuned().has_value());
    }
  }
}

TEST(CodegenBackendTest, ListsCandidateConfigsOfFusionsOffline) {
  auto module = ParseOrDie(R"(
HloModule r
f {
  p = f32[256,1024]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[256]{0} reduce(p, z), dimensions={1}, to_apply=add
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[256,1024]{1,0} parameter(0)
  ROOT f = f32[256]{0} fusion(p), kind=kInput, calls=f
})");
  ASSERT_NE(module, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec spec, codegen::DeviceSpec::FromPreset("sm_90"));
  auto backend = CreateCodegenBackend(spec, nullptr, nullptr, {});
  HloInstruction* fusion = module->entry_computation()->root_instruction();
  KILN_ASSERT_OK_AND_ASSIGN(auto configs, backend->SupportedConfigs(*fusion));
  EXPECT_GT(configs.size(), 2u);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::Config def, backend->DefaultConfig(*fusion));
  EXPECT_EQ(configs.front(), def);
  // Not a fusion: nothing.
  KILN_ASSERT_OK_AND_ASSIGN(auto none, backend->SupportedConfigs(*fusion->operand(0)));
  EXPECT_TRUE(none.empty());
  // Compile needs a device; Apply writes what TunedKernelConfig reads back.
  EXPECT_EQ(backend->Compile(*fusion, configs[1]).status().code(), StatusCode::kFailedPrecondition);
  KILN_ASSERT_OK(backend->Apply(*fusion, configs[1]));
  KILN_ASSERT_OK_AND_ASSIGN(codegen::KernelConfig kc, TunedKernelConfig(*fusion));
  KILN_ASSERT_OK_AND_ASSIGN(codegen::KernelConfig want,
                            codegen::KernelConfig::Parse(configs[1].params()["config"].get<std::string>()));
  EXPECT_EQ(kc, want);
  EXPECT_FALSE(backend->Apply(*fusion, autotune::Config("codegen", {{"config", 7}})).ok());
}

}  // namespace
}  // namespace kiln::cuda
