// BackendRegistry: the backends of this binary, by name, best first.
//
//   BackendRegistry registry;
//   RegisterBuiltinBackends(registry);            // generated at build time (see backend.h)
//   KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(registry, "cuda:0"));
//
// Names are the platform names of docs/ARCHITECTURE.md: "interpreter", "cpu", "cuda", "rocm".
// KnownPlatformNames() lists them all, built or not, so callers can tell "not built" from
// "unknown".
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/backend/backend.h"
#include "kiln/base/status.h"

namespace kiln {

class BackendRegistry {
 public:
  // Adds a backend; a name registered twice keeps the first.
  void Register(std::unique_ptr<Backend> backend);
  // The backend named `name`, or nullptr.
  Backend* Find(std::string_view name) const;
  // Registered backends in registration order (best first).
  std::vector<Backend*> backends() const;
  // Names of the registered backends, comma-separated ("cuda, cpu, interpreter").
  std::string AvailableNames() const;
  // The first registered backend that sees at least one device (the interpreter always does).
  Backend* Best() const;
  // Drops every backend whose name is not in `names`.
  void RetainOnly(std::span<const std::string> names);

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

// Every platform name kiln knows, built into this binary or not.
std::span<const std::string_view> KnownPlatformNames();

// Registers every backend built into this binary, best first (compiled backends by their
// declared rank, the interpreter last), each created with `flags` (platform-level settings,
// ClientOptions::flags; a backend reads the names with its prefix). Defined in generated code
// (the build directory's kiln/backend/builtin_backends.cc, made from the kiln_register_backend
// declarations).
void RegisterBuiltinBackends(BackendRegistry& registry, const BackendFlags& flags = {});

// A --device value ("interpreter", "cuda:1") resolved to a backend and a device ordinal.
struct DeviceSelection {
  Backend* backend = nullptr;
  int ordinal = 0;
};
// Errors: an unknown name lists the known ones; a known but unregistered one says it is not
// built; an ordinal past the devices says how many there are. With require_device false
// (compiling for a GPU needs no GPU) a backend that sees no device is still selected. An empty
// spec selects the best backend.
StatusOr<DeviceSelection> SelectDevice(const BackendRegistry& registry, std::string_view spec,
                                       bool require_device = true);

}  // namespace kiln
