// The ROCm autotuning factory without a device: backend order, the allow-list, what can be
// listed without a GPU (generated-kernel configs, rocBLAS' default), what cannot (measuring:
// FailedPrecondition saying why), and cache keys that tell gfx90a from gfx942 and library
// versions apart.
#include <gtest/gtest.h>

#include "kiln/autotune/cache_key.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/rocm/autotune/rocm_backends.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

runtime::DeviceDescription Mi300x() {
  runtime::DeviceDescription d;
  d.platform = "rocm";
  d.name = "AMD Instinct MI300X";
  d.gpu_arch = "gfx942";
  d.runtime_version = "6.4.43484";
  d.library_versions = {{"rocblas", "4.4.1"}, {"miopen", "3.4.0"}};
  return d;
}

constexpr const char* kModule = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  p = f32[256,1024] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[256] reduce(p, z), dimensions={1}, to_apply=add
}
ENTRY e {
  x = f32[256,1024] parameter(0)
  y = f32[1024,1024] parameter(1)
  d = f32[256,1024] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT f = f32[256] fusion(d), kind=kInput, calls=fused
}
)";

TEST(RocmBackends, OrderAllowListAndListingWithoutADevice) {
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList all, CreateRocmBackends(Mi300x(), nullptr, {}));
  std::vector<std::string> names;
  for (const auto& b : all) names.emplace_back(b->name());
  EXPECT_EQ(names, RocmBackendNames());
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList some,
                            CreateRocmBackends(Mi300x(), nullptr, {}, RocmBackendsOptions{{"rocblas", "codegen"}}));
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0]->name(), "rocblas");
  EXPECT_EQ(some[1]->name(), "codegen");
  StatusOr<autotune::BackendList> bad = CreateRocmBackends(Mi300x(), nullptr, {}, RocmBackendsOptions{{"cublas"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);

  KILN_ASSERT_OK_AND_ASSIGN(auto m, ParseHloModule(kModule));
  const HloInstruction* fusion = m->entry_computation()->root_instruction();
  const HloInstruction* dot = fusion->operand(0);
  autotune::Backend& rocblas = *all[0];
  autotune::Backend& codegen = *all[3];
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<autotune::Config> gemm, rocblas.SupportedConfigs(*dot));
  ASSERT_EQ(gemm.size(), 1u);  // the default solution: the list needs a device
  EXPECT_EQ(gemm[0].params()["solution"], 0);
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<autotune::Config> kernels, codegen.SupportedConfigs(*fusion));
  EXPECT_GT(kernels.size(), 1u);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::Config def, codegen.DefaultConfig(*fusion));
  EXPECT_EQ(kernels[0], def);
  for (const autotune::Config& c : kernels) EXPECT_TRUE(codegen.CheckConfig(*fusion, c).ok()) << c.ToString();
  // Measuring needs a GPU.
  StatusOr<std::unique_ptr<autotune::Candidate>> cand = codegen.Compile(*fusion, def);
  EXPECT_EQ(cand.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cand.status().message().find("needs an AMD GPU"), std::string::npos) << cand.status().ToString();
  // Offline hipBLASLt lists nothing (its heuristic needs a handle on a device) and MIOpen only
  // its default: listing must work without a device (autotune/backend.h).
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<autotune::Config> lt, all[1]->SupportedConfigs(*dot));
  EXPECT_TRUE(lt.empty());
  for (const auto& b : all) EXPECT_FALSE(b->version().empty()) << b->name();
}

