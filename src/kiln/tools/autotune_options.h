// The autotuning flags every `kiln` command that compiles for a device shares, parsed in one
// place so that tune, compile, run and bench spell and default them alike:
//
//   --autotune off|on|exhaustive       tuning level (default on)
//   --autotune-cache DIR               cache directory (default $KILN_CACHE_DIR/autotune, else
//                                      $XDG_CACHE_HOME/kiln/autotune, else ~/.cache/kiln/autotune)
//   --autotune-cache-mode MODE         off | read-only | read-write (default) | require-complete
//   --autotune-deterministic           first valid config in fixed order, not the fastest
//   --autotune-backends NAME[,NAME...]  only these backends (repeatable; exclusions apply after)
//   --autotune-exclude BACKEND         leave a backend out (repeatable)
//   --autotune-force KIND=BACKEND[:JSON]  force a config on every instruction of a kind
//                                      (repeatable; for debugging)
//   --autotune-dump-json FILE          every candidate's timing and verdict (AutotuneReport)
//
// A command adopts them with AddAutotuneFlags and turns them into options with
// MakeAutotuneOptions / OpenAutotuneCache when it runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/backend.h"
#include "kiln/autotune/cache.h"
#include "kiln/base/status.h"

namespace kiln {

struct AutotuneFlags {
  std::string level = "on";
  std::string cache_dir;  // empty: the default directory
  std::string cache_mode = "read-write";
  bool deterministic = false;
  std::vector<std::string> backends;  // empty: every backend of the factory
  std::vector<std::string> exclude;
  std::vector<std::string> force;
  std::string dump_json;  // empty: don't
};

// Adds every flag above to `cmd`, stored into *flags (which must outlive parsing).
void AddAutotuneFlags(CLI::App* cmd, AutotuneFlags* flags);
// Adds only --autotune-cache (for `kiln cache`).
void AddAutotuneCacheFlag(CLI::App* cmd, std::string* cache_dir);

// The flag's directory, or DefaultAutotuneCacheDir() when it is empty.
std::string ResolveAutotuneCacheDir(const std::string& flag);

// InvalidArgument naming the flag for a bad level, mode or forced config.
StatusOr<autotune::AutotuneOptions> MakeAutotuneOptions(const AutotuneFlags& flags);
// The cache the flags ask for (mode off still returns a Cache, which reads and writes nothing).
StatusOr<std::unique_ptr<autotune::Cache>> OpenAutotuneCache(const AutotuneFlags& flags);

// Writes report.ToJson() to flags.dump_json when it is set.
Status WriteAutotuneJson(const AutotuneFlags& flags, const autotune::AutotuneReport& report);

// The autotuning factories built into this binary: "host" always; "cuda" when the CUDA driver
// is built (src/kiln/cuda/autotune).
Status RegisterBuiltinAutotuneFactories(autotune::BackendFactoryRegistry& registry);

}  // namespace kiln
