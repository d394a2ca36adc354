#include "kiln/autotune/autotuner.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <unordered_set>

#include "kiln/autotune/cache_key.h"
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/printer.h"

namespace kiln::autotune {

namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Opcodes with nothing to implement: never worth asking backends about (and constants can be
// expensive to fingerprint).
bool NothingToTune(HloOpcode op) {
  return op == HloOpcode::kParameter || op == HloOpcode::kConstant || op == HloOpcode::kTuple ||
         op == HloOpcode::kGetTupleElement;
}

bool KindMatches(const std::string& kind, const std::string& pattern) {
  return kind == pattern || (pattern == "custom-call" && StartsWith(kind, "custom-call:"));
}

std::string ShortText(const HloInstruction& instr) {
  PrintOptions o;
  o.print_metadata = false;
  o.print_stack_frames = false;
  o.print_large_constants = false;
  std::string text = PrintInstruction(instr, o);
  return text.size() > 400 ? text.substr(0, 397) + "..." : text;
}

// "3 compile failed, 2 wrong result" over the profiled records.
std::string FailureCounts(const std::vector<CandidateRecord>& records) {
  int counts[kNumVerdicts] = {};
  for (const CandidateRecord& r : records) {
    if (r.profiled) ++counts[static_cast<int>(r.measurement.verdict)];
  }
  std::vector<std::string> parts;
  for (int v = 1; v < kNumVerdicts; ++v) {
    if (counts[v] > 0) parts.push_back(StrCat(counts[v], " ", VerdictName(static_cast<Verdict>(v))));
  }
  return StrJoin(parts, ", ");
}

}  // namespace

std::string_view TuningLevelName(TuningLevel level) {
  switch (level) {
    case TuningLevel::kOff: return "off";
    case TuningLevel::kOn: return "on";
    case TuningLevel::kExhaustive: return "exhaustive";
  }
  return "?";
}

StatusOr<TuningLevel> ParseTuningLevel(std::string_view name) {
  for (TuningLevel l : {TuningLevel::kOff, TuningLevel::kOn, TuningLevel::kExhaustive}) {
    if (TuningLevelName(l) == name) return l;
  }
  return InvalidArgument("unknown autotune level '", name, "' (expected off, on or exhaustive)");
}

StatusOr<ForcedConfig> ParseForcedConfig(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("a forced config is KIND=BACKEND or KIND=BACKEND:{json}, got '", text,
                           "'");
  }
  ForcedConfig f;
  f.kind = std::string(text.substr(0, eq));
  std::string_view rest = text.substr(eq + 1);
  size_t colon = rest.find(':');
  f.backend = std::string(rest.substr(0, colon));
  if (f.backend.empty()) return InvalidArgument("forced config '", text, "' names no backend");
  if (colon != std::string_view::npos) {
    KILN_ASSIGN_OR_RETURN(nlohmann::json params,
                          ParseJson(rest.substr(colon + 1), StrCat("forced config '", text, "'")));
    f.params = std::move(params);
  }
  return f;
}

BackendOptions MakeBackendOptions(const AutotuneOptions& options) {
  BackendOptions b;
  b.exhaustive = options.level == TuningLevel::kExhaustive;
  b.deterministic = options.deterministic;
  return b;
}

std::string_view ChoiceSourceName(ChoiceSource source) {
  switch (source) {
    case ChoiceSource::kTuned: return "tuned";
    case ChoiceSource::kCache: return "cache";
    case ChoiceSource::kForced: return "forced";
    case ChoiceSource::kDefault: return "default";
    case ChoiceSource::kOnlyCandidate: return "only candidate";
    case ChoiceSource::kFallback: return "fallback";
    case ChoiceSource::kMissing: return "missing";
  }
  return "?";
}

double InstructionReport::speedup_over_default() const {
  return default_us > 0 && time_us > 0 ? default_us / time_us : 0;
}

int AutotuneReport::CountSource(ChoiceSource source) const {
  return static_cast<int>(std::count_if(groups.begin(), groups.end(),
                                        [&](const auto& g) { return g.source == source; }));
}

