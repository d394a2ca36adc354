// The options of compiling and executing a module, shared by every backend. Plain structs; the
// comment on each field gives its default. Nothing here reads the environment: the `kiln` tool
// (and an embedder who wants the same behaviour) fills them, see api/environment.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "kiln/autotune/settings.h"

namespace kiln {

// Backend-specific settings, name -> value ("cpu_gemm_kernel" -> "eigen"). Each backend
// documents the names it takes (Backend::flag_help()), all starting with its platform name and
// an underscore; Compile rejects a name with its prefix that it does not know. Names of other
// platforms are ignored, so one set of flags can be given to every backend.
using BackendFlags = std::map<std::string, std::string, std::less<>>;

// The most host threads a compile may ask for (CompileOptions::threads): more would only cost
// memory and start-up time (each worker has its own queue and stack).
inline constexpr int kMaxHostThreads = 1024;

struct CompileOptions {
  // The device to compile for (its ordinal on the backend's platform). Default 0.
  int device_ordinal = 0;
  // Host threads the executable runs with, where the backend uses them (cpu); 0 (default):
  // one per hardware thread. Outside 0..kMaxHostThreads, Compile fails with InvalidArgument.
  int threads = 0;
  // Run the HLO verifier on the module first. Default true; callers that verified the module
  // already (the `kiln` tool's LoadModule) turn it off.
  bool verify = true;
  // Write the module after every pass that changed it into this directory. Default: don't.
  std::string dump_dir;
  // Write generated kernel sources into this directory (cuda). Default: don't.
  std::string kernel_dump_dir;
  // Autotuning (backends that tune: cuda). Default: level on, the default cache. A backend
  // without a device to measure on compiles with its default choices.
  autotune::AutotuneSettings autotune;
  // Backend-specific settings (see BackendFlags). Default: none.
  BackendFlags flags;
  // Keep the compiled module's text in CompileReport::compiled_module_text (`kiln tune -o`).
  // Default off.
  bool keep_compiled_module_text = false;
  // The participants the executable runs over: replica_count x num_partitions
  // (docs/collectives.md). 0 (default): the module header's value. A backend that runs one
  // participant only refuses more (Unimplemented).
  int64_t replica_count = 0;
  int64_t num_partitions = 0;
};

struct ExecuteOptions {
  // Seed of the stateful `rng` op and anything else random at run time. Default 0.
  uint64_t seed = 0;
  // Collect a per-kernel profile (Executable::RunReport), where the backend can. Default off.
  bool profile = false;
  // With profile: write a Chrome/Perfetto trace of the last profiled run here (cuda).
  std::string trace_path;
  // Fill the executable's temporaries with NaN bytes (0xff) before the run, so that an output
  // element no kernel writes shows up as NaN rather than as a stale value that happens to be
  // right (cuda; host backends start from fresh memory anyway). For tests and `kiln run`.
  bool poison = false;
  // Return no result buffers: run for timing only (`kiln bench`). Donated arguments are still
  // consumed. Default false.
  bool discard_results = false;
  // How long a participant waits for the others at one collective before the run fails
  // (DeadlineExceeded), in milliseconds. Default one minute.
  int64_t collective_timeout_ms = 60000;
};

}  // namespace kiln
