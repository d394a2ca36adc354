// AutotuneSettings: the autotuner's settings as a user states them (the `--autotune*` flags of
// the `kiln` tool, CompileOptions::autotune of the public API), turned into AutotuneOptions and
// a Cache in one place so that every caller spells and defaults them alike.
//
//   level            off | on (default) | exhaustive
//   cache_dir        cache directory; empty: DefaultAutotuneCacheDir()
//   cache_mode       off | read-only | read-write (default) | require-complete
//   deterministic    first valid config in fixed order, not the fastest
//   backends         only these autotuning backends (empty: all); `exclude` applies after
//   exclude          leave these backends out
//   force            KIND=BACKEND[:JSON]: use this config for every instruction of KIND
//   dump_json        write every candidate's timing and verdict (AutotuneReport) here
//   repetitions      timed runs per candidate (0: the profiler's default)
//   progress         called after each candidate and instruction group (`kiln tune`'s bar)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"

namespace kiln::autotune {

// autotuner.h and cache.h (kept out of this header, which the public API includes).
struct AutotuneOptions;
struct AutotuneProgress;
struct AutotuneReport;
class Cache;

struct AutotuneSettings {
  std::string level = "on";
  std::string cache_dir;
  std::string cache_mode = "read-write";
  bool deterministic = false;
  std::vector<std::string> backends;
  std::vector<std::string> exclude;
  std::vector<std::string> force;
  std::string dump_json;
  int repetitions = 0;
  std::function<void(const AutotuneProgress&)> progress;

  // Whether these settings ask for any tuning at all (a level other than off, or a forced
  // config).
  bool enabled() const { return level != "off" || !force.empty(); }
};

// The cache_dir, or DefaultAutotuneCacheDir() when it is empty.
std::string ResolveAutotuneCacheDir(const std::string& cache_dir);

// InvalidArgument naming the setting for a bad level, mode or forced config.
StatusOr<AutotuneOptions> MakeAutotuneOptions(const AutotuneSettings& settings);
// The cache the settings ask for (mode off still returns a Cache, which reads and writes
// nothing).
StatusOr<std::unique_ptr<Cache>> OpenAutotuneCache(const AutotuneSettings& settings);
// Writes report.ToJson() to settings.dump_json when it is set.
Status WriteAutotuneJson(const AutotuneSettings& settings, const AutotuneReport& report);

}  // namespace kiln::autotune
