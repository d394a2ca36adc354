// PlatformRegistry: platforms by name, registered by explicit calls (no static initializers).
//
//   PlatformRegistry registry;
//   KILN_RETURN_IF_ERROR(RegisterBuiltinPlatforms(registry));   // runtime/drivers.h
//   KILN_ASSIGN_OR_RETURN(Platform* cuda, registry.Get("cuda"));
//
// A platform is created on the first Get of its name; the result (the platform or the error
// saying why it is unavailable) is remembered, so later Gets are cheap and consistent. The
// registry owns the platforms; destroy it only after everything created from them.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/platform.h"

namespace kiln::runtime {

using PlatformFactory = std::function<StatusOr<std::unique_ptr<Platform>>()>;

class PlatformRegistry {
 public:
  PlatformRegistry() = default;
  PlatformRegistry(const PlatformRegistry&) = delete;
  PlatformRegistry& operator=(const PlatformRegistry&) = delete;

  // AlreadyExists when `name` is taken.
  Status Register(std::string name, PlatformFactory factory);
  // Registers a platform whose creation is known to fail with `why` (e.g. a driver compiled out
  // of this build), so listings still show it.
  Status RegisterUnavailable(std::string name, Status why);

  // The platform named `name`, created on first use; NotFound for an unregistered name
  // (listing the registered ones), or the platform's creation error.
  StatusOr<Platform*> Get(std::string_view name);

  // Registered names, in registration order.
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name;
    PlatformFactory factory;
    bool created = false;
    Status status;
    std::unique_ptr<Platform> platform;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// What `kiln devices` prints: every registered platform, its status, and its devices.
struct PlatformListing {
  std::string name;
  Status status;        // OK, or why the platform is unavailable
  std::string version;  // Platform::version() when available
  std::vector<DeviceDescription> devices;
  std::vector<Status> device_errors;  // devices that failed to open (ordinal in the message)
};

// Creates (if needed) every platform in `registry` and describes its devices. Never fails: an
// unavailable platform is listed with its status.
std::vector<PlatformListing> ListPlatformsAndDevices(PlatformRegistry& registry);

// Human-readable report of a listing: one block per platform; `verbose` adds every field of
// each DeviceDescription (otherwise one summary line per device).
std::string FormatPlatformListing(const std::vector<PlatformListing>& listing, bool verbose);

}  // namespace kiln::runtime
