#include "kiln/autotune/settings.h"

#include <fstream>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/cache.h"

namespace kiln::autotune {

std::string ResolveAutotuneCacheDir(const std::string& cache_dir) {
  return cache_dir.empty() ? DefaultAutotuneCacheDir() : cache_dir;
}

StatusOr<AutotuneOptions> MakeAutotuneOptions(const AutotuneSettings& settings) {
  AutotuneOptions options;
  auto level = ParseTuningLevel(settings.level);
  if (!level.ok()) return level.status().WithContext("--autotune");
  options.level = *level;
  options.deterministic = settings.deterministic;
  options.allow_backends = settings.backends;
  options.exclude_backends = settings.exclude;
  for (const std::string& f : settings.force) {
    auto forced = ParseForcedConfig(f);
    if (!forced.ok()) return forced.status().WithContext("--autotune-force");
    options.forced.push_back(std::move(forced).value());
  }
  if (settings.repetitions < 0) return InvalidArgument("--repetitions: must be at least 1, not ", settings.repetitions);
  if (settings.repetitions > 0) options.profile.repetitions = settings.repetitions;
  options.progress = settings.progress;
  return options;
}

StatusOr<std::unique_ptr<Cache>> OpenAutotuneCache(const AutotuneSettings& settings) {
  auto mode = ParseCacheMode(settings.cache_mode);
  if (!mode.ok()) return mode.status().WithContext("--autotune-cache-mode");
  return Cache::Create({.directory = ResolveAutotuneCacheDir(settings.cache_dir), .mode = *mode});
}

Status WriteAutotuneJson(const AutotuneSettings& settings, const AutotuneReport& report) {
  if (settings.dump_json.empty()) return OkStatus();
  std::ofstream out(settings.dump_json, std::ios::binary);
  out << report.ToJson().dump(1) << "\n";
  out.close();
  if (!out) return FailedPrecondition("cannot write ", settings.dump_json);
  return OkStatus();
}

}  // namespace kiln::autotune
