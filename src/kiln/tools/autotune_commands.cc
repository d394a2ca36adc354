// kiln tune MODULE: tune a module's instructions on a device and fill the autotuning cache.
// kiln cache list|show|export|import|clear: inspect and move the cache (no GPU needed).
//
// Through the public API (Client::Tune): on cuda, `kiln tune` runs the GPU compiler (whose
// autotuning step sees the GEMM/convolution calls and fusions the compiler forms: a JAX module
// has none of them before compiling); on cpu it tunes the module as written with the host
// autotuning backends. `--device host` is the older name of cpu here.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/cache.h"
#include "kiln/autotune/settings.h"
#include "kiln/autotune/whole_program.h"
#include "kiln/base/strings.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

std::string FormatTime(double us) {
  if (us <= 0) return "-";
  char buf[32];
  if (us < 1000) {
    std::snprintf(buf, sizeof(buf), "%.1f us", us);
  } else if (us < 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f ms", us / 1000);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", us / 1e6);
  }
  return buf;
}

std::string Clip(std::string s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// Rows of cells printed as left-aligned columns, two spaces apart.
void PrintTable(std::ostream& os, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    os << line << "\n";
  }
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open ", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteWholeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return FailedPrecondition("cannot write ", path);
  return OkStatus();
}

// ---- kiln cache -----------------------------------------------------------------------------

struct CacheArgs {
  std::string cache_dir;
  std::string key;
  std::string file;
};

StatusOr<std::unique_ptr<autotune::Cache>> OpenForInspection(const CacheArgs& a) {
  return autotune::Cache::Create(
      {.directory = autotune::ResolveAutotuneCacheDir(a.cache_dir), .mode = autotune::CacheMode::kReadOnly});
}

int CacheList(const CacheArgs& a) {
  auto cache = OpenForInspection(a);
  if (!cache.ok()) return PrintError(cache.status().message()), kExitFailure;
  auto listing = (*cache)->List();
  if (!listing.ok()) return PrintError(listing.status().message()), kExitFailure;
  if (listing->entries.empty() && listing->invalid.empty()) {
    std::cout << "no autotuning entries in " << (*cache)->directory() << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"KEY", "DEVICE", "KIND", "CHOSEN", "TIME", "CANDIDATES", "CREATED"}};
  for (const auto& [path, e] : listing->entries) {
    rows.push_back({e.key.Hash().substr(0, 16), e.key.DeviceSummary(), e.kind,
                    Clip(e.result.config.ToString(), 60), FormatTime(e.result.time_us),
                    StrCat(e.result.valid, "/", e.result.candidates), e.created});
  }
  PrintTable(std::cout, rows);
  for (const auto& [path, why] : listing->invalid) {
    std::cout << "invalid  " << path << ": " << why << "\n";
  }
  std::cout << listing->entries.size() << " entr" << (listing->entries.size() == 1 ? "y" : "ies");
  if (!listing->invalid.empty()) {
    std::cout << " and " << listing->invalid.size() << " invalid file"
              << (listing->invalid.size() == 1 ? "" : "s") << " (ignored; `kiln cache clear` "
              << "removes them)";
  }
  std::cout << " in " << (*cache)->directory() << "\n";
  return kExitOk;
}

int CacheShow(const CacheArgs& a) {
  auto cache = OpenForInspection(a);
  if (!cache.ok()) return PrintError(cache.status().message()), kExitFailure;
  auto found = (*cache)->Find(a.key);
  if (!found.ok()) {
    PrintError(found.status().message());
    return found.status().code() == StatusCode::kNotFound ? kExitFailure : kExitUsage;
  }
  std::cout << found->first << "\n" << found->second.ToJson().dump(2) << "\n";
  return kExitOk;
}