std::string AutotuneReport::SummaryLine() const {
  std::vector<std::string> sources;
  auto add = [&](ChoiceSource s, std::string_view label) {
    if (int n = CountSource(s); n > 0) sources.push_back(StrCat(n, " ", label));
  };
  add(ChoiceSource::kTuned, "tuned");
  add(ChoiceSource::kCache, "from cache");
  add(ChoiceSource::kForced, "forced");
  add(ChoiceSource::kDefault, "default");
  add(ChoiceSource::kOnlyCandidate, "single candidate");
  add(ChoiceSource::kFallback, "fallback to default");
  add(ChoiceSource::kMissing, "missing from cache");
  std::string line = StrCat("autotune: ", instructions, " instruction", instructions == 1 ? "" : "s",
                            " (", groups.size(), " distinct)");
  if (!sources.empty()) line += ": " + StrJoin(sources, ", ");
  int total = 0;
  for (int v : verdicts) total += v;
  if (total > 0) {
    std::vector<std::string> parts;
    for (int v = 0; v < kNumVerdicts; ++v) {
      if (verdicts[v] > 0) parts.push_back(StrCat(verdicts[v], " ", VerdictName(static_cast<Verdict>(v))));
    }
    line += StrCat("; ", total, " candidate", total == 1 ? "" : "s", ": ", StrJoin(parts, ", "));
  }
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.2f", elapsed_s);
  return line + "; " + secs + " s";
}

nlohmann::json AutotuneReport::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const InstructionReport& g : groups) {
    nlohmann::json j = {{"names", g.names},         {"kind", g.kind},
                        {"text", g.text},           {"fingerprint", g.fingerprint},
                        {"key", g.key_hash},        {"source", ChoiceSourceName(g.source)},
                        {"time_us", g.time_us},     {"default_us", g.default_us},
                        {"note", g.note}};
    if (g.chosen) j["chosen"] = g.chosen->ToJson();
    if (g.runner_up) {
      j["runner_up"] = g.runner_up->ToJson();
      j["runner_up_us"] = g.runner_up_us;
    }
    nlohmann::json cands = nlohmann::json::array();
    for (const CandidateRecord& c : g.candidates) {
      const Measurement& m = c.measurement;
      cands.push_back({{"config", c.config.ToJson()},
                       {"profiled", c.profiled},
                       {"verdict", c.profiled ? VerdictName(m.verdict) : "not run"},
                       {"message", m.message},
                       {"median_us", m.median_us},
                       {"min_us", m.min_us},
                       {"max_us", m.max_us},
                       {"warmup_us", m.warmup_us},
                       {"timed", m.timed},
                       {"scratch_bytes", m.scratch_bytes},
                       {"compile_ms", c.compile_ms},
                       {"default", c.is_default},
                       {"reference", c.is_reference},
                       {"trusted", c.trusted}});
    }
    j["candidates"] = std::move(cands);
    out.push_back(std::move(j));
  }
  nlohmann::json verdict_counts = nlohmann::json::object();
  for (int v = 0; v < kNumVerdicts; ++v) {
    verdict_counts[std::string(VerdictName(static_cast<Verdict>(v)))] = verdicts[v];
  }
  return {{"groups", out},
          {"instructions", instructions},
          {"verdicts", verdict_counts},
          {"elapsed_s", elapsed_s},
          {"cache", {{"hits", cache.hits}, {"misses", cache.misses},
                     {"invalid", cache.invalid}, {"stores", cache.stores}}},
          {"summary", SummaryLine()}};
}

// ---------------------------------------------------------------------------------------------

struct Autotuner::Group {
  std::vector<HloInstruction*> members;
  std::string fingerprint;
  std::vector<std::pair<Backend*, std::vector<Config>>> configs;  // backends supporting it
  int total_configs = 0;
};

Autotuner::Autotuner(BackendList backends, const runtime::DeviceDescription& target,
                     runtime::Device* device, Cache* cache, const AutotuneOptions& options)
    : backends_(std::move(backends)),
      target_(target),
      device_(device),
      cache_(cache),
      options_(options) {
  options_.selection.deterministic = options.deterministic;
}

Autotuner::~Autotuner() = default;

