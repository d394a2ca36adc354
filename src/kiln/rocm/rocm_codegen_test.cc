// Every emitter's kernels in the HIP dialect compile, with no warnings, into AMDGPU code objects
// for gfx90a (hipRTC and clang) and gfx942 (clang): the codegen catalogue (every op family and
// emitter), and the kernels of the tests/data modules (the differential suite's cases) after
// fusion with the GPU fusion policy. Kernels are compiled many per translation unit (Note [One
// code object per module] in rocm_kernel_compiler.h), the batches in parallel.
//
// KILN_ROCM_CODEGEN_CORPUS=N compiles every N-th distinct tests/data kernel (default 1: all of
// them; 0 skips the sweep). Each compiler is skipped, saying why, where it is not installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "kiln/base/thread_pool.h"
#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/gpu_fusion_policy.h"
#include "kiln/hlo/parser.h"
#include "kiln/rocm/code_object.h"
#include "kiln/rocm/hsaco_compiler.h"
#include "kiln/rocm/rocm_kernel_compiler.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;
using codegen::KernelSpec;

struct Target {
  const char* preset;
  HsacoPath path;
};
constexpr Target kTargets[] = {{"gfx90a", HsacoPath::kHiprtc}, {"gfx90a", HsacoPath::kClang},
                               {"gfx942", HsacoPath::kClang}};

class RocmCodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HsacoCompilerOptions o;
    o.use_cache = false;  // real compiles
    KILN_ASSERT_OK_AND_ASSIGN(compiler_, HsacoCompiler::Create(o));
  }

  // Compiles `kernels` (HIP dialect) in batches of `batch` on the pool for `target`; checks
  // every entry is in the code objects and no compile printed a diagnostic.
  void CompileBatched(const std::vector<KernelSpec>& kernels, const Target& t, size_t batch) {
    const std::string arch = t.preset;
    SCOPED_TRACE(arch + " with " + std::string(HsacoPathName(t.path)));
    std::vector<std::vector<KernelSpec>> groups;
    for (size_t i = 0; i < kernels.size(); i += batch)
      groups.emplace_back(kernels.begin() + i, kernels.begin() + std::min(kernels.size(), i + batch));
    std::vector<StatusOr<CompiledHsaco>> results(groups.size(), Internal("not run"));
    std::vector<size_t> entries(groups.size(), 0);
    const auto start = std::chrono::steady_clock::now();
    pool_.ParallelFor(static_cast<int64_t>(groups.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) CompileGroup(groups, g, t, results, entries);
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << arch << " " << HsacoPathName(t.path) << ": " << kernels.size() << " kernels in " << groups.size()
              << " compiles, " << seconds << " s\n";
    for (size_t g = 0; g < groups.size(); ++g) {
      ASSERT_TRUE(results[g].ok()) << results[g].status().ToString().substr(0, 4000);
      EXPECT_TRUE(results[g]->log.empty()) << results[g]->log.substr(0, 4000);
      KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(results[g]->image));
      EXPECT_EQ(info.gfx_arch, arch);
      EXPECT_EQ(info.kernels.size(), entries[g]);
      for (const KernelMetadata& k : info.kernels) {
        EXPECT_EQ(k.wavefront_size, 64) << k.name;
        EXPECT_LE(k.max_flat_workgroup_size, 1024) << k.name;
      }
    }
  }

  void CompileGroup(const std::vector<std::vector<KernelSpec>>& groups, int64_t g, const Target& t,
                    std::vector<StatusOr<CompiledHsaco>>& results, std::vector<size_t>& entries) {
    StatusOr<HsacoSource> source = BatchKernelSource(groups[g], "batch" + std::to_string(g), /*c_linkage=*/false);
    if (!source.ok()) {
      results[g] = source.status();
      return;
    }
    for (const KernelSpec& k : groups[g]) entries[g] += k.Entries().size();
    results[g] = compiler_->Compile(*source, t.preset, t.path);
  }

  bool Available(const Target& t) {
    StatusOr<HsacoPath> p = compiler_->ChoosePath(t.preset, t.path);
    if (!p.ok()) std::cout << "skipping " << t.preset << " with " << HsacoPathName(t.path) << ": " << p.status().message() << "\n";
    return p.ok();
  }

  std::unique_ptr<HsacoCompiler> compiler_;
  ThreadPool pool_{1};  // with the calling thread: two compiles at a time
};

TEST_F(RocmCodegenTest, CatalogueCompilesForGfx90aAndGfx942) {
  int compiled = 0;
  for (const Target& t : kTargets) {
    if (!Available(t)) continue;
    KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset(t.preset));
    ASSERT_TRUE(device.is_hip());
    std::vector<KernelSpec> kernels;
    std::vector<codegen::testing::CatalogueCase> cases = codegen::testing::Catalogue();
    for (const codegen::testing::CatalogueCase& c : cases) {
      KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(c.hlo));
      StatusOr<KernelSpec> k = codegen::EmitKernel(*m->entry_computation()->root_instruction(), device);
      ASSERT_TRUE(k.ok()) << c.name << ": " << k.status().ToString();
      k->name = c.name;
      kernels.push_back(std::move(k).value());
    }
    CompileBatched(kernels, t, (kernels.size() + 1) / 2);
    ++compiled;
  }
  if (compiled == 0) GTEST_SKIP() << "no HIP compiler here";
}

TEST_F(RocmCodegenTest, TestDataKernelsCompile) {
  int stride = 1;
  if (const char* env = std::getenv("KILN_ROCM_CODEGEN_CORPUS")) stride = std::atoi(env);
  if (stride <= 0) GTEST_SKIP() << "KILN_ROCM_CODEGEN_CORPUS=" << std::getenv("KILN_ROCM_CODEGEN_CORPUS");
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / "tests" / "data"))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  codegen::GpuFusionPolicy policy;
  int compiled = 0;
  for (const Target& t : kTargets) {
    if (!Available(t)) continue;
    KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset(t.preset));
    std::vector<KernelSpec> kernels;
    std::set<std::string> sources;
    int64_t seen = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const fs::path& p : paths) {
      ParseOptions po;
      po.fill_elided_constants = true;
      StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
      if (!m.ok() || !codegen::testing::FuseModule(**m, &policy).ok()) continue;
      for (const HloInstruction* i : codegen::testing::KernelInstructions(**m)) {
        StatusOr<KernelSpec> k = codegen::EmitKernel(*i, device);
        if (!k.ok()) continue;  // declined fusions: the compiler re-fuses them (CodegenGpuPolicyTest)
        if (!sources.insert(k->source).second) continue;
        if (seen++ % stride != 0) continue;
        k->name = p.parent_path().filename().string() + "." + i->name();
        kernels.push_back(std::move(k).value());
      }
    }
    std::cout << t.preset << ": emitted " << sources.size() << " distinct kernels in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
    CompileBatched(kernels, t, 200);
    ++compiled;
  }
  if (compiled == 0) GTEST_SKIP() << "no HIP compiler here";
}

}  // namespace
}  // namespace kiln::rocm
