// Generated kernels on a GPU (label gpu) against the reference evaluator on random inputs:
// every handwritten fusion of the codegen catalogue (all elementwise ops and dtypes, shape ops,
// reductions, transposes, in-place dynamic-update-slice), every autotuning candidate of the
// non-elementwise ones, and the kernels of the tests/data modules fused with the GPU policy
// (each extracted into a module of its own). Results must match within eval/tolerance.h's
// per-type tolerances. Skipped without a GPU.
//
// KILN_CODEGEN_GPU_CORPUS=N runs every N-th distinct tests/data kernel (default 2; 0 skips);
// KILN_CODEGEN_GPU_FILTER=a,b keeps only kernels whose HLO text contains a or b;
// KILN_CODEGEN_GPU_CASES=a,b only the catalogue cases whose name contains a or b.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "kiln/base/strings.h"
#include "kiln/base/thread_pool.h"
#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/codegen_test_util.h"
#include "kiln/cuda/compiler/gpu_fusion_policy.h"
#include "kiln/cuda/cuda_test_util.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using codegen::KernelSpec;

// One kernel to check: the module whose entry root it computes, and the kernel.
struct Job {
  std::string name;
  std::unique_ptr<HloModule> module;
  KernelSpec kernel;
  bool exact = false;  // compare bytes (CatalogueCase::exact)
};

// The first byte-level difference between two literals of the same shape ("" when equal).
std::string BitDifference(const Literal& got, const Literal& want) {
  if (got.shape().IsTuple()) {
    if (got.tuple_size() != want.tuple_size()) return "tuple sizes differ";
    for (int64_t i = 0; i < got.tuple_size(); ++i) {
      std::string d = BitDifference(got.tuple_element(i), want.tuple_element(i));
      if (!d.empty()) return StrCat("output ", i, ": ", d);
    }
    return "";
  }
  if (got.size_bytes() != want.size_bytes()) return "sizes differ";
  const int w = PrimitiveByteWidth(got.shape().element_type());
  for (size_t b = 0; b < got.size_bytes(); ++b) {
    if (got.untyped_data()[b] == want.untyped_data()[b]) continue;
    const size_t e = b / w;
    std::string g, x;
    char buf[4];
    for (int k = w - 1; k >= 0; --k) {
      std::snprintf(buf, sizeof(buf), "%02x", got.untyped_data()[e * w + k]);
      g += buf;
      std::snprintf(buf, sizeof(buf), "%02x", want.untyped_data()[e * w + k]);
      x += buf;
    }
    return StrCat("element ", e, ": bits 0x", g, ", the evaluator's 0x", x);
  }
  return "";
}

// Whether a scatter combiner gives the same result in any order of application (up to float
// rounding): a single add/multiply/min/max/and/or/xor of its two parameters.
bool CommutativeCombiner(const HloComputation& c) {
  const HloInstruction* r = c.root_instruction();
  if (c.num_parameters() != 2 || r->operand_count() != 2 ||
      r->operand(0)->opcode() != HloOpcode::kParameter ||
      r->operand(1)->opcode() != HloOpcode::kParameter || r->operand(0) == r->operand(1))
    return false;
  switch (r->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMinimum:
    case HloOpcode::kMaximum: case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

// Element types of the array leaves of `s`.
void LeafTypes(const Shape& s, std::set<PrimitiveType>& out) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) LeafTypes(e, out);
  } else {
    out.insert(s.element_type());
  }
}

// The comparison for a job: the backend-vs-evaluator tolerances (eval/tolerance.h), widened
// where the kernel legitimately combines in another order than the evaluator: reductions of up
// to ~10^5 f32 terms split across threads (rtol/atol 1e-4: ~sqrt(K) eps with margin), and
// atomic scatters into f16/bf16, where every colliding update rounds (4 rounding steps).
CompareOptions JobCompareOptions(const Job& j) {
  CompareOptions o;
  o.backend_vs_evaluator = true;
  const HloInstruction& root = *j.module->entry_computation()->root_instruction();
  std::set<PrimitiveType> types;
  LeafTypes(root.shape(), types);
  const bool only_wide = std::all_of(types.begin(), types.end(), [](PrimitiveType t) {
    return !IsFloatingPointType(t) || t == PrimitiveType::kF32 || t == PrimitiveType::kF64;
  });
  if (only_wide && (j.kernel.emitter == "row_reduction" || j.kernel.emitter == "column_reduction")) {
    o.rtol = 1e-4;
    o.atol = 1e-4;
  }
  if (j.kernel.emitter == "scatter" && j.kernel.source.find("atomic") != std::string::npos &&
      (types.count(PrimitiveType::kBF16) || types.count(PrimitiveType::kF16))) {
    o.rtol = 4e-2;
    o.atol = 4e-2;
  }
  return o;
}

