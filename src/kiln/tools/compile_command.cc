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

struct CompileCommandFlags {
  std::string module;
  std::string device;
  std::string dump_passes;
  std::string dump_kernels;
  std::string target;
  bool stats = false;
  bool thunks = false;
  bool fill_elided_constants = false;
  CompileFlags compile;
};

int CompileModule(const CompileCommandFlags& f, const Client& client) {
  auto device = client.SelectDevice(f.device, /*require_device=*/false);
  if (!device.ok()) {
    PrintError(device.status().message());
    return kExitUsage;
  }
  LoadOptions lo;
  lo.fill_elided_constants = f.fill_elided_constants;
  lo.verify = !f.compile.no_verify;
  auto module = LoadModule(f.module, lo);
  if (!module.ok()) {
    PrintLoadError(f.module, module.status().message());
    return kExitUsage;
  }
  auto options = MakeCompileOptions(client, f.compile);
  if (!options.ok()) {
    PrintError(options.status().message());
    return kExitUsage;
  }
  options->dump_dir = f.dump_passes;
  options->kernel_dump_dir = f.dump_kernels;
  // --target: the GPU to compile for without one (the rocm backend's rocm_target flag).
  if (!f.target.empty()) options->flags["rocm_target"] = f.target;
  auto exe = client.Compile(**module, Client::DeviceName(*device), *options);
  if (!exe.ok()) {
    PrintError(StrCat(device->backend->name(), ": ", exe.status().message()));
    return CompileErrorExitCode(exe.status());
  }
  const CompileReport& report = (*exe)->compile_report();
  std::cout << "module " << (*module)->name() << " on " << Client::DeviceName(*device) << "\n"
            << (f.stats ? report.details : report.summary);
  if (f.thunks && !report.thunk_listing.empty()) std::cout << "thunks:\n" << report.thunk_listing;
  if (!f.dump_passes.empty()) std::cout << "pass dumps in " << f.dump_passes << "\n";
  return kExitOk;
}

}  // namespace

void AddCompileCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto flags = std::make_shared<CompileCommandFlags>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile a module for a device and describe the result");
  cmd->add_option("module", flags->module, "HLO text file")->required();
  cmd->add_option("--device", flags->device, "cpu, cuda or interpreter, optionally NAME:ORDINAL (default: the best available)")
      ->check(DeviceNameValidator());
  cmd->add_option("--dump-kernels", flags->dump_kernels,
                  "write the generated kernel sources into this directory (cuda; rocm: also the code objects)");
  cmd->add_option("--target", flags->target,
                  "rocm: the AMD GPU to compile for without one (gfx90a, gfx942, mi250x, mi300x; default gfx942)");
  cmd->add_flag("--stats", flags->stats, "per-pass timing, fusion summary, memory statistics");
  cmd->add_flag("--thunks", flags->thunks,
                "list the executable's thunks (kernels, copies, loops) with their buffer slices");
  cmd->add_option("--dump-passes", flags->dump_passes,
                  "write the module after every pass that changed it into this directory");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values");
  cmd->add_flag("--no-verify", flags->compile.no_verify, "skip the HLO verifier");
  AddCompileFlags(cmd, &flags->compile);
  cmd->footer(
      "Examples:\n"
      "  kiln compile model.hlo --device cpu --stats\n"
      "  kiln compile model.hlo --device cpu --dump-passes /tmp/passes\n"
      "  kiln compile model.hlo --device cpu --thunks\n"
      "  kiln compile model.hlo --device rocm --target gfx942 --dump-kernels /tmp/k\n");
  cmd->callback([flags, &client, exit_code] { *exit_code = CompileModule(*flags, client); });
}

}  // namespace kiln
