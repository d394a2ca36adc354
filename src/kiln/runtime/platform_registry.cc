#include "kiln/runtime/platform_registry.h"

#include <sstream>

#include "kiln/base/strings.h"

namespace kiln::runtime {

Status PlatformRegistry::Register(std::string name, PlatformFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) {
    if (e->name == name) return AlreadyExists("platform '", name, "' is already registered");
  }
  auto entry = std::make_unique<Entry>();
  entry->name = std::move(name);
  entry->factory = std::move(factory);
  entries_.push_back(std::move(entry));
  return OkStatus();
}

Status PlatformRegistry::RegisterUnavailable(std::string name, Status why) {
  if (why.ok()) return InvalidArgument("RegisterUnavailable needs an error status");
  return Register(std::move(name),
                  [why]() -> StatusOr<std::unique_ptr<Platform>> { return why; });
}

StatusOr<Platform*> PlatformRegistry::Get(std::string_view name) {
  Entry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries_) {
      if (e->name == name) entry = e.get();
    }
    if (entry == nullptr) {
      std::vector<std::string> known;
      for (const auto& e : entries_) known.push_back(e->name);
      return NotFound("no platform named '", name, "' (registered: ",
                      known.empty() ? std::string("none") : StrJoin(known, ", "), ")");
    }
    // Creation runs under the lock: it is rare, and two threads must not both create.
    if (!entry->created) {
      StatusOr<std::unique_ptr<Platform>> platform = entry->factory();
      entry->created = true;
      if (platform.ok()) {
        entry->platform = std::move(platform).value();
      } else {
        entry->status = platform.status();
      }
    }
  }
  if (!entry->status.ok()) return entry->status;
  return entry->platform.get();
}

std::vector<std::string> PlatformRegistry::names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e->name);
  return out;
}

std::vector<PlatformListing> ListPlatformsAndDevices(PlatformRegistry& registry) {
  std::vector<PlatformListing> listing;
  for (const std::string& name : registry.names()) {
    PlatformListing entry;
    entry.name = name;
    StatusOr<Platform*> platform = registry.Get(name);
    if (!platform.ok()) {
      entry.status = platform.status();
      listing.push_back(std::move(entry));
      continue;
    }
    entry.version = (*platform)->version();
    for (int i = 0; i < (*platform)->device_count(); ++i) {
      StatusOr<Device*> device = (*platform)->GetDevice(i);
      if (device.ok()) {
        entry.devices.push_back((*device)->description());
      } else {
        entry.device_errors.push_back(device.status().WithContext(StrCat(name, ":", i)));
      }
    }
    listing.push_back(std::move(entry));
  }
  return listing;
}

std::string FormatPlatformListing(const std::vector<PlatformListing>& listing, bool verbose) {
  std::ostringstream os;
  for (const PlatformListing& p : listing) {
    if (!p.status.ok()) {
      os << p.name << ": unavailable: " << p.status.message() << "\n";
      continue;
    }
    os << p.name << ": " << p.devices.size() << " device(s)";
    if (!p.version.empty()) os << " [" << p.version << "]";
    os << "\n";
    for (const DeviceDescription& d : p.devices) {
      os << "  " << p.name << ":" << d.ordinal << "  " << d.name;
      if (d.compute_capability_major != 0) os << "  sm_" << d.compute_capability_major
                                              << d.compute_capability_minor;
      if (d.memory_bytes != 0) os << "  " << HumanBytes(d.memory_bytes);
      if (d.multiprocessor_count != 0) os << "  " << d.multiprocessor_count
                                          << (p.name == "host" ? " threads" : " SMs");
      os << "\n";
      if (verbose) {
        std::string details = d.ToString();
        for (std::string_view line : StrSplit(details, '\n')) {
          if (!line.empty()) os << "    " << line << "\n";
        }
      }
    }
    for (const Status& s : p.device_errors) os << "  error: " << s.message() << "\n";
  }
  return os.str();
}

}  // namespace kiln::runtime
