// The rocm compiler's autotuning step without a device (Note [Deviceless autotuning] in
// rocm/compiler/rocm_compiler.cc), with the real factory (rocm/autotune) and a cache the test
// writes: an entry keyed by the gfx942 preset's description and the backends' versions is
// applied (a fusion gets the cached launch configuration), an entry outside its backend's config
// space is ignored, everything else gets its default, and the stats say which. Then the same
// through the "rocm" backend's Compile (CompileOptions::autotune). Skipped without clang-19.
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/autotune/cache.h"
#include "kiln/autotune/cache_key.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/rocm/autotune/rocm_backends.h"
#include "kiln/rocm/backend/rocm_backend.h"
#include "kiln/rocm/compiler/rocm_compiler.h"
#include "kiln/rocm/rocm_platform.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModule = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  a = f32[256,512] parameter(0)
  b = f32[512,256] parameter(1)
  d = f32[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[256,256] exponential(d)
  zero = f32[] constant(0)
  r = f32[256] reduce(e, zero), dimensions={1}, to_apply=add
  x = f32[4096,1024] parameter(2)
  y = f32[4096,1024] tanh(x)
  z = f32[4096,1024] multiply(y, x)
  ROOT t = (f32[256], f32[4096,1024]) tuple(r, z)
}
)";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

bool HaveClang(std::string* why) {
  StatusOr<std::unique_ptr<HsacoCompiler>> c = HsacoCompiler::Create({});
  if (!c.ok()) {
    *why = c.status().message();
    return false;
  }
  StatusOr<HsacoPath> p = (*c)->ChoosePath("gfx942", HsacoPath::kClang);
  if (!p.ok()) *why = p.status().message();
  return p.ok();
}

StatusOr<std::unique_ptr<RocmCompiledModule>> CompileWith(autotune::Cache* cache) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  RocmCompileOptions o;
  KILN_ASSIGN_OR_RETURN(o.device, codegen::DeviceSpec::FromPreset("gfx942"));
  o.path = HsacoPath::kClang;
  o.autotune.factory = RocmAutotuneFactory();
  o.autotune.target = RocmTargetDescription(o.device);
  o.autotune.cache = cache;
  return RocmCompiler::Compile(std::move(m), o);
}

const autotune::InstructionReport* GroupOf(const autotune::AutotuneReport& r, std::string_view member) {
  for (const autotune::InstructionReport& g : r.groups)
    for (const std::string& n : g.names)
      if (n == member) return &g;
  return nullptr;
}

