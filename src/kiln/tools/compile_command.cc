// kiln compile MODULE.hlo: compile for a device without running; --stats prints per-pass
// timing, the fusion summary and the memory statistics, --thunks the executable's thunks,
// --dump-passes DIR the module after every pass.
#include <iostream>

#include "kiln/base/strings.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

struct CompileFlags {
  std::string module;
  std::string device;
  std::string dump_passes;
  std::string dump_kernels;
  bool stats = false;
  bool thunks = false;
  int threads = 0;
  bool fill_elided_constants = false;
  bool no_verify = false;
  AutotuneFlags autotune;
};

int CompileModule(const CompileFlags& f, BackendRegistry& registry) {
  DeviceSelection device;
  if (f.device.empty()) {
    device.backend = registry.Best();
  } else {
    auto sel = SelectDevice(registry, f.device, /*require_device=*/false);
    if (!sel.ok()) {
      PrintError(sel.status().message());
      return kExitUsage;
    }
    device = *sel;
  }
  LoadOptions lo;
  lo.fill_elided_constants = f.fill_elided_constants;
  lo.verify = !f.no_verify;
  auto module = LoadModule(f.module, lo);
  if (!module.ok()) {
    PrintLoadError(f.module, module.status().message());
    return kExitUsage;
  }
  BackendCompileOptions co;
  co.device_ordinal = device.ordinal;
  co.threads = f.threads;
  co.dump_passes_dir = f.dump_passes;
  co.dump_kernels_dir = f.dump_kernels;
  co.stats = f.stats;
  co.thunks = f.thunks;
  co.autotune = &f.autotune;
  auto report = device.backend->Compile(**module, co);
  if (!report.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", report.status().message()));
    return report.status().code() == StatusCode::kUnimplemented &&
                   report.status().message().find("does not compile") != std::string::npos
               ? kExitUsage
               : kExitFailure;
  }
  std::cout << "module " << (*module)->name() << " on " << device.backend->name() << ":" << device.ordinal << "\n"
            << *report;
  if (!f.dump_passes.empty()) std::cout << "pass dumps in " << f.dump_passes << "\n";
  return kExitOk;
}

}  // namespace

void AddCompileCommand(CLI::App& app, BackendRegistry& registry, int* exit_code) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile a module for a device and describe the result");
  cmd->add_option("module", flags->module, "HLO text file")->required();
  cmd->add_option("--device", flags->device, "a compiling backend: cpu (default: the best available)");
  cmd->add_option("--dump-kernels", flags->dump_kernels,
                  "write the generated kernel sources into this directory (cuda)");
  cmd->add_flag("--stats", flags->stats, "per-pass timing, fusion summary, memory statistics");
  cmd->add_flag("--thunks", flags->thunks,
                "list the executable's thunks (kernels, copies, loops) with their buffer slices");
  cmd->add_option("--dump-passes", flags->dump_passes,
                  "write the module after every pass that changed it into this directory");
  cmd->add_option("--threads", flags->threads, "host threads for the cpu backend (default: all cores)");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values");
  cmd->add_flag("--no-verify", flags->no_verify, "skip the HLO verifier");
  AddAutotuneFlags(cmd, &flags->autotune);
  cmd->footer(
      "Examples:\n"
      "  kiln compile model.hlo --device cpu --stats\n"
      "  kiln compile model.hlo --device cpu --dump-passes /tmp/passes\n"
      "  kiln compile model.hlo --device cpu --thunks\n");
  cmd->callback([flags, &registry, exit_code] { *exit_code = CompileModule(*flags, registry); });
}

}  // namespace kiln