StatusOr<std::unique_ptr<Autotuner>> Autotuner::Create(BackendList backends,
                                                       const runtime::DeviceDescription& target,
                                                       runtime::Device* device, Cache* cache,
                                                       const AutotuneOptions& options) {
  std::vector<std::string> names;
  for (const auto& b : backends) names.emplace_back(b->name());
  for (const std::string& excluded : options.exclude_backends) {
    if (std::find(names.begin(), names.end(), excluded) == names.end()) {
      return InvalidArgument("cannot exclude unknown autotuning backend '", excluded,
                             "' (have: ", StrJoin(names, ", "), ")");
    }
  }
  for (const std::string& allowed : options.allow_backends) {
    if (std::find(names.begin(), names.end(), allowed) == names.end()) {
      return InvalidArgument("cannot allow unknown autotuning backend '", allowed,
                             "' (have: ", StrJoin(names, ", "), ")");
    }
  }
  // The allowlist first, then the exclusions; the factory's order is kept.
  BackendList kept;
  for (auto& b : backends) {
    const auto& al = options.allow_backends;
    const auto& ex = options.exclude_backends;
    bool allowed = al.empty() || std::find(al.begin(), al.end(), b->name()) != al.end();
    bool excluded = std::find(ex.begin(), ex.end(), b->name()) != ex.end();
    if (allowed && !excluded) kept.push_back(std::move(b));
  }
  for (const ForcedConfig& f : options.forced) {
    bool known = std::any_of(kept.begin(), kept.end(),
                             [&](const auto& b) { return b->name() == f.backend; });
    if (!known) {
      return InvalidArgument("forced config for '", f.kind, "' names backend '", f.backend,
                             "', which is not in use (have: ", StrJoin(names, ", "), ")");
    }
  }
  std::unique_ptr<Autotuner> tuner(
      new Autotuner(std::move(kept), target, device, cache, options));
  tuner->pool_ = std::make_unique<ThreadPool>(options.compile_threads);
  return tuner;
}

StatusOr<std::unique_ptr<Autotuner>> Autotuner::Create(const BackendFactory& factory,
                                                       const runtime::DeviceDescription& target,
                                                       runtime::Device* device, Cache* cache,
                                                       const AutotuneOptions& options) {
  KILN_ASSIGN_OR_RETURN(BackendList backends, factory(target, device, MakeBackendOptions(options)));
  return Create(std::move(backends), target, device, cache, options);
}

