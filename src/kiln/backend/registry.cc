#include "kiln/backend/registry.h"

#include <charconv>

#include "kiln/base/strings.h"

namespace kiln {

void BackendRegistry::Register(std::unique_ptr<Backend> backend) {
  if (!backend || Find(backend->name())) return;
  backends_.push_back(std::move(backend));
}

Backend* BackendRegistry::Find(std::string_view name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::vector<Backend*> BackendRegistry::backends() const {
  std::vector<Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

std::string BackendRegistry::AvailableNames() const {
  return StrJoin(backends_, ", ", [](std::ostream& os, const std::unique_ptr<Backend>& b) { os << b->name(); });
}

Backend* BackendRegistry::Best() const {
  for (const auto& b : backends_) {
    auto devices = b->Devices();
    if (devices.ok() && !devices->empty()) return b.get();
  }
  return nullptr;
}

void BackendRegistry::RetainOnly(std::span<const std::string> names) {
  std::erase_if(backends_, [&](const std::unique_ptr<Backend>& b) {
    for (const std::string& n : names)
      if (b->name() == n) return false;
    return true;
  });
}

std::span<const std::string_view> KnownPlatformNames() {
  static constexpr std::string_view kNames[] = {"interpreter", "cpu", "cuda", "rocm"};
  return kNames;
}

StatusOr<DeviceSelection> SelectDevice(const BackendRegistry& registry, std::string_view spec, bool require_device) {
  if (spec.empty()) {
    Backend* best = registry.Best();
    if (best == nullptr) return Unavailable("no backend sees a device (available: ", registry.AvailableNames(), ")");
    return DeviceSelection{best, 0};
  }
  std::string_view name = spec;
  int ordinal = 0;
  if (size_t colon = spec.find(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    std::string_view num = spec.substr(colon + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), ordinal);
    if (num.empty() || ec != std::errc() || p != num.data() + num.size() || ordinal < 0)
      return InvalidArgument("bad device '", spec, "' (expected NAME or NAME:ORDINAL)");
  }
  Backend* backend = registry.Find(name);
  if (!backend) {
    for (std::string_view known : KnownPlatformNames())
      if (known == name)
        return Unavailable("device '", name, "' is not built yet (available: ", registry.AvailableNames(), ")");
    return InvalidArgument("unknown device '", name, "' (known: ", StrJoin(KnownPlatformNames(), ", "),
                           "; available: ", registry.AvailableNames(), ")");
  }
  StatusOr<std::vector<DeviceInfo>> devices = backend->Devices();
  if (!require_device && (!devices.ok() || devices->empty())) return DeviceSelection{backend, ordinal};
  if (!devices.ok()) return devices.status();
  if (ordinal >= static_cast<int>(devices->size()))
    return InvalidArgument("device '", spec, "': ", name, " has ", devices->size(), " device(s)");
  return DeviceSelection{backend, ordinal};
}

}  // namespace kiln
