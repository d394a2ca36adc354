// Fusion and buffer assignment over real modules: every ../shared bench *_small module, every
// corpus/xla-fuzz module and every tests/data/*/module.hlo is fused with the CPU policy; the
// result must verify and evaluate to bitwise the same values as the original on random inputs,
// and its buffer assignment (post-order and memory-aware schedules) must pass the independent
// checker. Also prints kernel counts and memory statistics of the bench modules (the
// full-size ones are fused and assigned, not evaluated).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/buffer_assignment_checker.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/compile_summary.h"
#include "kiln/passes/cpu_fusion_policy.h"
#include "kiln/passes/fusion_passes.h"
#include "kiln/passes/fusion_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> Modules(const fs::path& dir, const std::string& suffix, bool recurse) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  if (recurse) {
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename() == suffix) out.push_back(e.path());
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == suffix) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status FuseForCpu(HloModule& m) {
  FlattenCallGraph flatten;
  KILN_RETURN_IF_ERROR(flatten.Run(m).status());
  CpuFusionPolicy policy;
  InstructionFusion fusion(policy);
  KILN_RETURN_IF_ERROR(fusion.Run(m).status());
  KILN_RETURN_IF_ERROR(VerifyModule(m).WithContext("after instruction fusion"));
  MultiOutputFusion mof(policy);
  KILN_RETURN_IF_ERROR(mof.Run(m).status());
  return VerifyModule(m).WithContext("after multi-output fusion");
}

// Assigns buffers under both schedulers and checks each assignment.
Status AssignAndCheck(const HloModule& m, MemoryStats* stats = nullptr) {
  HloSchedule post = PostOrderSchedule(m), mem = MemoryAwareSchedule(m);
  for (const HloSchedule* s : {&post, &mem}) {
    BufferAssignmentOptions o;
    o.schedule = s;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<BufferAssignment> ba, BufferAssignment::Run(m, o));
    BufferCheckOptions c;
    c.schedule = s;
    KILN_RETURN_IF_ERROR(VerifyBufferAssignment(m, *ba, c).WithContext(
        s == &post ? "post-order schedule" : "memory-aware schedule"));
    if (stats && s == &post) *stats = ba->stats();
  }
  return OkStatus();
}

struct Outcome {
  int checked = 0, skipped = 0;
};

// Fuses one module and compares it with the original; returns false on a failure.
void CheckModule(const fs::path& path, Outcome& out) {
  SCOPED_TRACE(path.string());
  ParseOptions po;
  po.fill_elided_constants = true;
  auto parsed = ParseHloModule(ReadFile(path), po);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  std::unique_ptr<HloModule> m = std::move(parsed).value();
  if (!VerifyModule(*m).ok()) {
    ++out.skipped;
    return;
  }
  StatusOr<Literal> want = testing::EvaluateRandom(*m);
  Status fused = FuseForCpu(*m);
  ASSERT_TRUE(fused.ok()) << fused.ToString();
  Status assigned = AssignAndCheck(*m);
  EXPECT_TRUE(assigned.ok()) << assigned.ToString() << "\n" << m->ToString();
  if (!want.ok()) {  // the evaluator cannot run the original (unsupported op, bad indices...)
    ++out.skipped;
    return;
  }
  StatusOr<Literal> got = testing::EvaluateRandom(*m);
  ASSERT_TRUE(got.ok()) << got.status().ToString() << "\n" << m->ToString();
  EXPECT_TRUE(got->BitwiseEquals(*want)) << "got " << got->ToShortString() << "\nwant "
                                         << want->ToShortString() << "\n" << m->ToString();
  ++out.checked;
}

fs::path SharedDir() {
  const char* d = std::getenv("KILN_SHARED_DIR");
  return d ? fs::path(d) : fs::path();
}