std::vector<const Backend*> Autotuner::backends() const {
  std::vector<const Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

Backend* Autotuner::FindBackend(std::string_view name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

StatusOr<Config> Autotuner::DefaultFor(const Group& group) const {
  const auto& [backend, configs] = group.configs.front();
  StatusOr<Config> config = backend->DefaultConfig(*group.members.front());
  if (config.ok()) return config;
  // A backend that lists configs but has no default: its first is its preference.
  if (!configs.empty()) return configs.front();
  return config.status();
}

Status Autotuner::ApplyToGroup(const Group& group, const Config& config) {
  Backend* backend = FindBackend(config.backend());
  if (backend == nullptr) {
    return Internal("autotune: config ", config.ToString(), " names a backend not in use");
  }
  for (HloInstruction* instr : group.members) {
    Status s = backend->Apply(*instr, config);
    if (!s.ok()) {
      return s.WithContext(StrCat("autotune: applying ", config.ToString(), " to ", instr->name()));
    }
  }
  return OkStatus();
}

Status Autotuner::EnsureProfiler() {
  if (device_ == nullptr) {
    return FailedPrecondition("no device to measure on");
  }
  if (options_.lock_device && !lock_) {
    KILN_ASSIGN_OR_RETURN(lock_, DeviceLock::Acquire(device_->description(), options_.lock));
  }
  if (!profiler_) {
    KILN_ASSIGN_OR_RETURN(profiler_, Profiler::Create(*device_, options_.profile));
  }
  return OkStatus();
}

void Autotuner::ReportProgress(std::string current) {
  if (!options_.progress) return;
  progress_.elapsed_s = MillisSince(start_) / 1000.0;
  progress_.current = std::move(current);
  options_.progress(progress_);
}

StatusOr<AutotuneReport> Autotuner::Run(HloModule& module) {
  start_ = Clock::now();
  progress_ = AutotuneProgress{};
  AutotuneReport report;

  // Fusion bodies (and what they call) are implemented by their fusion instruction.
  std::unordered_set<const HloComputation*> fused;
  for (HloComputation* c : module.computations()) {
    for (HloInstruction* instr : c->instructions()) {
      if (instr->opcode() != HloOpcode::kFusion) continue;
      std::vector<const HloComputation*> stack(instr->called_computations().begin(),
                                               instr->called_computations().end());
      while (!stack.empty()) {
        const HloComputation* f = stack.back();
        stack.pop_back();
        if (!fused.insert(f).second) continue;
        for (HloInstruction* inner : f->instructions()) {
          for (HloComputation* callee : inner->called_computations()) stack.push_back(callee);
        }
      }
    }
  }

  std::vector<Group> groups;
  std::map<std::string, size_t> by_fingerprint;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    if (fused.count(c)) continue;
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (NothingToTune(instr->opcode())) continue;
      std::string fp = InstructionFingerprint(*instr);
      auto [it, inserted] = by_fingerprint.emplace(fp, groups.size());
      if (inserted) groups.push_back(Group{{}, fp, {}, 0});
      groups[it->second].members.push_back(instr);
    }
  }
  std::vector<Group> tunable;
  int config_errors = 0;
  for (Group& g : groups) {
    for (const auto& backend : backends_) {
      StatusOr<std::vector<Config>> configs = backend->SupportedConfigs(*g.members.front());
      if (!configs.ok()) {
        // A backend that cannot even list its configs does not take part (reported once).
        if (config_errors++ == 0) {
          KILN_LOG(Warning) << "autotune: " << backend->name() << " could not list configs for "
                            << g.members.front()->name() << ": " << configs.status().message();
        }
        continue;
      }
      if (configs->empty()) continue;
      g.total_configs += static_cast<int>(configs->size());
      g.configs.emplace_back(backend.get(), std::move(configs).value());
    }
    if (g.total_configs > 0) tunable.push_back(std::move(g));
  }
  progress_.groups_total = static_cast<int>(tunable.size());
  for (const Group& g : tunable) report.instructions += static_cast<int>(g.members.size());

  Status status = OkStatus();
  for (Group& g : tunable) {
    ReportProgress(g.members.front()->name());
    status = Decide(g, report);
    if (!status.ok()) break;
    ++progress_.groups_done;
  }
  ReportProgress("");
  // Measurements are over: free the device memory and let other processes tune.
  profiler_.reset();
  lock_.reset();
  if (cache_) report.cache = cache_->stats();
  report.elapsed_s = MillisSince(start_) / 1000.0;
  KILN_RETURN_IF_ERROR(status);

  std::vector<std::string> missing;
  for (const InstructionReport& g : report.groups) {
    if (g.source != ChoiceSource::kMissing) continue;
    missing.push_back(StrCat(StrJoin(g.names, ", "), " (", g.kind, ", key ",
                             g.key_hash.substr(0, 12), ")"));
  }
  if (!missing.empty()) {
    return FailedPrecondition(
        "the autotune cache ", cache_->directory(), " is required to be complete but lacks ",
        missing.size(), " instruction", missing.size() == 1 ? "" : "s", ": ",
        StrJoin(missing, "; "),
        ". Run `kiln tune` for this module on the target device (or import its export), or use "
        "--autotune-cache-mode read-write");
  }
  return report;
}