// CheckConfig: what a cache entry must be to be applied (Note [Deviceless autotuning] in
// rocm/compiler/rocm_compiler.cc).
TEST(RocmBackends, ConfigSpaces) {
  KILN_ASSERT_OK_AND_ASSIGN(auto m, ParseHloModule(R"(HloModule m
ENTRY e {
  x = f32[256,1024] parameter(0)
  y = f32[1024,1024] parameter(1)
  d = f32[256,1024] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = f32[3,3,8,16] parameter(2)
  i = f32[1,32,32,8] parameter(3)
  c = f32[1,30,30,16] convolution(i, k), window={size=3x3}, dim_labels=b01f_01io->b01f
  ROOT t = (f32[256,1024], f32[1,30,30,16]) tuple(d, c)
}
)"));
  const HloInstruction* tuple = m->entry_computation()->root_instruction();
  const HloInstruction& dot = *tuple->operand(0);
  const HloInstruction& conv = *tuple->operand(1);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList all, CreateRocmBackends(Mi300x(), nullptr, {}));
  autotune::Backend& rocblas = *all[0];
  autotune::Backend& lt = *all[1];
  autotune::Backend& miopen = *all[2];
  using autotune::Config;
  EXPECT_TRUE(rocblas.CheckConfig(dot, Config("rocblas", {{"solution", 7}})).ok());
  EXPECT_FALSE(rocblas.CheckConfig(dot, Config("rocblas", {{"solution", -1}})).ok());
  EXPECT_FALSE(rocblas.CheckConfig(dot, Config("rocblas", {{"solution", "7"}})).ok());
  EXPECT_FALSE(rocblas.CheckConfig(dot, Config("rocblas", {{"solution", 0}, {"extra", 1}})).ok());
  EXPECT_FALSE(rocblas.CheckConfig(conv, Config("rocblas", {{"solution", 0}})).ok());
  EXPECT_FALSE(rocblas.CheckConfig(dot, Config("hipblaslt", {{"index", 0}, {"heuristic", 16}})).ok());
  EXPECT_TRUE(lt.CheckConfig(dot, Config("hipblaslt", {{"index", 15}, {"heuristic", 16}})).ok());
  EXPECT_FALSE(lt.CheckConfig(dot, Config("hipblaslt", {{"index", 16}, {"heuristic", 16}})).ok());
  EXPECT_FALSE(lt.CheckConfig(dot, Config("hipblaslt", {{"index", 0}, {"heuristic", 500}})).ok());
  EXPECT_FALSE(lt.CheckConfig(dot, Config("hipblaslt", {{"index", 0}})).ok());
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<Config> convs, miopen.SupportedConfigs(conv));
  ASSERT_EQ(convs.size(), 1u);  // the default: find and immediate mode ask a device
  EXPECT_TRUE(miopen.CheckConfig(conv, convs[0]).ok());
  EXPECT_TRUE(miopen.CheckConfig(conv, Config("miopen", {{"mode", "find"}, {"solution", 3}, {"fallback", false}})).ok());
  EXPECT_FALSE(miopen.CheckConfig(conv, Config("miopen", {{"mode", "guess"}, {"solution", 3}, {"fallback", false}})).ok());
  EXPECT_FALSE(miopen.CheckConfig(conv, Config("miopen", {{"mode", "find"}, {"solution", 3}, {"fallback", 1}})).ok());
  EXPECT_FALSE(miopen.CheckConfig(dot, convs[0]).ok());
}

TEST(RocmBackends, CacheKeysCarryArchRuntimeAndLibraryVersions) {
  KILN_ASSERT_OK_AND_ASSIGN(auto m, ParseHloModule(kModule));
  const HloInstruction& fusion = *m->entry_computation()->root_instruction();
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, CreateRocmBackends(Mi300x(), nullptr, {}));
  std::vector<const autotune::Backend*> list;
  for (const auto& b : backends) list.push_back(b.get());
  auto key = [&](const runtime::DeviceDescription& d) { return autotune::MakeCacheKey(d, list, false, fusion).Hash(); };
  runtime::DeviceDescription a = Mi300x(), b = Mi300x(), c = Mi300x(), e = Mi300x();
  b.gpu_arch = "gfx90a";
  c.runtime_version = "7.0.0";
  e.library_versions[0].second = "5.0.0";
  EXPECT_EQ(key(a), key(Mi300x()));
  EXPECT_NE(key(a), key(b));
  EXPECT_NE(key(a), key(c));
  EXPECT_NE(key(a), key(e));
  EXPECT_EQ(autotune::DeviceKeyJson(a)["gpu_arch"], "gfx942");
}

}  // namespace
}  // namespace kiln::rocm
