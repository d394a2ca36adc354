#include "kiln/runtime/device_description.h"

#include <cstdio>
#include <sstream>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"

namespace kiln::runtime {

std::string DeviceDescription::compute_capability() const {
  return StrCat(compute_capability_major, ".", compute_capability_minor);
}

namespace {
std::string Known(uint64_t v, const std::string& text) { return v == 0 ? "unknown" : text; }
std::string Gbps(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GB/s", bytes_per_s / 1e9);
  return buf;
}
}  // namespace

std::string DeviceDescription::ToString() const {
  std::ostringstream os;
  auto line = [&](const char* key, const std::string& value) {
    os << "  " << key << ": " << value << "\n";
  };
  line("name", name.empty() ? "unknown" : name);
  line("vendor", vendor.empty() ? "unknown" : vendor);
  line("platform", StrCat(platform, ":", ordinal));
  if (compute_capability_major != 0) line("compute capability", compute_capability());
  if (!gpu_arch.empty()) line("architecture", gpu_arch);
  line("multiprocessors", Known(multiprocessor_count, StrCat(multiprocessor_count)));
  line("core clock", Known(core_clock_khz, StrCat(core_clock_khz / 1000, " MHz")));
  line("memory", Known(memory_bytes, HumanBytes(memory_bytes)));
  line("memory clock", Known(memory_clock_khz, StrCat(memory_clock_khz / 1000, " MHz")));
  line("memory bus width", Known(memory_bus_width_bits, StrCat(memory_bus_width_bits, " bits")));
  line("memory bandwidth (peak)",
       Known(memory_bandwidth_bytes_per_s > 0 ? 1 : 0, Gbps(memory_bandwidth_bytes_per_s)));
  line("L2 cache", Known(l2_cache_bytes, HumanBytes(l2_cache_bytes)));
  line("shared memory per block",
       Known(shared_memory_per_block,
             StrCat(HumanBytes(shared_memory_per_block), " (opt-in ",
                    HumanBytes(shared_memory_per_block_optin), ")")));
  line("shared memory per multiprocessor",
       Known(shared_memory_per_multiprocessor, HumanBytes(shared_memory_per_multiprocessor)));
  line("registers per block / multiprocessor",
       Known(registers_per_block,
             StrCat(registers_per_block, " / ", registers_per_multiprocessor)));
  line("warp size", Known(warp_size, StrCat(warp_size)));
  line("max threads per block / multiprocessor",
       Known(max_threads_per_block,
             StrCat(max_threads_per_block, " / ", max_threads_per_multiprocessor)));
  line("max block dims", max_block_dims.ToString());
  line("max grid dims", max_grid_dims.ToString());
  if (!pci_bus_id.empty()) line("PCI bus id", pci_bus_id);
  if (!uuid.empty()) line("UUID", uuid);
  line("stream-ordered allocation", supports_stream_ordered_allocation ? "yes" : "no");
  line("unified addressing", unified_addressing ? "yes" : "no");
  line("driver version", driver_version.empty() ? "unknown" : driver_version);
  line("runtime version", runtime_version.empty() ? "unknown" : runtime_version);
  for (const auto& [library, version] : library_versions) {
    line(StrCat("library ", library).c_str(), version);
  }
  return os.str();
}

std::string DeviceDescription::Fingerprint() const {
  std::ostringstream os;
  os << platform << '|' << name << '|' << compute_capability() << '|' << multiprocessor_count
     << '|' << memory_bytes << '|' << l2_cache_bytes << '|' << shared_memory_per_block_optin
     << '|' << driver_version << '|' << runtime_version;
  if (!gpu_arch.empty()) os << "|arch=" << gpu_arch;
  // A missing library's explanation names paths and environment: only its absence counts.
  for (const auto& [library, version] : library_versions) {
    os << '|' << library << '=' << (StartsWith(version, "not ") ? "absent" : version);
  }
  return Fingerprint64Hex(os.str());
}

}  // namespace kiln::runtime