Status Autotuner::Decide(Group& group, AutotuneReport& report) {
  HloInstruction& first = *group.members.front();
  InstructionReport r;
  for (HloInstruction* m : group.members) r.names.push_back(m->name());
  r.kind = InstructionKind(first);
  r.text = ShortText(first);
  r.fingerprint = group.fingerprint;

  auto finish = [&](ChoiceSource source, const Config& config) -> Status {
    r.source = source;
    r.chosen = config;
    Status s = ApplyToGroup(group, config);
    report.groups.push_back(std::move(r));
    return s;
  };

  for (const ForcedConfig& f : options_.forced) {
    if (!KindMatches(r.kind, f.kind)) continue;
    Backend* backend = FindBackend(f.backend);
    Config config;
    if (f.params) {
      config = Config(f.backend, *f.params);
    } else {
      KILN_ASSIGN_OR_RETURN(config, backend->DefaultConfig(first));
    }
    return finish(ChoiceSource::kForced, config);
  }
  if (options_.level == TuningLevel::kOff) {
    KILN_ASSIGN_OR_RETURN(Config config, DefaultFor(group));
    return finish(ChoiceSource::kDefault, config);
  }
  // A single candidate needs no measurement. Without a device, though, backends may list only
  // what they know offline (cuBLASLt's heuristic needs a GPU), so the cache is asked first.
  const bool single = group.total_configs == 1;
  if (single && device_ != nullptr) {
    return finish(ChoiceSource::kOnlyCandidate, group.configs.front().second.front());
  }

  CacheKey key = MakeCacheKey(target_, backends(), options_.deterministic, first);
  r.key_hash = key.Hash();
  if (cache_ != nullptr && cache_->readable()) {
    const uint64_t invalid_before = cache_->stats().invalid;
    std::optional<CacheEntry> hit = cache_->Lookup(key);
    const bool corrupt = cache_->stats().invalid != invalid_before;  // retuning replaces it
    // A miss before the device lock is held may be an instruction another process is tuning
    // right now: take the lock (measuring needs it anyway) and look again once it is held, so
    // that two `kiln tune` runs on one cache never tune the same instruction twice. A hit
    // never waits for the lock.
    if (!hit && !corrupt && !single && device_ != nullptr && options_.lock_device && !lock_ &&
        cache_->mode() != CacheMode::kRequireComplete) {
      // A lock that cannot be had fails the measurement below, with its reason.
      if (EnsureProfiler().ok()) hit = cache_->Lookup(key);
    }
    if (hit) {
      bool upgrade = options_.level == TuningLevel::kExhaustive && !hit->result.exhaustive &&
                     cache_->writable() && device_ != nullptr;
      Backend* owner = FindBackend(hit->result.config.backend());
      if (owner != nullptr) {
        Status valid = owner->CheckConfig(first, hit->result.config);
        if (!valid.ok()) {
          KILN_LOG(Warning) << "autotune: ignoring the cache entry for " << first.name() << " ("
                            << hit->result.config.ToString() << "): " << valid.message()
                            << "; tuning it again";
          owner = nullptr;
          hit.reset();
        }
      }
      if (hit && !upgrade && owner != nullptr) {
        r.time_us = hit->result.time_us;
        r.runner_up = hit->result.runner_up;
        r.runner_up_us = hit->result.runner_up_us;
        r.default_us = hit->result.default_us;
        return finish(ChoiceSource::kCache, hit->result.config);
      }
    }
    if (single) return finish(ChoiceSource::kOnlyCandidate, group.configs.front().second.front());
    if (cache_->mode() == CacheMode::kRequireComplete) {
      r.source = ChoiceSource::kMissing;
      report.groups.push_back(std::move(r));
      return OkStatus();
    }
  }

  if (single) return finish(ChoiceSource::kOnlyCandidate, group.configs.front().second.front());
  Status tuned = Tune(group, r, report);
  if (tuned.ok() && r.chosen) {
    if (cache_ != nullptr && cache_->writable()) {
      CacheEntry entry;
      entry.key = key;
      entry.kind = r.kind;
      entry.instruction_text = r.text;
      entry.result.config = *r.chosen;
      entry.result.time_us = r.time_us;
      entry.result.runner_up = r.runner_up;
      entry.result.runner_up_us = r.runner_up_us;
      entry.result.default_us = r.default_us;
      entry.result.candidates = static_cast<int>(r.candidates.size());
      entry.result.valid = static_cast<int>(std::count_if(
          r.candidates.begin(), r.candidates.end(), [](const auto& c) { return c.valid(); }));
      entry.result.exhaustive = options_.level == TuningLevel::kExhaustive;
      entry.result.scratch_bytes = 0;
      for (const auto& c : r.candidates) {
        if (c.config == *r.chosen) entry.result.scratch_bytes = c.measurement.scratch_bytes;
      }
      Status stored = cache_->Store(entry);
      if (!stored.ok()) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
          KILN_LOG(Warning) << "autotune: cannot store results in the cache: " << stored.message();
        }
      }
    }
    return finish(ChoiceSource::kTuned, *r.chosen);
  }
  // Not tunable after all: the default, with the reason.
  r.note = tuned.ok() ? StrCat("no valid candidate (", FailureCounts(r.candidates), ")")
                      : StrCat("not tuned: ", tuned.message());
  KILN_ASSIGN_OR_RETURN(Config config, DefaultFor(group));
  r.note += "; default config applied";
  return finish(ChoiceSource::kFallback, config);
}

