// The GPU compiler's autotuning step on a CUDA device (label gpu; skips without one), over the
// bench suite's small modules: every module compiled with tuning on (a fresh cache: cuBLAS /
// cuBLASLt / cuDNN algorithms and generated-kernel launch configurations all measured) runs and
// agrees with the untuned compile; a second compile takes everything from the cache and
// measures nothing (its time is printed: the warm compile).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/autotune/testing/test_util.h"
#include "kiln/cuda/autotune/cuda_backends.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

CudaDevice* TheDevice() {
  static runtime::Platform* platform = [] {
    auto p = CreateCudaPlatform();
    return p.ok() ? p->release() : nullptr;
  }();
  if (!platform || platform->device_count() == 0) return nullptr;
  auto d = platform->GetDevice(0);
  return d.ok() ? static_cast<CudaDevice*>(*d) : nullptr;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Compiled {
  std::unique_ptr<GpuExecutable> exe;
  double seconds = 0;
};

StatusOr<Compiled> CompileOn(CudaDevice& device, const std::string& text, autotune::Cache* cache,
                             bool tune) {
  ParseOptions po;
  po.fill_elided_constants = true;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(text, po));
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(device.description());
  if (tune) {
    o.autotune.factory = CudaAutotuneFactory();
    o.autotune.target = device.description();
    o.autotune.device = &device;
    o.autotune.cache = cache;
  }
  auto t0 = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<CompiledGpuModule> c, GpuCompiler::Compile(std::move(m), o));
  Compiled out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  KILN_ASSIGN_OR_RETURN(out.exe, GpuExecutable::Create(std::move(c), device));
  return out;
}

TEST(GpuAutotuneGpuTest, TunedSmallsAgreeWithUntunedAndRecompileFromTheCache) {
  CudaDevice* device = TheDevice();
  if (!device) GTEST_SKIP() << "no CUDA device";
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) GTEST_SKIP() << "no KILN_SHARED_DIR";
  fs::path suite = fs::path(shared) / "bench" / "suite";
  if (!fs::exists(suite)) GTEST_SKIP() << "no bench suite under " << suite;
  autotune::testing::ScopedTempDir dir;
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, autotune::Cache::Create({.directory = dir.path()}));
  std::vector<fs::path> smalls;
  for (const auto& e : fs::directory_iterator(suite)) {
    if (e.path().filename().string().ends_with("_small") && fs::exists(e.path() / "module.hlo")) {
      smalls.push_back(e.path());
    }
  }
  std::sort(smalls.begin(), smalls.end());
  ASSERT_FALSE(smalls.empty());
  for (const fs::path& p : smalls) {
    const std::string name = p.filename().string();
    SCOPED_TRACE(name);
    const std::string text = Read(p / "module.hlo");
    KILN_ASSERT_OK_AND_ASSIGN(Compiled plain, CompileOn(*device, text, nullptr, false));
    KILN_ASSERT_OK_AND_ASSIGN(Compiled tuned, CompileOn(*device, text, cache.get(), true));
    const auto& report = tuned.exe->compiled().stats.autotune;
    ASSERT_NE(report, nullptr);
    std::vector<Shape> shapes;
    for (const HloInstruction* prm : tuned.exe->compiled().module->entry_computation()->parameter_instructions()) {
      shapes.push_back(prm->shape());
    }
    std::vector<Literal> args = MakeRandomArguments(shapes, 11);
    GpuRunOptions ro;
    ro.poison = true;
    KILN_ASSERT_OK_AND_ASSIGN(Literal want, plain.exe->Run(args, ro));
    KILN_ASSERT_OK_AND_ASSIGN(Literal got, tuned.exe->Run(args, ro));
    CompareOptions co;
    co.backend_vs_evaluator = true;
    co.reference_tf32 = true;  // both sides may run f32 products in TF32, differently
    Comparison cmp = CompareLiterals(got, want, co);
    EXPECT_TRUE(cmp.ok()) << cmp.ToString() << "\n" << tuned.exe->compiled().ThunkListing();

    // Warm: all from the cache, nothing measured.
    KILN_ASSERT_OK_AND_ASSIGN(Compiled warm, CompileOn(*device, text, cache.get(), true));
    const auto& warm_report = warm.exe->compiled().stats.autotune;
    int measured = 0;
    for (int v : warm_report->verdicts) measured += v;
    EXPECT_EQ(measured, 0) << warm_report->SummaryLine();
    EXPECT_EQ(warm_report->CountSource(autotune::ChoiceSource::kTuned), 0) << warm_report->SummaryLine();
    std::printf("%-24s cold %.2f s (%s)  warm %.3f s (%s)  untuned %.3f s\n", name.c_str(), tuned.seconds,
                report->SummaryLine().c_str(), warm.seconds, warm_report->SummaryLine().c_str(), plain.seconds);
  }
}

}  // namespace
}  // namespace kiln::cuda
