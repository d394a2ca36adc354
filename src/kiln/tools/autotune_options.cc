#include "kiln/tools/autotune_options.h"

#include <fstream>

#include "kiln/autotune/host_backends.h"
#if defined(KILN_HAVE_CUDA_AUTOTUNE)
#include "kiln/cuda/autotune/cuda_backends.h"
#endif

namespace kiln {

void AddAutotuneCacheFlag(CLI::App* cmd, std::string* cache_dir) {
  cmd->add_option("--autotune-cache", *cache_dir,
                  "autotuning cache directory (default $KILN_CACHE_DIR/autotune, else "
                  "~/.cache/kiln/autotune)");
}

void AddAutotuneFlags(CLI::App* cmd, AutotuneFlags* flags) {
  cmd->add_option("--autotune", flags->level, "tuning level: off, on (default) or exhaustive")
      ->check(CLI::IsMember({"off", "on", "exhaustive"}));
  AddAutotuneCacheFlag(cmd, &flags->cache_dir);
  cmd->add_option("--autotune-cache-mode", flags->cache_mode,
                  "off, read-only, read-write (default) or require-complete (fail naming the "
                  "instructions the cache lacks)")
      ->check(CLI::IsMember({"off", "read-only", "read-write", "require-complete"}));
  cmd->add_flag("--autotune-deterministic", flags->deterministic,
                "pick the first valid config in the backends' fixed order, not the fastest");
  cmd->add_option("--autotune-backends", flags->backends,
                  "NAME[,NAME...]: ask only these backends for candidates (repeatable; "
                  "--autotune-exclude applies after)")
      ->delimiter(',');
  cmd->add_option("--autotune-exclude", flags->exclude, "leave this backend out (repeatable)");
  cmd->add_option("--autotune-force", flags->force,
                  "KIND=BACKEND[:JSON]: use this config for every instruction of KIND "
                  "(e.g. dot=host_gemm:{\"tile_m\":32,...}); repeatable, for debugging");
  cmd->add_option("--autotune-dump-json", flags->dump_json,
                  "write every tuned instruction's candidates (timing, verdict) to this JSON file");
}

Status WriteAutotuneJson(const AutotuneFlags& flags, const autotune::AutotuneReport& report) {
  if (flags.dump_json.empty()) return OkStatus();
  std::ofstream out(flags.dump_json, std::ios::binary);
  out << report.ToJson().dump(1) << "\n";
  out.close();
  if (!out) return FailedPrecondition("cannot write ", flags.dump_json);
  return OkStatus();
}

std::string ResolveAutotuneCacheDir(const std::string& flag) {
  return flag.empty() ? autotune::DefaultAutotuneCacheDir() : flag;
}

StatusOr<autotune::AutotuneOptions> MakeAutotuneOptions(const AutotuneFlags& flags) {
  autotune::AutotuneOptions options;
  auto level = autotune::ParseTuningLevel(flags.level);
  if (!level.ok()) return level.status().WithContext("--autotune");
  options.level = *level;
  options.deterministic = flags.deterministic;
  options.allow_backends = flags.backends;
  options.exclude_backends = flags.exclude;
  for (const std::string& f : flags.force) {
    auto forced = autotune::ParseForcedConfig(f);
    if (!forced.ok()) return forced.status().WithContext("--autotune-force");
    options.forced.push_back(std::move(forced).value());
  }
  return options;
}

StatusOr<std::unique_ptr<autotune::Cache>> OpenAutotuneCache(const AutotuneFlags& flags) {
  auto mode = autotune::ParseCacheMode(flags.cache_mode);
  if (!mode.ok()) return mode.status().WithContext("--autotune-cache-mode");
  return autotune::Cache::Create(
      {.directory = ResolveAutotuneCacheDir(flags.cache_dir), .mode = *mode});
}

Status RegisterBuiltinAutotuneFactories(autotune::BackendFactoryRegistry& registry) {
  KILN_RETURN_IF_ERROR(autotune::RegisterHostAutotuneFactory(registry));
#if defined(KILN_HAVE_CUDA_AUTOTUNE)
  KILN_RETURN_IF_ERROR(cuda::RegisterCudaAutotuneFactory(registry));
#endif
  return OkStatus();
}

}  // namespace kiln
