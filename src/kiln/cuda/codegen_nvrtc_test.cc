// The kernel emitters' sources compile with NVRTC (label cpu: no GPU needed) for sm_80 and
// sm_90: every handwritten fusion of the codegen catalogue, with its default config and every
// autotuning candidate, and every kernel of the tests/data modules after fusion. The compiles
// run in parallel through codegen::CompileKernels. Skipped, with a message, without libnvrtc.
//
// The tests/data sweep (about 2,400 distinct kernels, a second each) compiles every 20th distinct
// kernel for sm_90 and every 80th (others) for sm_80 by default: KILN_CODEGEN_NVRTC_CORPUS=N
// compiles every N-th for sm_90 (every 4N-th for sm_80); 1 compiles all, 0 skips the sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "kiln/base/thread_pool.h"
#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/cubin.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using codegen::KernelSpec;

// codegen's compiler interface over the NVRTC service.
class NvrtcKernelCompiler : public codegen::KernelCompiler {
 public:
  explicit NvrtcKernelCompiler(NvrtcCompiler& nvrtc) : nvrtc_(nvrtc) {}
  StatusOr<codegen::CompiledKernel> Compile(const KernelSpec& k, std::string_view arch) override {
    NvrtcRequest r;
    r.source = k.source;
    r.headers = k.headers;
    r.arch = std::string(arch);
    r.program_name = k.name + ".cu";
    KILN_ASSIGN_OR_RETURN(NvrtcProgram p, nvrtc_.Compile(r));
    return codegen::CompiledKernel{k.name, p.arch, std::move(p.cubin), std::move(p.log),
                                   p.from_cache};
  }

 private:
  NvrtcCompiler& nvrtc_;
};

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
      k.name = c.name + "." + config.ToString();
      kernels.push_back(std::move(k));
    }
  }
  std::cout << kernels.size() << " distinct candidate kernels\n";
  CompileAll(kernels, "sm_90");
}

TEST_F(CodegenNvrtcTest, TestDataKernelsCompile) {
  int stride = 20;
  if (const char* env = std::getenv("KILN_CODEGEN_NVRTC_CORPUS")) stride = std::atoi(env);
  if (stride <= 0) GTEST_SKIP() << "KILN_CODEGEN_NVRTC_CORPUS=" << std::getenv("KILN_CODEGEN_NVRTC_CORPUS");
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  fs::path data = fs::path(src) / "tests" / "data";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(data))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
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
      if (!m.ok() || !codegen::testing::FuseModule(**m).ok()) continue;
      for (const HloInstruction* i : codegen::testing::KernelInstructions(**m)) {
        StatusOr<KernelSpec> k = codegen::EmitKernel(*i, device);
        if (!k.ok()) continue;  // codegen_test checks which instructions emit
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

}  // namespace
}  // namespace kiln::cuda
