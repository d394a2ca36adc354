// FakeBackend: a scripted autotuning backend on the host platform, for tests.
//
// It supports instructions whose result and operands are all f32 arrays with the same element
// count (add, multiply, ...), and computes out[i] = sum of the operands' element i (the right
// answer for `add`, so that a trusted FakeBackend can serve as the reference). Each config is
// {"id": N}; the script says what config N does:
//
//   FakeBackend backend("fast", /*can_be_wrong=*/true, device, {
//       {.id = 0, .behavior = FakeBehavior::kCorrect, .busy_us = 2000},
//       {.id = 1, .behavior = FakeBehavior::kRedzoneWrite}});
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/autotune/backend.h"

namespace kiln::autotune::testing {

enum class FakeBehavior {
  kCorrect,       // writes the right answer
  kWrong,         // writes the right answer plus one in every element
  kPartial,       // leaves the last element unwritten
  kRedzoneWrite,  // right answer, plus one float written 8 bytes past the output's end
  kFrontWrite,    // right answer, plus one float written 4 bytes before the output
  kCompileError,  // Compile fails
  kEnqueueError,  // Launch returns an error without enqueueing
  kKernelError,   // the kernel fails while running (the stream's sticky error)
};

struct FakeConfig {
  int id = 0;
  FakeBehavior behavior = FakeBehavior::kCorrect;
  int busy_us = 0;             // the kernel spins this long (steady clock) before working
  uint64_t scratch_bytes = 0;  // reported by the candidate (and zero-filled by it)
};

class FakeBackend : public Backend {
 public:
  // `device` (a host-platform device) may be null: Compile then fails.
  FakeBackend(std::string name, bool can_be_wrong, runtime::Device* device,
              std::vector<FakeConfig> configs, int default_index = 0, std::string version = "1");

  std::string_view name() const override { return name_; }
  std::string version() const override { return version_; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override;
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override;
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override;
  Status Apply(HloInstruction& instr, const Config& config) override;
  bool CanProduceWrongResults() const override { return can_be_wrong_; }
  // {"id": N} with N one of the script's ids.
  Status CheckConfig(const HloInstruction& instr, const Config& config) override;

  static Config MakeConfig(std::string backend, int id);

  // Calls so far (tests check that a cache hit compiles and runs nothing).
  int compile_calls() const { return compile_calls_.load(); }
  int launch_calls() const { return launch_calls_->load(); }
  // SupportedConfigs calls; shared so a test can still read it after the autotuner dropped
  // (destroyed) this backend, e.g. because it is not on the allowlist.
  std::shared_ptr<const std::atomic<int>> supported_calls() const { return supported_calls_; }

 private:
  std::string name_;
  bool can_be_wrong_;
  runtime::Device* device_;
  std::vector<FakeConfig> configs_;
  int default_index_;
  std::string version_;
  std::atomic<int> compile_calls_{0};
  std::shared_ptr<std::atomic<int>> launch_calls_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> supported_calls_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace kiln::autotune::testing
