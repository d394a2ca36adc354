// The autotuner on a CUDA device (label gpu; skips without one): GEMM custom calls tuned among
// cuBLAS and cuBLASLt, a planted wrong-answer and a planted out-of-bounds candidate caught, and
// a second compile that measures nothing.
#include <gtest/gtest.h>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/cuda/autotune/cuda_backends.h"
#include "kiln/cuda/cuda_test_util.h"
#include "kiln/hlo/computation.h"

namespace kiln::cuda {
namespace {

using autotune::Candidate;
using autotune::CandidateBuffers;
using autotune::Config;

constexpr char kModule[] = R"(
HloModule g
ENTRY e {
  a = f32[512,256]{1,0} parameter(0)
  b = f32[256,384]{1,0} parameter(1)
  g1 = f32[512,384]{1,0} custom-call(a, b), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":512,"n":384,"k":256}
  c = bf16[1024,1024]{1,0} parameter(2)
  d = bf16[1024,1024]{1,0} parameter(3)
  g2 = bf16[1024,1024]{1,0} custom-call(c, d), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":1024,"n":1024,"k":1024}
  ROOT t = (f32[512,384]{1,0}, bf16[1024,1024]{1,0}) tuple(g1, g2)
})";

// Candidates that misbehave with nothing but neutral stream operations: one writes 1.0 into
// every output element (wrong), one writes past the end of its output (out of bounds).
class PlantedCandidate : public Candidate {
 public:
  explicit PlantedCandidate(std::string kind) : kind_(std::move(kind)) {}
  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    runtime::DeviceMemory out = b.outputs[0];
    if (kind_ == "wrong") return stream.Memset32(out, out.size % 4 == 0 ? 0x3f803f80u : 0);
    KILN_RETURN_IF_ERROR(stream.Memset8(out, 0));
    return stream.Memset8(runtime::DeviceMemory{static_cast<char*>(out.ptr) + out.size, 512}, 0);
  }

 private:
  std::string kind_;
};

class PlantedBackend : public autotune::Backend {
 public:
  std::string_view name() const override { return "planted"; }
  std::string version() const override { return "1"; }
  bool CanProduceWrongResults() const override { return true; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsGemmCall(instr)) return std::vector<Config>{};
    return std::vector<Config>{Config("planted", {{"kind", "wrong"}}),
                               Config("planted", {{"kind", "oob"}})};
  }
  StatusOr<Config> DefaultConfig(const HloInstruction&) override {
    return Config("planted", {{"kind", "wrong"}});
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction&, const Config& c) override {
    return std::unique_ptr<Candidate>(new PlantedCandidate(c.params().value("kind", "")));
  }
  Status Apply(HloInstruction& instr, const Config& c) override {
    return autotune::WriteConfigToBackendConfig(instr, c);
  }
};

TEST(CudaAutotuneGpuTest, TunesGemmsAndCatchesPlantedCandidates) {
  StatusOr<CudaDevice*> device = testing::TestDevice();
  if (!device.ok()) GTEST_SKIP() << "no cuda device: " << device.status().message();
  autotune::testing::ScopedTempDir cache_dir, locks;
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, autotune::Cache::Create({.directory = cache_dir.path()}));
  autotune::AutotuneOptions options;
  options.lock.directory = locks.path();
  const runtime::DeviceDescription& desc = (*device)->description();

  auto backends_with_planted = [&]() -> StatusOr<autotune::BackendList> {
    KILN_ASSIGN_OR_RETURN(autotune::BackendList list,
                          CreateCudaBackends(desc, *device, autotune::MakeBackendOptions(options)));
    list.push_back(std::make_unique<PlantedBackend>());
    return list;
  };

  auto module = autotune::testing::ParseOrDie(kModule);
  ASSERT_NE(module, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, backends_with_planted());
  KILN_ASSERT_OK_AND_ASSIGN(auto tuner, autotune::Autotuner::Create(std::move(backends), desc,
                                                                    *device, cache.get(), options));
  KILN_ASSERT_OK_AND_ASSIGN(autotune::AutotuneReport report, tuner->Run(*module));
  std::cout << report.SummaryLine() << "\n";
  std::cout << report.ToJson().dump(1).substr(0, 6000) << "\n";

  ASSERT_EQ(report.groups.size(), 2u);
  for (const autotune::InstructionReport& g : report.groups) {
    SCOPED_TRACE(g.names[0]);
    EXPECT_EQ(g.source, autotune::ChoiceSource::kTuned) << g.note;
    ASSERT_TRUE(g.chosen.has_value());
    EXPECT_NE(g.chosen->backend(), "planted");
    EXPECT_TRUE(g.candidates[0].is_reference);  // cuBLAS's default
    int cublaslt = 0;
    for (const autotune::CandidateRecord& c : g.candidates) {
      if (c.config.backend() == "cublaslt") ++cublaslt;
      if (c.config.backend() == "planted") {
        std::string kind = c.config.params()["kind"];
        EXPECT_EQ(c.measurement.verdict, kind == "wrong" ? autotune::Verdict::kWrongResult
                                                         : autotune::Verdict::kRedzoneWritten)
            << kind << ": " << c.measurement.message;
      } else {
        // Library candidates are all right (some may be cut off as too slow).
        EXPECT_TRUE(c.measurement.ok() || c.measurement.verdict == autotune::Verdict::kTooSlow)
            << c.config.ToString() << ": " << autotune::VerdictName(c.measurement.verdict) << " "
            << c.measurement.message;
      }
    }
    EXPECT_GT(cublaslt, 0);
    EXPECT_GT(g.time_us, 0);
  }

  // A second compile of the same module: every choice from the cache, nothing measured.
  auto again = autotune::testing::ParseOrDie(kModule);
  KILN_ASSERT_OK_AND_ASSIGN(backends, backends_with_planted());
  KILN_ASSERT_OK_AND_ASSIGN(tuner, autotune::Autotuner::Create(std::move(backends), desc, *device,
                                                               cache.get(), options));
  KILN_ASSERT_OK_AND_ASSIGN(report, tuner->Run(*again));
  EXPECT_EQ(report.CountSource(autotune::ChoiceSource::kCache), 2);
  int measured = 0;
  for (int v : report.verdicts) measured += v;
  EXPECT_EQ(measured, 0);
  std::cout << report.SummaryLine() << "\n";
}

}  // namespace
}  // namespace kiln::cuda
