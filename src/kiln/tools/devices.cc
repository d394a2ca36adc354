// kiln devices: the platforms built into this binary and the devices each one sees.
#include <iostream>

#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

int Devices(const Client& client, bool verbose, bool flags) {
  std::cout << "platforms (kiln run --device NAME[:ORDINAL]):\n";
  for (const PlatformInfo& p : client.Platforms()) {
    if (!p.built) {
      std::cout << p.name << ": not built yet\n";
      continue;
    }
    std::cout << p.name << ": " << p.description << "\n";
    if (!p.status.ok()) std::cout << "  no devices: " << p.status.message() << "\n";
    for (const DeviceInfo& d : p.devices)
      std::cout << "  " << p.name << ":" << d.ordinal << "  " << d.name
                << (d.description.empty() ? "" : "  (" + d.description + ")") << "\n";
    if (flags)
      if (const Backend* b = client.registry().Find(p.name); b && !b->flag_help().empty()) {
        std::cout << "  flags (--flag NAME=VALUE, or KILN_<NAME> in the environment):\n";
        std::string help = b->flag_help();
        size_t start = 0;
        while (start < help.size()) {
          size_t end = help.find('\n', start);
          if (end == std::string::npos) end = help.size();
          std::cout << "    " << help.substr(start, end - start) << "\n";
          start = end + 1;
        }
      }
  }
  // The runtime's drivers: what the compiled backends run on, and why a GPU is missing.
  std::cout << "\nruntime drivers:\n" << client.DriverListing(verbose);
  return kExitOk;
}

}  // namespace

void AddDevicesCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto verbose = std::make_shared<bool>(false);
  auto flags = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("devices", "List the platforms built in and the devices they see");
  cmd->add_flag("-v,--verbose", *verbose, "every field of each device description");
  cmd->add_flag("--flags", *flags, "the backend flags each platform takes");
  cmd->callback([&client, exit_code, verbose, flags] { *exit_code = Devices(client, *verbose, *flags); });
}

}  // namespace kiln
