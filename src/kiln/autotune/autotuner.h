// Autotuner: picks an implementation for every tunable instruction of a module by measurement,
// remembers the choice in the cache, and writes it into the module.
//
//   KILN_ASSIGN_OR_RETURN(auto tuner, Autotuner::Create(factory, device->description(), device,
//                                                       cache.get(), options));
//   KILN_ASSIGN_OR_RETURN(AutotuneReport report, tuner->Run(module));
//   std::cerr << report.SummaryLine() << "\n";
//
// Run, for the module's instructions outside fusion bodies:
//   1. groups identical instructions (same InstructionFingerprint): each group is tuned once and
//      the result applied to all of its members;
//   2. asks every backend (only the allowed ones when there is an allowlist, minus excluded
//      ones) for its SupportedConfigs; a group no backend supports is left alone;
//   3. decides, in this order: a forced config for the instruction's kind; the default config
//      when tuning is off; the only candidate when there is one (without a device: after asking
//      the cache, since backends may list fewer configs offline); a cache hit; otherwise tunes
//      (or, with a require-complete cache, records the group as missing);
//   4. tuning: compiles every candidate on a thread pool, profiles them one by one under the
//      device lock (profiler.h) — first the trusted backends' candidates until one yields the
//      reference outputs (none trusted: the default config's outputs are the reference), then
//      the others — selects (selection.h), stores the result;
//   5. applies the choice to every member (Backend::Apply).
// A group that cannot be tuned (no valid candidate, no device) gets its default config and a
// note in the report. With a
// require-complete cache, Run fails at the end naming every missing instruction (the hits found
// meanwhile are applied).
//
// Thread safety: one Run at a time per Autotuner.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/autotune/backend.h"
#include "kiln/autotune/cache.h"
#include "kiln/autotune/device_lock.h"
#include "kiln/autotune/profiler.h"
#include "kiln/autotune/selection.h"
#include "kiln/base/status.h"
#include "kiln/base/thread_pool.h"
#include "kiln/hlo/module.h"

namespace kiln::autotune {

enum class TuningLevel {
  kOff,         // default configs, no measurement, no cache
  kOn,          // backends' usual candidate lists (the default)
  kExhaustive,  // every config the backends have
};
std::string_view TuningLevelName(TuningLevel level);  // "off", "on", "exhaustive"
StatusOr<TuningLevel> ParseTuningLevel(std::string_view name);

// A config forced onto every instruction of one kind, for debugging.
struct ForcedConfig {
  // InstructionKind to match ("dot", "fusion", "custom-call:__cublas$lt$matmul"); a bare
  // "custom-call" matches every custom call.
  std::string kind;
  std::string backend;
  // The backend's params; nullopt: the backend's DefaultConfig.
  std::optional<nlohmann::json> params;
};
// "KIND=BACKEND" or "KIND=BACKEND:{json params}".
StatusOr<ForcedConfig> ParseForcedConfig(std::string_view text);

struct AutotuneProgress {
  int groups_done = 0;
  int groups_total = 0;
  int candidates_profiled = 0;
  double elapsed_s = 0;
  std::string current;  // the instruction being tuned ("dot.3"), empty when done
};

struct AutotuneOptions {
  TuningLevel level = TuningLevel::kOn;
  // Pick the first valid candidate in the backends' order instead of the fastest (and ask
  // backends for deterministic configs only).
  bool deterministic = false;
  // Non-empty: only these backends (by name) are kept; the others are dropped in Create and
  // never asked for candidates. Order does not matter (the factory's order is kept).
  std::vector<std::string> allow_backends;
  // These backends are dropped (applied after allow_backends). Create fails with
  // InvalidArgument, naming the known backends, when either list names an unknown one.
  std::vector<std::string> exclude_backends;
  std::vector<ForcedConfig> forced;
  ProfileOptions profile;
  SelectionOptions selection;  // `deterministic` above overrides selection.deterministic
  // Threads compiling candidates; 0: one per hardware thread.
  int compile_threads = 0;
  // Hold the device's DeviceLock while profiling.
  bool lock_device = true;
  DeviceLockOptions lock;
  // Called after each candidate and each instruction group (on the calling thread).
  std::function<void(const AutotuneProgress&)> progress;
};

// The BackendOptions a factory should get for these autotune options.
BackendOptions MakeBackendOptions(const AutotuneOptions& options);

// How one group's config was decided.
enum class ChoiceSource {
  kTuned,          // measured now
  kCache,          // from the cache
  kForced,         // AutotuneOptions::forced
  kDefault,        // tuning off
  kOnlyCandidate,  // a single candidate: nothing to measure
  kFallback,       // tuning failed or was impossible (no valid candidate, no device): the
                   // default config was applied; the note says why
  kMissing,        // require-complete cache without this entry; nothing applied
};
std::string_view ChoiceSourceName(ChoiceSource source);  // "tuned", "cache", ...

struct InstructionReport {
  std::vector<std::string> names;  // every member of the group, in module order
  std::string kind;                // InstructionKind
  std::string text;                // the first member's HLO text (short form)
  std::string fingerprint;
  std::string key_hash;            // cache file stem (empty when no key was needed)
  ChoiceSource source = ChoiceSource::kTuned;
  std::optional<Config> chosen;
  double time_us = 0;
  std::optional<Config> runner_up;
  double runner_up_us = 0;
  double default_us = 0;
  std::vector<CandidateRecord> candidates;  // tuned groups only, in candidate order
  std::string note;                         // why no candidate was valid, and similar

