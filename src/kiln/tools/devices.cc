// kiln devices: the platforms built into this binary and the devices each one sees.
#include <iostream>

#include "kiln/runtime/drivers.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

int Devices(BackendRegistry& registry, bool verbose) {
  std::cout << "platforms (kiln run --device NAME[:ORDINAL]):\n";
  for (Backend* b : registry.backends()) {
    std::cout << b->name() << ": " << b->description() << "\n";
    auto devices = b->Devices();
    if (!devices.ok()) {
      std::cout << "  no devices: " << devices.status().message() << "\n";
      continue;
    }
    for (const DeviceInfo& d : *devices)
      std::cout << "  " << b->name() << ":" << d.ordinal << "  " << d.name
                << (d.description.empty() ? "" : "  (" + d.description + ")") << "\n";
  }
  for (std::string_view name : KnownPlatformNames())
    if (!registry.Find(name)) std::cout << name << ": not built yet\n";
  // The runtime's drivers: what the compiled backends will run on, and why a GPU is missing.
  std::cout << "\nruntime drivers:\n"
            << runtime::FormatPlatformListing(runtime::ListPlatformsAndDevices(), verbose);
  return kExitOk;
}

}  // namespace

void AddDevicesCommand(CLI::App& app, BackendRegistry& registry, int* exit_code) {
  auto verbose = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", "List the platforms built in and the devices they see");
  cmd->add_flag("-v,--verbose", *verbose, "every field of each device description");
  cmd->callback([&registry, exit_code, verbose] { *exit_code = Devices(registry, *verbose); });
}

}  // namespace kiln
