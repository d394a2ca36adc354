#include "kiln/tools/autotune_options.h"

#include <charconv>
#include <system_error>

#include "kiln/api/environment.h"
#include "kiln/base/strings.h"

namespace kiln {

void AddAutotuneCacheFlag(CLI::App* cmd, std::string* cache_dir) {
  cmd->add_option("--autotune-cache", *cache_dir,
                  "autotuning cache directory (default $KILN_CACHE_DIR/autotune, else "
                  "~/.cache/kiln/autotune)");
}

void AddAutotuneFlags(CLI::App* cmd, autotune::AutotuneSettings* settings) {
  cmd->add_option("--autotune", settings->level, "tuning level: off, on (default) or exhaustive")
      ->check(CLI::IsMember({"off", "on", "exhaustive"}));
  AddAutotuneCacheFlag(cmd, &settings->cache_dir);
  cmd->add_option("--autotune-cache-mode", settings->cache_mode,
                  "off, read-only, read-write (default) or require-complete (fail naming the "
                  "instructions the cache lacks)")
      ->check(CLI::IsMember({"off", "read-only", "read-write", "require-complete"}));
  cmd->add_flag("--autotune-deterministic", settings->deterministic,
                "pick the first valid config in the backends' fixed order, not the fastest");
  cmd->add_option("--autotune-backends", settings->backends,
                  "NAME[,NAME...]: ask only these backends for candidates (repeatable; "
                  "--autotune-exclude applies after)")
      ->delimiter(',');
  cmd->add_option("--autotune-exclude", settings->exclude, "leave this backend out (repeatable)");
  cmd->add_option("--autotune-force", settings->force,
                  "KIND=BACKEND[:JSON]: use this config for every instruction of KIND "
                  "(e.g. dot=host_gemm:{\"tile_m\":32,...}); repeatable, for debugging");
  cmd->add_option("--autotune-dump-json", settings->dump_json,
                  "write every tuned instruction's candidates (timing, verdict) to this JSON file");
}

CLI::Validator DeviceNameValidator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return s.empty() ? "a device name is required (cpu, cuda, interpreter, optionally NAME:ORDINAL); "
                           "leave the flag out for the best available"
                         : std::string();
      },
      "DEVICE");
}

CLI::Validator SeedValidator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          return "expected a decimal integer from 0 to 18446744073709551615, got '" + s + "'";
        return std::string();
      },
      "UINT64");
}

void AddCompileFlags(CLI::App* cmd, CompileFlags* flags, bool autotune) {
  cmd->add_option("--threads", flags->threads, "host threads for the cpu backend (and the interpreter's large dots and convolutions), 1 to 1024 (default: all cores)")
      ->check(CLI::Range(1, kMaxHostThreads));
  cmd->add_option("--flag", flags->backend_flags,
                  "NAME=VALUE: a backend flag (repeatable; `kiln devices --flags` lists them; "
                  "KILN_<NAME> in the environment does the same)");
  cmd->add_option("--replicas", flags->replicas,
                  "run over N replicas (default: the module's replica_count; docs/collectives.md)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--partitions", flags->partitions,
                  "run over M partitions (default: the module's num_partitions)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  if (autotune) AddAutotuneFlags(cmd, &flags->autotune);
}

StatusOr<CompileOptions> MakeCompileOptions(const Client& client, const CompileFlags& flags) {
  CompileOptions o;
  o.threads = flags.threads;
  o.verify = false;  // LoadModule verified the module (unless --no-verify asked it not to)
  o.autotune = flags.autotune;
  o.replica_count = flags.replicas;
  o.num_partitions = flags.partitions;
  o.flags = BackendFlagsFromEnvironment(client.registry());
  for (const std::string& f : flags.backend_flags) {
    size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgument("--flag ", f, ": expected NAME=VALUE");
    o.flags[f.substr(0, eq)] = f.substr(eq + 1);
  }
  return o;
}

}  // namespace kiln