TEST(RocmDevicelessAutotune, CacheEntriesAppliedDefaultsOtherwise) {
  std::string why;
  if (!HaveClang(&why)) GTEST_SKIP() << why;
  TempDir dir("kiln_rocm_autotune_cache");
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<autotune::Cache> cache,
                            autotune::Cache::Create({dir.path.string(), autotune::CacheMode::kReadWrite}));
  // 1. An empty cache: every decision a default, nothing stored (nothing was measured).
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> first, CompileWith(cache.get()));
  ASSERT_NE(first->stats.autotune, nullptr);
  const autotune::AutotuneReport& r1 = *first->stats.autotune;
  EXPECT_EQ(r1.CountSource(autotune::ChoiceSource::kCache), 0);
  EXPECT_EQ(r1.CountSource(autotune::ChoiceSource::kTuned), 0);
  ASSERT_GE(r1.groups.size(), 3u);  // the dot, the reduction fusion, the tanh fusion
  EXPECT_EQ(cache->stats().stores, 0u);
  EXPECT_NE(first->stats.AutotuneLine().find(StrCat("0 from cache, ", r1.groups.size(), " defaults, no device to measure")),
            std::string::npos)
      << first->stats.AutotuneLine();

  // 2. Entries the test writes, keyed as the compile keys them: a non-default launch
  // configuration for the tanh fusion (valid), a rocBLAS solution outside the config space for
  // the dot (ignored).
  const runtime::DeviceDescription target = RocmTargetDescription(*codegen::DeviceSpec::FromPreset("gfx942"));
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, CreateRocmBackends(target, nullptr, {}));
  std::vector<const autotune::Backend*> list;
  for (const auto& b : backends) list.push_back(b.get());
  const HloInstruction* tanh_fusion = nullptr;
  const HloInstruction* dot = nullptr;
  for (const HloInstruction* i : first->module->entry_computation()->instructions()) {
    if (i->opcode() == HloOpcode::kDot) dot = i;
    if (i->opcode() == HloOpcode::kFusion && i->shape().dimensions().size() == 2 &&
        i->shape().dimensions(0) == 4096)
      tanh_fusion = i;
  }
  ASSERT_NE(tanh_fusion, nullptr) << first->module->ToString();
  ASSERT_NE(dot, nullptr);
  const autotune::InstructionReport* fusion_group = GroupOf(r1, tanh_fusion->name());
  const autotune::InstructionReport* dot_group = GroupOf(r1, dot->name());
  ASSERT_NE(fusion_group, nullptr);
  ASSERT_NE(dot_group, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<autotune::Config> configs, backends[3]->SupportedConfigs(*tanh_fusion));
  ASSERT_GE(configs.size(), 2u);
  const autotune::Config chosen = configs.back();
  ASSERT_NE(chosen, *fusion_group->chosen);
  auto store = [&](const autotune::InstructionReport& g, const autotune::Config& config) {
    autotune::CacheEntry entry;
    entry.key.device = autotune::DeviceKeyJson(target);
    for (const autotune::Backend* b : list) entry.key.backends.emplace_back(std::string(b->name()), b->version());
    entry.key.instruction = g.fingerprint;
    ASSERT_EQ(entry.key.Hash(), g.key_hash);  // the compile's own key
    entry.kind = g.kind;
    entry.instruction_text = g.text;
    entry.result.config = config;
    entry.result.time_us = 12.5;
    KILN_ASSERT_OK(cache->Store(entry));
  };
  store(*fusion_group, chosen);
  store(*dot_group, autotune::Config("rocblas", {{"solution", -3}}));

  // 3. Compiled again: the fusion's entry applied (its kernel has that configuration), the dot's
  // ignored (the default), the stats counting both.
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> second, CompileWith(cache.get()));
  const autotune::AutotuneReport& r2 = *second->stats.autotune;
  const autotune::InstructionReport* g2 = GroupOf(r2, tanh_fusion->name());
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ(g2->source, autotune::ChoiceSource::kCache);
  EXPECT_EQ(*g2->chosen, chosen);
  const autotune::InstructionReport* d2 = GroupOf(r2, dot->name());
  ASSERT_NE(d2, nullptr);
  EXPECT_NE(d2->source, autotune::ChoiceSource::kCache);
  EXPECT_EQ(d2->chosen->params()["solution"], 0);
  const std::string line = second->stats.AutotuneLine();
  EXPECT_NE(line.find(StrCat("autotune: 1 from cache, ", r2.groups.size() - 1, " defaults, no device to measure")),
            std::string::npos)
      << line;
  EXPECT_NE(second->stats.ToString().find(line), std::string::npos);
  const std::string want = StrCat("kernel %", tanh_fusion->name(), " [e]: loop ", chosen.params()["config"].get<std::string>());
  EXPECT_NE(second->ThunkListing().find(want), std::string::npos) << want << "\n" << second->ThunkListing();
  EXPECT_NE(second->ThunkListing().find("solution 0 (the library's default, autotune)"), std::string::npos)
      << second->ThunkListing();
  bool found = false;
  for (const codegen::KernelSpec& k : second->kernels)
    if (k.config == *codegen::KernelConfig::Parse(chosen.params()["config"].get<std::string>())) found = true;
  EXPECT_TRUE(found);
}

// The "rocm" backend: CompileOptions::autotune's cache and allow-list reach the compile, and
// the summary carries the stats line.
TEST(RocmDevicelessAutotune, ThroughTheBackend) {
  std::string why;
  if (!HaveClang(&why)) GTEST_SKIP() << why;
  TempDir dir("kiln_rocm_autotune_backend");
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  std::unique_ptr<Backend> backend = CreateRocmBackend();
  CompileOptions o;
  o.flags = {{"rocm_target", "gfx942"}, {"rocm_compiler", "clang"}};
  o.autotune.cache_dir = dir.path.string();
  o.autotune.backends = {"rocblas", "codegen"};
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, backend->Compile(*m, o));
  ASSERT_NE(exe->compile_report().autotune, nullptr);
  EXPECT_NE(exe->compile_report().summary.find("defaults, no device to measure"), std::string::npos) << exe->compile_report().summary;
  EXPECT_NE(exe->compile_report().details.find("autotune: 0 from cache"), std::string::npos) << exe->compile_report().details;
  // An unknown backend in the allow-list is the autotuner's InvalidArgument.
  o.autotune.backends = {"cublas"};
  EXPECT_EQ(backend->Compile(*m, o).status().code(), StatusCode::kInvalidArgument);
  // Tuning off: no step at all.
  o.autotune.backends.clear();
  o.autotune.level = "off";
  KILN_ASSERT_OK_AND_ASSIGN(exe, backend->Compile(*m, o));
  EXPECT_EQ(exe->compile_report().autotune, nullptr);
}

}  // namespace
}  // namespace kiln::rocm