// KILN_CODEGEN_GPU_CASES=a,b: only the catalogue cases whose name contains a or b.
bool SelectedCase(const std::string& name) {
  const char* env = std::getenv("KILN_CODEGEN_GPU_CASES");
  if (env == nullptr || *env == '\0') return true;
  for (std::string_view f : StrSplit(env, ','))
    if (!f.empty() && name.find(f) != std::string::npos) return true;
  return false;
}

class CodegenGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<CudaDevice*> device = testing::TestDevice();
    if (!device.ok()) GTEST_SKIP() << "no cuda device: " << device.status().message();
    device_ = *device;
    KILN_ASSERT_OK_AND_ASSIGN(stream_, device_->CreateStream({}));
    KILN_ASSERT_OK_AND_ASSIGN(nvrtc_, testing::TestCompiler());
    spec_ = codegen::DeviceSpec::FromDescription(device_->description());
  }

  // Compiles all jobs in parallel, runs each on random inputs and compares with the evaluator.
  // Returns the number of jobs that failed.
  int RunJobs(std::vector<Job>& jobs) {
    std::vector<KernelSpec> kernels;
    for (Job& j : jobs) {
      j.kernel.name = j.name;
      kernels.push_back(j.kernel);
    }
    testing::NvrtcKernelCompiler compiler(*nvrtc_);
    ThreadPool pool(std::max(2u, std::thread::hardware_concurrency()));
    const std::string arch = testing::DeviceArch(*device_);
    StatusOr<std::vector<codegen::CompiledKernel>> cubins =
        codegen::CompileKernels(kernels, compiler, arch, pool);
    if (!cubins.ok()) {
      ADD_FAILURE() << cubins.status().ToString();
      return int(jobs.size());
    }
    int passed = 0, failures = 0, skipped = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      Job& j = jobs[i];
      std::vector<Shape> shapes;
      for (const HloInstruction* p : j.module->entry_computation()->parameter_instructions())
        shapes.push_back(p->shape());
      std::vector<Literal> args = MakeRandomArguments(shapes, /*seed=*/7 + i);
      EvaluatorOptions eo;
      Evaluator evaluator(eo);
      StatusOr<Literal> want = evaluator.Run(*j.module, args);
      if (!want.ok()) {
        // The reference cannot run it (an op the evaluator lacks): nothing to compare.
        std::cout << "skip " << j.name << ": evaluator: " << want.status().message() << "\n";
        ++skipped;
        continue;
      }
      // The kernel's operands: the root's operands, entry parameters or constants.
      std::vector<Literal> kernel_args;
      const HloInstruction* root = j.module->entry_computation()->root_instruction();
      for (const HloInstruction* op : root->operands()) {
        if (op->opcode() == HloOpcode::kParameter) {
          kernel_args.push_back(args[op->parameter_number()]);
        } else if (op->opcode() == HloOpcode::kConstant) {
          kernel_args.push_back(op->literal());
        } else {
          ADD_FAILURE() << j.name << ": operand %" << op->name() << " is computed";
          ++failures;
          break;
        }
      }
      if (kernel_args.size() != size_t(root->operand_count())) continue;
      StatusOr<Literal> got =
          testing::RunKernel(*device_, *stream_, j.kernel, (*cubins)[i].cubin, kernel_args);
      if (!got.ok()) {
        if (failures++ < 40) ADD_FAILURE() << j.name << ": " << got.status().ToString();
        continue;
      }
      if (j.exact) {
        std::string d = BitDifference(*got, *want);
        if (!d.empty()) {
          if (failures++ < 40) ADD_FAILURE() << j.name << " (bit-exact): " << d << "\n" << j.kernel.hlo;
          continue;
        }
      }
      Comparison c = CompareLiterals(*got, *want, JobCompareOptions(j));
      if (!c.ok()) {
        if (failures++ < 40)
          ADD_FAILURE() << j.name << " (" << j.kernel.emitter << " " << j.kernel.config.ToString()
                        << "):\n" << c.ToString() << "\n" << j.kernel.hlo;
        continue;
      }
      ++passed;
    }
    std::cout << passed << " of " << jobs.size() << " kernels match the evaluator, " << failures
              << " fail, " << skipped << " skipped (no reference)\n";
    return failures;
  }

  CudaDevice* device_ = nullptr;
  std::unique_ptr<runtime::Stream> stream_;
  NvrtcCompiler* nvrtc_ = nullptr;
  codegen::DeviceSpec spec_;
};