  // Default time over chosen time (0 when either is unknown).
  double speedup_over_default() const;
};

struct AutotuneReport {
  std::vector<InstructionReport> groups;
  int instructions = 0;  // tunable instructions (members of all groups)
  int verdicts[kNumVerdicts] = {};
  double elapsed_s = 0;
  CacheStats cache;

  int CountSource(ChoiceSource source) const;
  // One line: "autotune: 7 instructions (4 distinct): 2 tuned, 1 from cache, 1 default;
  // 23 candidates: 18 ok, 2 wrong result, 3 too slow; 1.9 s".
  std::string SummaryLine() const;
  // Every group with every candidate's timing and verdict.
  nlohmann::json ToJson() const;
};

class Autotuner {
 public:
  // `backends` in preference order. `device` may be null (then nothing can be measured: tuning
  // off, forced configs, single candidates and cache hits still work); `cache` may be null
  // (mode off). Both must outlive the Autotuner.
  static StatusOr<std::unique_ptr<Autotuner>> Create(BackendList backends,
                                                     const runtime::DeviceDescription& target,
                                                     runtime::Device* device, Cache* cache,
                                                     const AutotuneOptions& options);
  // Calls `factory` with MakeBackendOptions(options), then Create.
  static StatusOr<std::unique_ptr<Autotuner>> Create(const BackendFactory& factory,
                                                     const runtime::DeviceDescription& target,
                                                     runtime::Device* device, Cache* cache,
                                                     const AutotuneOptions& options);
  ~Autotuner();

  // Tunes and rewrites `module` (see above).
  StatusOr<AutotuneReport> Run(HloModule& module);

  // The backends in use (after exclusions), in order.
  std::vector<const Backend*> backends() const;

 private:
  struct Group;
  Autotuner(BackendList backends, const runtime::DeviceDescription& target,
            runtime::Device* device, Cache* cache, const AutotuneOptions& options);
  Status Decide(Group& group, AutotuneReport& report);
  Status Tune(Group& group, InstructionReport& out, AutotuneReport& report);
  Status ApplyToGroup(const Group& group, const Config& config);
  Backend* FindBackend(std::string_view name) const;
  StatusOr<Config> DefaultFor(const Group& group) const;
  Status EnsureProfiler();
  void ReportProgress(std::string current);

  BackendList backends_;
  runtime::DeviceDescription target_;
  runtime::Device* device_;
  Cache* cache_;
  AutotuneOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<DeviceLock> lock_;
  std::unique_ptr<Profiler> profiler_;
  AutotuneProgress progress_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::autotune