TEST(FusionCorpusTest, BenchSmallAndFuzzModules) {
  fs::path shared = SharedDir();
  if (shared.empty() || !fs::exists(shared / "corpus")) GTEST_SKIP() << "KILN_SHARED_DIR not set";
  std::vector<fs::path> paths = Modules(shared / "corpus" / "xla-fuzz", ".hlo", false);
  for (const auto& e : fs::directory_iterator(shared / "bench" / "suite")) {
    std::string n = e.path().filename().string();
    if (n.size() > 6 && n.substr(n.size() - 6) == "_small" && fs::exists(e.path() / "module.hlo"))
      paths.push_back(e.path() / "module.hlo");
  }
  Outcome out;
  for (const fs::path& p : paths) CheckModule(p, out);
  std::printf("corpus: %d modules checked, %d skipped (evaluator cannot run them)\n",
              out.checked, out.skipped);
  EXPECT_GT(out.checked, 40);
}

TEST(FusionCorpusTest, ConformanceCases) {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) GTEST_SKIP() << "KILN_SOURCE_DIR not set";
  std::vector<fs::path> paths = Modules(fs::path(src) / "tests" / "data", "module.hlo", true);
  if (paths.empty()) GTEST_SKIP() << "no tests/data";
  Outcome out;
  for (const fs::path& p : paths) CheckModule(p, out);
  std::printf("fusion conformance cases: %d checked, %d skipped\n", out.checked, out.skipped);
  EXPECT_GT(out.checked, static_cast<int>(paths.size()) * 9 / 10);
}

// The big real modules (llama, mobilenet, maxtext: collectives, async ops, custom-calls): fused
// and assigned, not evaluated.
TEST(FusionCorpusTest, XlaModelsFuseVerifyAndAssign) {
  fs::path shared = SharedDir();
  if (shared.empty() || !fs::exists(shared / "corpus" / "xla-models")) GTEST_SKIP() << "no xla-models";
  int done = 0;
  for (const fs::path& p : Modules(shared / "corpus" / "xla-models", ".hlo", false)) {
    SCOPED_TRACE(p.string());
    ParseOptions po;
    po.fill_elided_constants = true;
    auto parsed = ParseHloModule(ReadFile(p), po);
    if (!parsed.ok()) continue;  // the parser's own tests cover these
    std::unique_ptr<HloModule> m = std::move(parsed).value();
    if (!VerifyModule(*m).ok()) continue;
    KernelCounts before = CountKernels(*m);
    Status fused = FuseForCpu(*m);
    ASSERT_TRUE(fused.ok()) << fused.ToString();
    KernelCounts after = CountKernels(*m);
    MemoryStats stats;
    Status assigned = AssignAndCheck(*m, &stats);
    EXPECT_TRUE(assigned.ok()) << assigned.ToString();
    std::printf("%-50s %5lld instructions -> %5lld kernels (%s)\n", p.filename().string().c_str(),
                static_cast<long long>(before.instructions), static_cast<long long>(after.kernels),
                after.ToString().c_str());
    ++done;
  }
  EXPECT_GT(done, 5);
}

TEST(FusionCorpusTest, BenchModuleKernelCounts) {
  fs::path shared = SharedDir();
  if (shared.empty() || !fs::exists(shared / "bench" / "suite")) GTEST_SKIP() << "no bench suite";
  std::vector<fs::path> paths = Modules(shared / "bench" / "suite", "module.hlo", true);
  for (const fs::path& p : paths) {
    SCOPED_TRACE(p.string());
    auto m = testing::ParseOrFail(ReadFile(p));
    ASSERT_NE(m, nullptr);
    KernelCounts before = CountKernels(*m);
    ASSERT_TRUE(FuseForCpu(*m).ok());
    KernelCounts after = CountKernels(*m);
    MemoryStats stats;
    Status assigned = AssignAndCheck(*m, &stats);
    EXPECT_TRUE(assigned.ok()) << assigned.ToString();
    std::printf("%-40s %3lld instructions -> %3lld kernels (%lld fusions: %s)\n    %s\n",
                (p.parent_path().filename() / p.filename()).string().c_str(),
                static_cast<long long>(before.instructions), static_cast<long long>(after.kernels),
                static_cast<long long>(after.fusions), after.ToString().c_str(), stats.ToString().c_str());
    EXPECT_LE(after.kernels, before.kernels);
  }
}

}  // namespace
}  // namespace kiln