int CacheExport(const CacheArgs& a) {
  auto cache = OpenForInspection(a);
  if (!cache.ok()) return PrintError(cache.status().message()), kExitFailure;
  auto exported = (*cache)->Export();
  if (!exported.ok()) return PrintError(exported.status().message()), kExitFailure;
  std::string text = exported->dump(1) + "\n";
  if (a.file == "-") {
    std::cout << text;
  } else if (Status s = WriteWholeFile(a.file, text); !s.ok()) {
    return PrintError(s.message()), kExitFailure;
  }
  std::cerr << "exported " << (*exported)["entries"].size() << " entries from "
            << (*cache)->directory() << "\n";
  return kExitOk;
}

int CacheImport(const CacheArgs& a) {
  auto text = ReadWholeFile(a.file);
  if (!text.ok()) return PrintError(text.status().message()), kExitUsage;
  auto json = autotune::ParseJson(*text, a.file);
  if (!json.ok()) return PrintError(json.status().message()), kExitUsage;
  auto cache = autotune::Cache::Create({.directory = autotune::ResolveAutotuneCacheDir(a.cache_dir)});
  if (!cache.ok()) return PrintError(cache.status().message()), kExitFailure;
  auto stats = (*cache)->Import(*json);
  if (!stats.ok()) {
    PrintError(stats.status().message());
    return stats.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  std::cout << "imported " << stats->imported << ", unchanged " << stats->unchanged;
  if (stats->invalid > 0) std::cout << ", skipped " << stats->invalid << " invalid or foreign";
  std::cout << " into " << (*cache)->directory() << "\n";
  return kExitOk;
}

int CacheClear(const CacheArgs& a) {
  auto cache = OpenForInspection(a);
  if (!cache.ok()) return PrintError(cache.status().message()), kExitFailure;
  auto removed = (*cache)->Clear();
  if (!removed.ok()) return PrintError(removed.status().message()), kExitFailure;
  std::cout << "removed " << *removed << " file" << (*removed == 1 ? "" : "s") << " from "
            << (*cache)->directory() << "\n";
  return kExitOk;
}

// ---- kiln tune ------------------------------------------------------------------------------

struct TuneArgs {
  std::string module;
  std::string device;
  CompileFlags flags;
  std::string dump_json;
  std::string output;
  int repetitions = 5;
  bool quiet = false;
  // Time the whole program untuned and tuned after tuning (runs of each).
  int whole_program_runs = 10;
  // Note [Choices kept by the whole program]: "slower" (put tuned choices back one by one when
  // the tuned program is slower than the untuned one), "always", "never" (warn only).
  std::string keep_faster = "slower";
};

// Progress on one terminal line: bar, counts, elapsed time, the instruction being tuned.
class ProgressBar {
 public:
  void Update(const autotune::AutotuneProgress& p) {
    constexpr int kWidth = 24;
    int filled = p.groups_total > 0 ? kWidth * p.groups_done / p.groups_total : kWidth;
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f s", p.elapsed_s);
    std::string line = StrCat("\r[", std::string(filled, '#'), std::string(kWidth - filled, '-'),
                              "] ", p.groups_done, "/", p.groups_total, " instructions  ",
                              p.candidates_profiled, " candidates  ", secs, "  ",
                              Clip(p.current, 30));
    size_t visible = line.size();
    if (visible < last_) line += std::string(last_ - visible, ' ');
    last_ = visible;
    std::cerr << line << std::flush;
  }
  void Finish() {
    if (last_ > 0) std::cerr << "\r" << std::string(last_, ' ') << "\r" << std::flush;
  }

 private:
  size_t last_ = 0;
};

// Note [Choices kept by the whole program] (autotune/whole_program.h): the tuned program was
// slower than the untuned one, so each freshly tuned choice is tried back at its default config
// (its cache entry rewritten) and kept there where the whole program gets faster.
void KeepWhatTheWholeProgramPrefers(const TuneArgs& a, const Client& client, const HloModule& module,
                                    const std::string& where, const CompileOptions& with_cache,
                                    const autotune::AutotuneReport& report, double tuned_ms, double untuned_ms) {
  auto cache = autotune::Cache::Create({.directory = autotune::ResolveAutotuneCacheDir(with_cache.autotune.cache_dir)});
  struct Choice {
    autotune::CacheEntry entry;
    autotune::Config tuned, fallback;
    double tuned_us = 0, default_us = 0, speedup = 0;
    std::string names;
  };
  std::vector<Choice> choices;
  if (cache.ok()) {
    for (const autotune::InstructionReport& g : report.groups) {
      if (g.source != autotune::ChoiceSource::kTuned || !g.chosen || g.key_hash.empty()) continue;
      const autotune::CandidateRecord* def = nullptr;
      for (const autotune::CandidateRecord& c : g.candidates)
        if (c.is_default && c.valid()) def = &c;
      if (def == nullptr || def->config == *g.chosen) continue;
      auto found = (*cache)->Find(g.key_hash);
      if (!found.ok()) continue;
      choices.push_back(Choice{found->second, *g.chosen, def->config, g.time_us, g.default_us,
                               g.speedup_over_default(), StrJoin(g.names, ", ")});
    }
  }
  if (choices.empty()) {
    // Nothing freshly tuned differs from its default (cache hits are not re-decided).
    if (tuned_ms > untuned_ms * 1.02) {
      std::cout << "warning: the tuned program is slower than the untuned one and no tuned choice can be put back "
                   "(cache hits are not re-decided): run with --autotune off, or re-tune (`kiln cache clear`)\n";
    } else {
      std::cout << "whole program: 0 of 0 tuned choices put back to their defaults after 0 timings (none differs "
                   "from its default)\n";
    }
    return;
  }
  // The least certain first: the smallest gain measured alone.
  std::stable_sort(choices.begin(), choices.end(), [](const Choice& x, const Choice& y) { return x.speedup < y.speedup; });
  auto apply = [&](const std::vector<bool>& reverted) -> Status {
    for (size_t i = 0; i < choices.size(); ++i) {
      autotune::CacheEntry e = choices[i].entry;
      e.result.config = reverted[i] ? choices[i].fallback : choices[i].tuned;
      e.result.time_us = reverted[i] ? choices[i].default_us : choices[i].tuned_us;
      KILN_RETURN_IF_ERROR((*cache)->Store(e, /*force=*/true));
    }
    return OkStatus();
  };
  auto kept = autotune::KeepFasterChoices(
      choices.size(), tuned_ms, untuned_ms, [&](const std::vector<bool>& reverted) -> StatusOr<double> {
        KILN_RETURN_IF_ERROR(apply(reverted));
        return TimeWholeProgram(client, module, where, with_cache, 42, 3, a.whole_program_runs);
      },
      0.02, /*only_when_slower=*/a.keep_faster != "always");
  if (!kept.ok()) {
    std::cout << "warning: the tuned program is slower than the untuned one; putting choices back failed ("
              << kept.status().message() << "): the tuned choices stay\n";
    (void)apply(std::vector<bool>(choices.size(), false));
    return;
  }
  if (Status s = apply(kept->reverted); !s.ok()) {
    std::cout << "warning: could not write the kept choices: " << s.message() << "\n";
    return;
  }
  int back = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!kept->reverted[i]) continue;
    ++back;
    std::cout << "whole program: " << Clip(choices[i].names, 40) << " back to its default config "
              << Clip(choices[i].fallback.ToString(), 60) << "\n";
  }
  char line[200];
  std::snprintf(line, sizeof(line),
                "whole program: %d of %zu tuned choices put back to their defaults after %d timings: %.4f ms "
                "(untuned %.4f, tuned alone %.4f)",
                back, choices.size(), kept->timings, kept->ms, untuned_ms, tuned_ms);
  std::cout << line << "\n";
}

