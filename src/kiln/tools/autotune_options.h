// The flags every `kiln` command that compiles for a device shares, defined in one place so
// that tune, compile, run, bench and compare spell and default them alike:
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
//   --flag NAME=VALUE                  a backend flag (repeatable; `kiln devices --flags` lists
//                                      them); KILN_<NAME> in the environment does the same
//   --threads N                        host threads of the cpu backend, 1..1024 (default: all
//                                      cores)
//
// They fill autotune::AutotuneSettings and the public API's CompileOptions (api/client.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/api/client.h"
#include "kiln/autotune/settings.h"
#include "kiln/base/status.h"

namespace kiln {

// Adds the --autotune* flags to `cmd`, stored into *settings (which must outlive parsing).
void AddAutotuneFlags(CLI::App* cmd, autotune::AutotuneSettings* settings);
// Adds only --autotune-cache (for `kiln cache`).
void AddAutotuneCacheFlag(CLI::App* cmd, std::string* cache_dir);

// What a compiling command takes besides the module: threads, backend flags, autotuning.
struct CompileFlags {
  int threads = 0;
  std::vector<std::string> backend_flags;  // NAME=VALUE
  bool no_verify = false;
  autotune::AutotuneSettings autotune;
  int64_t replicas = 0;    // --replicas; 0: the module header's replica_count
  int64_t partitions = 0;  // --partitions; 0: the module header's num_partitions
};
// For --device and --reference: a name ("" is an error; leaving the flag out picks the best).
CLI::Validator DeviceNameValidator();
// For --seed: a decimal integer 0 to 2^64-1 (CLI11 alone reads "-1" as 2^64-1 and an overflowing
// number as the largest one).
CLI::Validator SeedValidator();

// Adds --threads, --flag, --replicas, --partitions and (with autotune) the --autotune* flags.
void AddCompileFlags(CLI::App* cmd, CompileFlags* flags, bool autotune = true);
// The CompileOptions the flags and the environment (api/environment.h) ask for; --flag wins
// over the environment. InvalidArgument for a --flag without '=' or a bad --threads.
StatusOr<CompileOptions> MakeCompileOptions(const Client& client, const CompileFlags& flags);

}  // namespace kiln
