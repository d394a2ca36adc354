// The kernel emitters' sources compile with NVRTC (label cpu: no GPU needed) for sm_80 and
// sm_90: every handwritten fusion of the codegen catalogue, with its default config and every
// autotuning candidate, and every kernel of the tests/data modules after fusion. The compiles
// run in parallel through codegen::CompileKernels. Skipped, with a message, without libnvrtc.
//
// NVRTC takes about a second per kernel, so the sweeps sample: the autotuning candidates (the
// GPU test runs them all) compile every 8th distinct one, and the tests/data sweep (about
// 2,400 distinct kernels) every 40th for sm_90 and every 160th (others) for sm_80 by default.
// KILN_CODEGEN_NVRTC_CORPUS=N compiles every N-th tests/data kernel for sm_90 (every 4N-th for
// sm_80) and every candidate; 1 compiles all, 0 skips the tests/data sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "kiln/base/thread_pool.h"
#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/codegen_test_util.h"
#include "kiln/cuda/compiler/gpu_fusion_policy.h"
#include "kiln/cuda/cubin.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using codegen::KernelSpec;

using testing::NvrtcKernelCompiler;

class CodegenNvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::shared_ptr<const NvrtcApi>> api = NvrtcApi::Default();
    if (!api.ok()) GTEST_SKIP() << "NVRTC is not installed here: " << api.status().message();
    NvrtcOptions options;
    options.use_cache = false;  // measure real compiles; the service's cache has its own tests
    StatusOr<std::unique_ptr<NvrtcCompiler>> c = NvrtcCompiler::Create(options);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    nvrtc_ = std::move(c).value();
  }

  // Compiles `kernels` for `arch` and checks each cubin holds the kernel's entry points.
  void CompileAll(const std::vector<KernelSpec>& kernels, const std::string& arch) {
    NvrtcKernelCompiler compiler(*nvrtc_);
    StatusOr<std::vector<codegen::CompiledKernel>> out =
        codegen::CompileKernels(kernels, compiler, arch, pool_);
    if (!out.ok()) {
      // List every failing kernel, not only the first.
      int failures = 0;
      for (const KernelSpec& k : kernels) {
        StatusOr<codegen::CompiledKernel> one = compiler.Compile(k, arch);
        if (!one.ok() && failures++ < 10) ADD_FAILURE() << k.name << ": " << one.status().ToString();
      }
      FAIL() << arch << ": " << out.status().ToString();
    }
    ASSERT_EQ(out->size(), kernels.size());
    const int number = std::stoi(arch.substr(3));
    for (size_t i = 0; i < kernels.size(); ++i) {
      SCOPED_TRACE(kernels[i].name + " for " + arch);
      KILN_ASSERT_OK_AND_ASSIGN(CubinInfo info, InspectCubin((*out)[i].cubin));
      EXPECT_EQ(info.sm_arch, number);
      std::vector<std::string> entries = info.Kernels();
      for (const std::string& e : kernels[i].Entries())
        EXPECT_NE(std::find(entries.begin(), entries.end(), e), entries.end()) << e;
      // No warnings: generated code should be clean.
      EXPECT_TRUE((*out)[i].log.empty()) << (*out)[i].log << "\n" << kernels[i].source;
    }
  }

  std::unique_ptr<NvrtcCompiler> nvrtc_;
  ThreadPool pool_{2};
};

// The prelude silences the warnings generated code cannot avoid cheaply (unused values,
// unsigned comparisons with zero), and only those.
TEST_F(CodegenNvrtcTest, PreludeSilencesHarmlessWarnings) {
  KernelSpec k;
  k.name = "warnings";
  k.headers = {{codegen::CodegenPreludeName(), codegen::CodegenPrelude()}};
  k.source = R"(#include "kiln_codegen.cuh"
extern "C" __global__ void warnings(const u16* in, u16* out) {
  const u16 x = in[threadIdx.x];
  const bool unused = x > 3;
  int set_only;
  set_only = 2;
  out[threadIdx.x] = x < (u16)0 ? 1 : 2;
})";
  k.launches.push_back({"warnings", {}});
  CompileAll({k}, "sm_90");
  // Without the prelude's pragmas the same code warns (so the check above can fail).
  KernelSpec bare = k;
  bare.headers = {{"kiln_codegen.cuh", "typedef unsigned short u16;\n"}};
  NvrtcKernelCompiler compiler(*nvrtc_);
  KILN_ASSERT_OK_AND_ASSIGN(codegen::CompiledKernel c, compiler.Compile(bare, "sm_90"));
  EXPECT_NE(c.log.find("186"), std::string::npos) << c.log;
  EXPECT_NE(c.log.find("177"), std::string::npos) << c.log;
}

