#include "kiln/autotune/cache_key.h"

#include <cmath>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/printer.h"

namespace kiln::autotune {

nlohmann::json DeviceKeyJson(const runtime::DeviceDescription& d) {
  nlohmann::json j = {
      {"platform", d.platform},
      {"name", d.name},
      {"compute_capability", d.compute_capability()},
      {"multiprocessors", d.multiprocessor_count},
      {"memory_bytes", d.memory_bytes},
      {"memory_bus_width_bits", d.memory_bus_width_bits},
      // Whole bytes per second: a double's last digits should not split the cache.
      {"memory_bandwidth", static_cast<uint64_t>(std::llround(d.memory_bandwidth_bytes_per_s))},
      {"l2_cache_bytes", d.l2_cache_bytes},
      {"shared_memory_per_block_optin", d.shared_memory_per_block_optin},
      {"driver_version", d.driver_version},
      {"runtime_version", d.runtime_version},
  };
  // Named architectures (ROCm's gfx942): a driver-reported target that the numbers above do not
  // pin down. Absent for the others, whose keys stay as they were.
  if (!d.gpu_arch.empty()) j["gpu_arch"] = d.gpu_arch;
  if (d.platform != "host") {
    j["core_clock_khz"] = d.core_clock_khz;
    j["memory_clock_khz"] = d.memory_clock_khz;
  }
  nlohmann::json libraries = nlohmann::json::object();
  // A missing library's explanation names paths and environment: only its absence counts.
  for (const auto& [library, version] : d.library_versions) {
    libraries[library] = StartsWith(version, "not ") ? "absent" : version;
  }
  j["libraries"] = std::move(libraries);
  return j;
}

std::string CacheKey::Hash() const {
  std::string text = "kiln-autotune-key\n";
  text += "device " + device.dump() + "\n";
  for (const auto& [name, version] : backends) text += "backend " + name + "=" + version + "\n";
  text += deterministic ? "selection deterministic\n" : "selection fastest\n";
  text += "instruction " + instruction + "\n";
  return Sha256Hex(text);
}

std::string CacheKey::DeviceSummary() const {
  std::string name = device.value("name", std::string("?"));
  std::string cc = device.value("compute_capability", std::string("0.0"));
  return cc == "0.0" ? name : StrCat(name, " (", cc, ")");
}

nlohmann::json CacheKey::ToJson() const {
  nlohmann::json b = nlohmann::json::array();
  for (const auto& [name, version] : backends) b.push_back({name, version});
  return {{"device", device},
          {"backends", b},
          {"selection", deterministic ? "deterministic" : "fastest"},
          {"instruction", instruction},
          {"version", version}};
}

StatusOr<CacheKey> CacheKey::FromJson(const nlohmann::json& j) {
  auto bad = [&](std::string_view what) {
    return InvalidArgument("cache key: ", what, " in ", j.dump());
  };
  if (!j.is_object()) return bad("not an object");
  CacheKey key;
  if (!j.contains("device") || !j["device"].is_object()) return bad("no device object");
  key.device = j["device"];
  if (!j.contains("backends") || !j["backends"].is_array()) return bad("no backends array");
  for (const auto& b : j["backends"]) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_string() || !b[1].is_string()) {
      return bad("a backend is not [name, version]");
    }
    key.backends.emplace_back(b[0].get<std::string>(), b[1].get<std::string>());
  }
  if (!j.contains("selection") || !j["selection"].is_string()) return bad("no selection");
  std::string selection = j["selection"].get<std::string>();
  if (selection != "fastest" && selection != "deterministic") return bad("unknown selection");
  key.deterministic = selection == "deterministic";
  if (!j.contains("instruction") || !j["instruction"].is_string()) return bad("no instruction");
  key.instruction = j["instruction"].get<std::string>();
  if (!j.contains("version") || !j["version"].is_number_integer()) return bad("no version");
  key.version = j["version"].get<int>();
  return key;
}

CacheKey MakeCacheKey(const runtime::DeviceDescription& device,
                      std::span<const Backend* const> backends, bool deterministic,
                      const HloInstruction& instr) {
  CacheKey key;
  key.device = DeviceKeyJson(device);
  for (const Backend* b : backends) key.backends.emplace_back(std::string(b->name()), b->version());
  key.deterministic = deterministic;
  key.instruction = InstructionFingerprint(instr);
  return key;
}

}  // namespace kiln::autotune
