// The subcommands of the `kiln` tool, one file each, all over the public API (api/client.h).
// Each Add*Command defines its subcommand on `app`; when the subcommand runs, its exit code
// (tool_common.h) is stored in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

#include "kiln/api/client.h"

namespace kiln {

void AddRunCommand(CLI::App& app, const Client& client, int* exit_code);      // run.cc
void AddCompareCommand(CLI::App& app, const Client& client, int* exit_code);  // compare_command.cc
void AddInfoCommand(CLI::App& app, int* exit_code);                           // info.cc
void AddDevicesCommand(CLI::App& app, const Client& client, int* exit_code);  // devices.cc
void AddTuneCommand(CLI::App& app, const Client& client, int* exit_code);     // autotune_commands.cc
void AddCacheCommand(CLI::App& app, int* exit_code);                          // autotune_commands.cc
void AddCompileCommand(CLI::App& app, const Client& client, int* exit_code);  // compile_command.cc
void AddBenchCommand(CLI::App& app, const Client& client, int* exit_code);    // bench_command.cc

// Median wall milliseconds of `iterations` runs (after `warmup`) of `module` compiled with
// `options` on `device`, on random inputs from `seed`, as `kiln bench` times them
// (bench_command.cc; `kiln tune` compares the untuned and the tuned program with it).
StatusOr<double> TimeWholeProgram(const Client& client, const HloModule& module, const std::string& device,
                                  const CompileOptions& options, uint64_t seed, int warmup, int iterations);

}  // namespace kiln