int Tune(TuneArgs& a, const Client& client) {
  auto module = LoadModule(a.module, LoadOptions{});
  if (!module.ok()) return PrintLoadError(a.module, module.status().message()), kExitUsage;
  std::string spec = a.device;
  if (spec == "host" || spec.rfind("host:", 0) == 0) spec = "cpu" + spec.substr(4);
  auto device = client.SelectDevice(spec);
  if (!device.ok()) return PrintError(device.status().message()), kExitUsage;
  auto options = MakeCompileOptions(client, a.flags);
  if (!options.ok()) return PrintError(options.status().message()), kExitUsage;
  options->autotune.repetitions = a.repetitions;
  options->keep_compiled_module_text = !a.output.empty();
  ProgressBar bar;
  bool show_progress = !a.quiet && isatty(STDERR_FILENO);
  if (show_progress) options->autotune.progress = [&bar](const auto& p) { bar.Update(p); };
  std::cerr << "tuning " << a.module << " on " << Client::DeviceName(*device) << ", cache "
            << autotune::ResolveAutotuneCacheDir(options->autotune.cache_dir) << " (" << options->autotune.cache_mode
            << ")\n";
  auto tuned = client.Tune(**module, Client::DeviceName(*device), *options);
  if (show_progress) bar.Finish();
  if (!tuned.ok()) {
    PrintError(tuned.status().message());
    return tuned.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const autotune::AutotuneReport* report = tuned->autotune.get();
  const std::string& tuned_text = tuned->compiled_module_text;
  std::vector<std::vector<std::string>> rows = {
      {"INSTRUCTION", "KIND", "CHOSEN", "TIME", "RUNNER-UP", "SPEEDUP", "SOURCE"}};
  for (const autotune::InstructionReport& g : report->groups) {
    std::string runner = g.runner_up ? StrCat(Clip(g.runner_up->ToString(), 40), " ",
                                              FormatTime(g.runner_up_us))
                                     : "-";
    double speedup = g.speedup_over_default();
    char sp[32];
    std::snprintf(sp, sizeof(sp), "%.2fx", speedup);
    rows.push_back({Clip(StrJoin(g.names, ", "), 32), g.kind,
                    g.chosen ? Clip(g.chosen->ToString(), 72) : "-", FormatTime(g.time_us), runner,
                    speedup > 0 ? sp : "-", std::string(autotune::ChoiceSourceName(g.source))});
  }
  if (report->groups.empty()) {
    std::cout << "nothing to tune: no backend of " << device->backend->name()
              << " has choices for this module's instructions\n";
  } else {
    PrintTable(std::cout, rows);
  }
  for (const autotune::InstructionReport& g : report->groups) {
    if (!g.note.empty()) std::cout << "note: " << StrJoin(g.names, ", ") << ": " << g.note << "\n";
  }
  std::cout << report->SummaryLine() << "\n";

  // Tuning measures each choice alone; the whole program decides. Both programs timed the way
  // `kiln bench` does (the tuned one reads the cache just filled).
  if (a.whole_program_runs > 0 && !report->groups.empty()) {
    CompileOptions untuned = *options;
    untuned.autotune.level = "off";
    untuned.autotune.force.clear();
    untuned.autotune.progress = nullptr;
    untuned.keep_compiled_module_text = false;
    CompileOptions with_cache = *options;
    with_cache.autotune.cache_mode = "read-only";
    with_cache.autotune.progress = nullptr;
    with_cache.keep_compiled_module_text = false;
    const std::string where = Client::DeviceName(*device);
    auto t0 = TimeWholeProgram(client, **module, where, untuned, 42, 3, a.whole_program_runs);
    auto t1 = TimeWholeProgram(client, **module, where, with_cache, 42, 3, a.whole_program_runs);
    if (!t0.ok() || !t1.ok()) {
      std::cout << "whole program: not timed (" << (t0.ok() ? t1.status() : t0.status()).message() << ")\n";
    } else {
      char line[160];
      std::snprintf(line, sizeof(line), "whole program: untuned %.4f ms, tuned %.4f ms (%.2fx)", *t0, *t1,
                    *t1 > 0 ? *t0 / *t1 : 0.0);
      std::cout << line << "\n";
      const bool slower = *t1 > *t0 * 1.02;
      if (a.keep_faster == "always" || (slower && a.keep_faster == "slower")) {
        KeepWhatTheWholeProgramPrefers(a, client, **module, where, with_cache, *report, *t1, *t0);
      } else if (slower) {
        std::cout << "warning: the tuned program is slower than the untuned one: the choices were measured "
                     "alone; run with --autotune off, or re-tune (`kiln cache clear`)\n";
      }
    }
  }

  if (!a.dump_json.empty()) {
    if (Status s = WriteWholeFile(a.dump_json, report->ToJson().dump(1) + "\n"); !s.ok()) {
      return PrintError(s.message()), kExitFailure;
    }
  }
  if (!a.output.empty()) {
    if (Status s = WriteWholeFile(a.output, tuned_text); !s.ok()) {
      return PrintError(s.message()), kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace

void AddCacheCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CacheArgs>();
  CLI::App* cache = app.add_subcommand(
      "cache", "Inspect and move the autotuning cache (works without a GPU)");
  cache->require_subcommand(1);
  cache->fallthrough();
  AddAutotuneCacheFlag(cache, &args->cache_dir);

  cache->add_subcommand("list", "one line per entry: key, device, kind, chosen config, time")
      ->callback([args, exit_code] { *exit_code = CacheList(*args); });
  CLI::App* show = cache->add_subcommand("show", "print one entry (give a prefix of its key)");
  show->add_option("KEY", args->key, "key or its first digits (see `kiln cache list`)")->required();
  show->callback([args, exit_code] { *exit_code = CacheShow(*args); });
  CLI::App* exp = cache->add_subcommand("export", "write every valid entry to one JSON file");
  exp->add_option("FILE", args->file, "output file ('-': standard output)")->required();
  exp->callback([args, exit_code] { *exit_code = CacheExport(*args); });
  CLI::App* imp = cache->add_subcommand("import", "add the entries of an exported file");
  imp->add_option("FILE", args->file, "a file written by `kiln cache export`")->required();
  imp->callback([args, exit_code] { *exit_code = CacheImport(*args); });
  cache->add_subcommand("clear", "remove every entry (and invalid or half-written files)")
      ->callback([args, exit_code] { *exit_code = CacheClear(*args); });
}

void AddTuneCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Measure every implementation choice of a module on a device and fill the cache");
  cmd->add_option("MODULE", args->module, "HLO text file")->required();
  cmd->add_option("--device", args->device,
                  "cpu | cuda, optionally NAME:ORDINAL (default: the best available)")
      ->check(DeviceNameValidator());
  AddCompileFlags(cmd, &args->flags);
  cmd->add_option("--dump-json", args->dump_json,
                  "write every candidate's timing and verdict to this JSON file");
  cmd->add_option("-o,--output", args->output, "write the tuned module (choices applied) here");
  cmd->add_option("--repetitions", args->repetitions, "timed runs per candidate (median)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("-q,--quiet", args->quiet, "no progress bar");
  cmd->add_option("--whole-program-runs", args->whole_program_runs,
                  "after tuning, time the whole program untuned and tuned with this many runs each (0: skip)")
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--keep-faster", args->keep_faster,
                  "after the whole-program timing, put tuned choices back to their defaults one by one where the "
                  "whole program runs faster: when the tuned program is slower (slower, default), always, or never")
      ->check(CLI::IsMember({"slower", "always", "never"}));
  cmd->callback([args, &client, exit_code] { *exit_code = Tune(*args, client); });
}

}  // namespace kiln