TEST_F(CodegenNvrtcTest, CatalogueCompilesForSm80AndSm90) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset(arch));
    std::vector<KernelSpec> kernels;
    for (const codegen::testing::CatalogueCase& c : codegen::testing::Catalogue()) {
      KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(c.hlo));
      StatusOr<KernelSpec> k =
          codegen::EmitKernel(*m->entry_computation()->root_instruction(), device);
      ASSERT_TRUE(k.ok()) << c.name << ": " << k.status().ToString();
      k->name = c.name;  // unique names in the diagnostics
      kernels.push_back(std::move(k).value());
    }
    CompileAll(kernels, arch);
  }
}

// Every autotuning candidate of the non-elementwise cases (different vector widths, splits,
// tiles and unrolls take different code paths).
TEST_F(CodegenNvrtcTest, CandidateConfigsCompile) {
  const bool sample = std::getenv("KILN_CODEGEN_NVRTC_CORPUS") == nullptr;
  KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset("sm_90"));
  std::vector<KernelSpec> kernels;
  std::set<std::string> sources;
  for (const codegen::testing::CatalogueCase& c : codegen::testing::Catalogue()) {
    if (c.name.rfind("elementwise_", 0) == 0) continue;
    KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(c.hlo));
    const HloInstruction& root = *m->entry_computation()->root_instruction();
    KILN_ASSERT_OK_AND_ASSIGN(std::vector<codegen::KernelConfig> configs,
                              codegen::CandidateConfigs(root, device));
    for (const codegen::KernelConfig& config : configs) {
      KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, codegen::EmitKernel(root, device, config));
      if (!sources.insert(k.source).second) continue;
      if (sample && (sources.size() - 1) % 8 != 0) continue;
      k.name = c.name + "." + config.ToString();
      kernels.push_back(std::move(k));
    }
  }
  std::cout << kernels.size() << " distinct candidate kernels\n";
  CompileAll(kernels, "sm_90");
}

// The blocked cholesky / triangular-solve kernels (matrices over 256, systems over 2048: several
// launches over a scratch copy) for every type, triangle, side and transpose.
TEST_F(CodegenNvrtcTest, BlockedLinalgCompilesForSm80AndSm90) {
  std::vector<std::string> hlos;
  for (const char* t : {"f32", "f64", "c64", "c128"}) {
    for (const char* lower : {"true", "false"})
      hlos.push_back(std::string("HloModule m\nENTRY e {\n  a = ") + t + "[2,300,300] parameter(0)\n  ROOT c = " + t +
                     "[2,300,300] cholesky(a), lower=" + lower + "\n}\n");
    for (const char* opts : {"left_side=true, lower=true, transpose_a=NO_TRANSPOSE",
                             "left_side=true, lower=false, unit_diagonal=true, transpose_a=TRANSPOSE",
                             "left_side=false, lower=true, transpose_a=ADJOINT",
                             "left_side=false, lower=false, transpose_a=NO_TRANSPOSE"}) {
      const bool left = std::string(opts).find("left_side=true") != std::string::npos;
      const std::string b = std::string(t) + (left ? "[2100,3]" : "[3,2100]");
      hlos.push_back(std::string("HloModule m\nENTRY e {\n  a = ") + t + "[2100,2100] parameter(0)\n  b = " + b +
                     " parameter(1)\n  ROOT x = " + b + " triangular-solve(a, b), " + opts + "\n}\n");
    }
  }
  for (const char* arch : {"sm_80", "sm_90"}) {
    KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset(arch));
    std::vector<KernelSpec> kernels;
    for (size_t i = 0; i < hlos.size(); ++i) {
      KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(hlos[i]));
      KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k,
                                codegen::EmitKernel(*m->entry_computation()->root_instruction(), device));
      EXPECT_GT(k.launches.size(), 2u) << hlos[i];
      k.name = "blocked_linalg_" + std::to_string(i);
      kernels.push_back(std::move(k));
    }
    CompileAll(kernels, arch);
  }
}

