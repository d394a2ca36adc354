// kiln: the command-line tool. Subcommands live in their own files (commands.h).
#include <new>

#include <CLI/CLI.hpp>

#include "kiln/api/client.h"
#include "kiln/api/environment.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "unknown"
#endif

int main(int argc, char** argv) {
  // The tool is where the environment is read (api/environment.h): the process-wide KILN_LOG_LEVEL,
  // KILN_CACHE_DIR and KILN_LOCK_DIR, and KILN_<FLAG> backend flags for the client.
  kiln::ApplyEnvironmentToProcess();
  auto client = kiln::Client::Create(kiln::ClientOptionsFromEnvironment());
  if (!client.ok()) {
    kiln::PrintError(client.status().message());
    return kiln::kExitFailure;
  }
  const kiln::Client& registry = **client;

  CLI::App app{"kiln: runs XLA HLO modules (the text JAX and XLA dump) and checks the results.", "kiln"};
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION_STRING);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  kiln run examples/mlp.hlo --print                 run with random inputs, print outputs\n"
      "  kiln run m.hlo --inputs in.npz --outputs out.npz  inputs in0, in1, ...; outputs out0, ...\n"
      "  kiln compare m.hlo --device cpu --reference interpreter\n"
      "  kiln compare m.hlo --expected case.npz            against stored outputs\n"
      "  kiln info m.hlo                                   ops, sizes, FLOPs\n"
      "  kiln compile m.hlo --device cpu --stats           passes, fusion, memory\n"
      "  kiln bench m.hlo --device cpu --iterations 50     median/min/max time\n"
      "  kiln devices                                      what this build can run on\n"
      "  kiln tune m.hlo --dump-json tune.json             autotune, fill the cache\n"
      "  kiln cache list                                   what the autotuning cache holds\n"
      "Exit status: 0 ok, 1 a run failed or results differ, 2 bad usage or malformed input.\n"
      "More: docs/cli.md, docs/npz.md.\n");

  int exit_code = kiln::kExitOk;
  kiln::AddRunCommand(app, registry, &exit_code);
  kiln::AddCompareCommand(app, registry, &exit_code);
  kiln::AddInfoCommand(app, &exit_code);
  kiln::AddDevicesCommand(app, registry, &exit_code);
  kiln::AddTuneCommand(app, registry, &exit_code);
  kiln::AddCacheCommand(app, &exit_code);
  kiln::AddCompileCommand(app, registry, &exit_code);
  kiln::AddBenchCommand(app, registry, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version are "errors" with exit code 0; everything else is a usage error.
    return app.exit(e) == 0 ? kiln::kExitOk : kiln::kExitUsage;
  } catch (const std::bad_alloc&) {
    // The tool's own allocations (random inputs, output summaries) of a module too large for
    // this host; the library reports its own as ResourceExhausted statuses.
    kiln::PrintError("out of host memory (the module's arrays do not fit in this machine's memory)");
    return kiln::kExitFailure;
  }
  return exit_code;
}