TEST_F(CodegenGpuTest, CatalogueMatchesEvaluator) {
  std::vector<Job> jobs;
  for (const codegen::testing::CatalogueCase& c : codegen::testing::Catalogue()) {
    if (!SelectedCase(c.name)) continue;
    KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(c.hlo));
    StatusOr<KernelSpec> k = codegen::EmitKernel(*m->entry_computation()->root_instruction(), spec_);
    ASSERT_TRUE(k.ok()) << c.name << ": " << k.status().ToString();
    jobs.push_back(Job{c.name, std::move(m), std::move(k).value(), c.exact});
  }
  EXPECT_EQ(RunJobs(jobs), 0);
}

TEST_F(CodegenGpuTest, CandidateConfigsMatchEvaluator) {
  std::vector<Job> jobs;
  for (const codegen::testing::CatalogueCase& c : codegen::testing::Catalogue()) {
    if (!SelectedCase(c.name)) continue;
    if (c.name.rfind("elementwise_", 0) == 0) continue;
    KILN_ASSERT_OK_AND_ASSIGN(auto probe, codegen::testing::ParseModule(c.hlo));
    const HloInstruction& root = *probe->entry_computation()->root_instruction();
    KILN_ASSERT_OK_AND_ASSIGN(std::vector<codegen::KernelConfig> configs,
                              codegen::CandidateConfigs(root, spec_));
    for (size_t i = 1; i < configs.size(); ++i) {  // the default runs in the catalogue test
      KILN_ASSERT_OK_AND_ASSIGN(auto m, codegen::testing::ParseModule(c.hlo));
      KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k,
                                codegen::EmitKernel(*m->entry_computation()->root_instruction(), spec_, configs[i]));
      jobs.push_back(Job{c.name + "." + configs[i].ToString(), std::move(m), std::move(k), c.exact});
    }
  }
  EXPECT_EQ(RunJobs(jobs), 0);
}

TEST_F(CodegenGpuTest, TestDataKernelsMatchEvaluator) {
  int stride = 2;
  if (const char* env = std::getenv("KILN_CODEGEN_GPU_CORPUS")) stride = std::atoi(env);
  if (stride <= 0) GTEST_SKIP() << "KILN_CODEGEN_GPU_CORPUS=0";
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / "tests" / "data"))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  // KILN_CODEGEN_GPU_FILTER=" scatter(, gather(": only kernels whose HLO holds one of these.
  std::vector<std::string> filter;
  if (const char* env = std::getenv("KILN_CODEGEN_GPU_FILTER"))
    for (std::string_view f : StrSplit(env, ','))
      if (!f.empty()) filter.emplace_back(f);
  GpuFusionPolicy policy;
  std::vector<Job> jobs;
  std::set<std::string> sources;
  int64_t seen = 0;
  for (const fs::path& p : paths) {
    ParseOptions po;
    po.fill_elided_constants = true;
    StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
    if (!m.ok() || !codegen::testing::FuseModule(**m, &policy).ok()) continue;
    for (const HloInstruction* i : codegen::testing::KernelInstructions(**m)) {
      StatusOr<std::unique_ptr<HloModule>> one = codegen::testing::ExtractKernelModule(**m, *i);
      if (!one.ok()) continue;
      const HloInstruction& root = *(*one)->entry_computation()->root_instruction();
      // Random indices repeat: a scatter whose combiner is not commutative (an overwrite) has
      // no single right answer under atomics, so those run serialized, in the evaluator's order.
      StatusOr<KernelSpec> k =
          root.opcode() == HloOpcode::kScatter && !CommutativeCombiner(*root.to_apply())
              ? codegen::EmitScatter(root, spec_, {}, codegen::ScatterMode::kSerialized)
              : codegen::EmitKernel(root, spec_);
      if (!k.ok() || !sources.insert(k->source).second) continue;
      if (!filter.empty()) {
        bool keep = false;
        for (const std::string& f : filter) keep |= k->hlo.find(f) != std::string::npos;
        if (!keep) continue;
      }
      if (seen++ % stride != 0) continue;
      jobs.push_back(Job{p.parent_path().filename().string() + "." + i->name(), std::move(one).value(),
                         std::move(k).value()});
    }
  }
  std::cout << "running " << jobs.size() << " of " << sources.size() << " distinct kernels" << std::endl;
  EXPECT_EQ(RunJobs(jobs), 0);
}

}  // namespace
}  // namespace kiln::cuda
