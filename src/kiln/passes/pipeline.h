// HloPassPipeline: an ordered list of passes, itself a pass.
//
// Between passes the pipeline can run a verifier (PipelineOptions::verify; on by default in
// debug builds), dump the module after each pass that changed it (dump_dir: files
// NN.<pipeline>.<pass>.hlo), and records per-pass timing and instruction counts
// (`kiln compile --stats` prints them). HloPassFix wraps a pass or pipeline and repeats it
// until nothing changes (bounded).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/passes/pass.h"

namespace kiln {

struct PipelineOptions {
  // Verifier to run after every pass that changed the module (nullptr: none). Defaults to the
  // HLO verifier in debug builds (set by the compilers that build pipelines).
  std::function<Status(const HloModule&)> verifier;
  // Directory to write the module into after each pass that changed it ("" = don't).
  std::string dump_dir;
};

struct PassStats {
  std::string name;
  double seconds = 0;
  bool changed = false;
  int64_t instructions_before = 0;
  int64_t instructions_after = 0;
};

class HloPassPipeline : public HloPass {
 public:
  explicit HloPassPipeline(std::string name, PipelineOptions options = {})
      : name_(std::move(name)), options_(std::move(options)) {}

  std::string_view name() const override { return name_; }

  template <typename T, typename... Args>
  T& AddPass(Args&&... args) {
    auto pass = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *pass;
    passes_.push_back(std::move(pass));
    return ref;
  }
  void AddPass(std::unique_ptr<HloPass> pass) { passes_.push_back(std::move(pass)); }

  StatusOr<bool> Run(HloModule& module) override;

  // Timing and counts of every pass run so far (nested pipelines contribute their passes,
  // prefixed "pipeline/").
  const std::vector<PassStats>& stats() const { return stats_; }
  const PipelineOptions& options() const { return options_; }

 private:
  std::string name_;
  PipelineOptions options_;
  std::vector<std::unique_ptr<HloPass>> passes_;
  std::vector<PassStats> stats_;
  int dump_counter_ = 0;
};

// Runs `pass` until it reports no change, at most `max_iterations` times.
class HloPassFix : public HloPass {
 public:
  HloPassFix(std::unique_ptr<HloPass> pass, int max_iterations = 25)
      : pass_(std::move(pass)), max_iterations_(max_iterations) {}
  std::string_view name() const override { return pass_->name(); }
  StatusOr<bool> Run(HloModule& module) override;
  HloPass& inner() { return *pass_; }

 private:
  std::unique_ptr<HloPass> pass_;
  int max_iterations_;
};

// Total instruction count over all computations.
int64_t CountInstructions(const HloModule& module);

}  // namespace kiln