TEST_F(CodegenNvrtcTest, TestDataKernelsCompile) {
  int stride = 40;
  if (const char* env = std::getenv("KILN_CODEGEN_NVRTC_CORPUS")) stride = std::atoi(env);
  if (stride <= 0) GTEST_SKIP() << "KILN_CODEGEN_NVRTC_CORPUS=" << std::getenv("KILN_CODEGEN_NVRTC_CORPUS");
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  fs::path data = fs::path(src) / "tests" / "data";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  GpuFusionPolicy policy;
  for (const char* arch : {"sm_90", "sm_80"}) {
    const bool sm80 = std::string(arch) == "sm_80";
    const int64_t step = sm80 ? 4 * int64_t{stride} : stride, offset = sm80 ? std::min(1, stride - 1) : 0;
    KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset(arch));
    std::vector<KernelSpec> kernels;
    std::set<std::string> sources;
    int64_t seen = 0;
    for (const fs::path& p : paths) {
      ParseOptions po;
      po.fill_elided_constants = true;
      StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
      if (!m.ok() || !codegen::testing::FuseModule(**m, &policy).ok()) continue;
      for (const HloInstruction* i : codegen::testing::KernelInstructions(**m)) {
        StatusOr<KernelSpec> k = codegen::EmitKernel(*i, device);
        if (!k.ok()) continue;  // GpuPolicyFusionsEmit checks which instructions emit
        if (!sources.insert(k->source).second) continue;
        if (seen++ % step != offset) continue;
        k->name = p.parent_path().filename().string() + "." + i->name();
        kernels.push_back(std::move(k).value());
      }
    }
    std::cout << arch << ": compiling " << kernels.size() << " of " << sources.size()
              << " distinct kernels\n";
    CompileAll(kernels, arch);
  }
}

// Every fusion the GPU fusion policy forms over tests/data gets a kernel (no NVRTC needed). An
// emitter may decline (Unimplemented: the compiler then re-fuses without normalization
// fusion); those are counted and listed, any other error fails.
TEST(CodegenGpuPolicyTest, GpuPolicyFusionsEmit) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / "tests" / "data"))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset("h200"));
  GpuFusionPolicy policy;
  int modules = 0, kernels = 0, declined = 0;
  std::map<std::string, int> by_emitter;
  for (const fs::path& p : paths) {
    ParseOptions po;
    po.fill_elided_constants = true;
    StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
    if (!m.ok() || !codegen::testing::FuseModule(**m, &policy).ok()) continue;
    ++modules;
    for (const HloInstruction* i : codegen::testing::KernelInstructions(**m)) {
      StatusOr<KernelSpec> k = codegen::EmitKernel(*i, device);
      if (k.ok()) {
        ++kernels;
        ++by_emitter[k->emitter];
      } else if (k.status().code() == StatusCode::kUnimplemented) {
        if (i->opcode() == HloOpcode::kFusion && declined++ < 20)
          std::cout << "declined: " << p.parent_path().filename().string() << " %" << i->name()
                    << ": " << k.status().message() << "\n";
      } else {
        ADD_FAILURE() << p.parent_path().filename().string() << " %" << i->name() << ": "
                      << k.status().ToString();
      }
    }
  }
  std::cout << modules << " modules, " << kernels << " kernels";
  for (const auto& [e, n] : by_emitter) std::cout << ", " << e << " " << n;
  std::cout << "; " << declined << " fusions declined\n";
  EXPECT_GT(modules, 500);
}

}  // namespace
}  // namespace kiln::cuda