Status Autotuner::Tune(Group& group, InstructionReport& out, AutotuneReport& report) {
  KILN_RETURN_IF_ERROR(EnsureProfiler());
  const HloInstruction& instr = *group.members.front();
  KILN_RETURN_IF_ERROR(profiler_->Prepare(instr));

  std::vector<CandidateRecord>& records = out.candidates;
  std::vector<Backend*> owners;
  for (const auto& [backend, configs] : group.configs) {
    for (const Config& c : configs) {
      CandidateRecord rec;
      rec.config = c;
      rec.trusted = !backend->CanProduceWrongResults();
      records.push_back(std::move(rec));
      owners.push_back(backend);
    }
  }
  if (StatusOr<Config> def = DefaultFor(group); def.ok()) {
    auto it = std::find_if(records.begin(), records.end(),
                           [&](const CandidateRecord& r) { return r.config == *def; });
    if (it != records.end()) {
      it->is_default = true;
    } else if (Backend* b = FindBackend(def->backend())) {
      CandidateRecord rec;
      rec.config = *def;
      rec.trusted = !b->CanProduceWrongResults();
      rec.is_default = true;
      records.push_back(std::move(rec));
      owners.push_back(b);
    }
  }

  // Compile everything in parallel; Backend::Compile is thread-safe by contract.
  const int n = static_cast<int>(records.size());
  std::vector<std::unique_ptr<Candidate>> compiled(n);
  std::vector<Status> errors(n);
  pool_->ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto t0 = Clock::now();
      StatusOr<std::unique_ptr<Candidate>> c = owners[i]->Compile(instr, records[i].config);
      records[i].compile_ms = MillisSince(t0);
      if (c.ok() && *c == nullptr) c = Internal("Compile returned no candidate");
      if (c.ok()) {
        compiled[i] = std::move(c).value();
      } else {
        errors[i] = c.status();
      }
    }
  });
  for (int i = 0; i < n; ++i) {
    if (compiled[i]) continue;
    records[i].profiled = true;
    records[i].measurement.verdict = Verdict::kCompileFailed;
    std::string msg = errors[i].message();
    records[i].measurement.message = msg.substr(0, msg.find('\n'));
    ++report.verdicts[static_cast<int>(Verdict::kCompileFailed)];
  }

  auto profile = [&](int i, const ProfileRequest& request) {
    records[i].measurement = profiler_->Profile(*compiled[i], request);
    records[i].profiled = true;
    ++report.verdicts[static_cast<int>(records[i].measurement.verdict)];
    ++progress_.candidates_profiled;
    ReportProgress(instr.name());
  };
  const bool time_it = !options_.deterministic;

  // The reference: the first trusted candidate that runs cleanly.
  int reference = -1;
  for (int i = 0; i < n && reference < 0; ++i) {
    if (!records[i].trusted || !compiled[i]) continue;
    profile(i, {.make_reference = true, .time_it = time_it});
    if (records[i].valid()) {
      reference = i;
      records[i].is_reference = true;
    }
  }
  // Without a trusted candidate (kiln's generated kernels have no library twin), the default
  // config -- what runs untuned -- is the reference the others must agree with.
  if (reference < 0) {
    for (int i = 0; i < n && reference < 0; ++i) {
      if (!records[i].is_default || records[i].profiled || !compiled[i]) continue;
      profile(i, {.make_reference = true, .time_it = time_it});
      if (records[i].valid()) {
        reference = i;
        records[i].is_reference = true;
      }
    }
  }
  if (reference < 0) {
    bool untrusted = std::any_of(records.begin(), records.end(),
                                 [](const CandidateRecord& r) { return !r.trusted; });
    if (untrusted) out.note = "no reference result (no trusted or default candidate ran): outputs unchecked";
  }

  double best = reference >= 0 ? records[reference].measurement.median_us
                               : std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    if (records[i].profiled || !compiled[i]) continue;
    if (options_.deterministic) {
      // The first valid candidate in order wins: nothing after it needs running.
      bool earlier_valid = std::any_of(records.begin(), records.begin() + i,
                                       [](const CandidateRecord& r) { return r.valid(); });
      if (earlier_valid) break;
    }
    profile(i, {.best_us = best, .time_it = time_it});
    if (records[i].valid()) best = std::min(best, records[i].measurement.median_us);
  }
  compiled.clear();  // candidates may hold device modules; release them before the next group

  Selection s = SelectCandidate(records, options_.selection);
  if (s.chosen < 0) return OkStatus();  // Decide falls back to the default
  out.chosen = records[s.chosen].config;
  out.time_us = records[s.chosen].measurement.median_us;
  if (s.runner_up >= 0) {
    out.runner_up = records[s.runner_up].config;
    out.runner_up_us = records[s.runner_up].measurement.median_us;
  }
  for (const CandidateRecord& r : records) {
    if (r.is_default && r.valid()) out.default_us = r.measurement.median_us;
  }
  return OkStatus();
}

}  // namespace kiln::autotune
