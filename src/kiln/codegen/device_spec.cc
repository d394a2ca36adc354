#include "kiln/codegen/device_spec.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "kiln/base/strings.h"

namespace kiln::codegen {

namespace {

struct Preset {
  const char* names[3];
  DeviceSpec spec;
};

DeviceSpec Make(const char* name, int major, int minor, int sms, int threads_per_sm,
                int blocks_per_sm, int64_t smem_optin, int64_t smem_sm, int64_t l2, double bw) {
  DeviceSpec s;
  s.name = name;
  s.compute_capability_major = major;
  s.compute_capability_minor = minor;
  s.sm_count = sms;
  s.max_threads_per_sm = threads_per_sm;
  s.max_blocks_per_sm = blocks_per_sm;
  s.shared_memory_per_block_optin = smem_optin;
  s.shared_memory_per_sm = smem_sm;
  s.l2_cache_bytes = l2;
  s.memory_bandwidth_bytes_per_s = bw;
  return s;
}

// AMD CDNA parts: 64-lane wavefronts, 64 KiB of LDS per workgroup and per CU (no opt-in), up
// to 32 waves (2048 threads) per CU, 512 VGPRs x 64 lanes x 4 SIMDs per CU (VGPRs and AGPRs
// together). `l2` is the L2 of the whole device (MI300X: 4 MiB per XCD, 8 XCDs).
DeviceSpec Amd(const char* name, const char* gfx, int cus, int64_t l2, double bw) {
  DeviceSpec s;
  s.name = name;
  s.dialect = GpuDialect::kHip;
  s.gfx_arch = gfx;
  s.compute_capability_major = 0;
  s.compute_capability_minor = 0;
  s.sm_count = cus;
  s.warp_size = 64;
  s.max_threads_per_block = 1024;
  s.max_threads_per_sm = 2048;
  s.max_blocks_per_sm = 32;
  s.shared_memory_per_block = 64 * 1024;
  s.shared_memory_per_block_optin = 64 * 1024;
  s.shared_memory_per_sm = 64 * 1024;
  s.registers_per_sm = 512 * 64 * 4;
  s.registers_per_block = 512 * 64;
  s.l2_cache_bytes = l2;
  s.memory_bandwidth_bytes_per_s = bw;
  return s;
}

// Vendor datasheet numbers (SXM parts); the H200's L2 as the driver reports it.
const std::vector<Preset>& Presets() {
  static const auto* presets = new std::vector<Preset>{
      {{"sm_80", "a100", nullptr},
       Make("sm_80 (A100 SXM 80GB)", 8, 0, 108, 2048, 32, 163 * 1024, 164 * 1024, 40 << 20, 2.039e12)},
      {{"sm_86", "a10", nullptr},
       Make("sm_86 (A10)", 8, 6, 72, 1536, 16, 99 * 1024, 100 * 1024, 6 << 20, 0.6e12)},
      {{"sm_89", "l40s", nullptr},
       Make("sm_89 (L40S)", 8, 9, 142, 1536, 24, 99 * 1024, 100 * 1024, 96 << 20, 0.864e12)},
      {{"sm_90", "h100", nullptr},
       Make("sm_90 (H100 SXM)", 9, 0, 132, 2048, 32, 227 * 1024, 228 * 1024, 50 << 20, 3.35e12)},
      {{"h200", nullptr, nullptr},
       Make("H200 (sm_90)", 9, 0, 132, 2048, 32, 227 * 1024, 228 * 1024, 60 << 20, 4.8e12)},
      {{"sm_100", "b200", nullptr},
       Make("sm_100 (B200)", 10, 0, 148, 2048, 32, 227 * 1024, 228 * 1024, 126 << 20, 8.0e12)},
      {{"gfx90a", "mi250x", nullptr},
       Amd("gfx90a (MI250X, one GCD)", "gfx90a", 110, 8 << 20, 1.6384e12)},
      {{"gfx942", "mi300x", nullptr},
       Amd("gfx942 (MI300X)", "gfx942", 304, 32 << 20, 5.3e12)},
  };
  return *presets;
}

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

std::string_view GpuDialectName(GpuDialect dialect) {
  return dialect == GpuDialect::kHip ? "hip" : "cuda";
}

std::string DeviceSpec::arch() const {
  if (dialect == GpuDialect::kHip) return gfx_arch;
  return StrCat("sm_", compute_capability_major, compute_capability_minor);
}

std::string DeviceSpec::ToString() const {
  std::ostringstream os;
  os << "name: " << name << "\n"
     << "arch: " << arch() << "\n"
     << (is_hip() ? "dialect: hip\n" : "")
     << "sm_count: " << sm_count << "\n"
     << "warp_size: " << warp_size << "\n"
     << "max_threads_per_block: " << max_threads_per_block << "\n"
     << "max_threads_per_sm: " << max_threads_per_sm << "\n"
     << "max_blocks_per_sm: " << max_blocks_per_sm << "\n"
     << "shared_memory_per_block: " << shared_memory_per_block << "\n"
     << "shared_memory_per_block_optin: " << shared_memory_per_block_optin << "\n"
     << "shared_memory_per_sm: " << shared_memory_per_sm << "\n"
     << "registers_per_sm: " << registers_per_sm << "\n"
     << "registers_per_block: " << registers_per_block << "\n"
     << "l2_cache_bytes: " << l2_cache_bytes << "\n"
     << "memory_bandwidth_bytes_per_s: " << memory_bandwidth_bytes_per_s << "\n";
  return os.str();
}

DeviceSpec DeviceSpec::FromDescription(const runtime::DeviceDescription& d) {
  DeviceSpec s;
  if (d.platform == "rocm" || d.gpu_arch.rfind("gfx", 0) == 0) {
    s = Presets().front().spec;
    for (const Preset& p : Presets())
      if (p.spec.is_hip() && (d.gpu_arch.empty() ? p.spec.gfx_arch == "gfx90a" : p.spec.gfx_arch == d.gpu_arch))
        s = p.spec;
    if (!s.is_hip()) {  // an AMD architecture without a preset: gfx90a's limits, its own target
      for (const Preset& p : Presets())
        if (p.spec.gfx_arch == "gfx90a") s = p.spec;
      s.gfx_arch = d.gpu_arch;
    }
  } else {
    // Start from the preset of the same compute capability (or the closest older one).
    int cc = d.compute_capability_major * 10 + d.compute_capability_minor;
    int best = -1;
    for (const Preset& p : Presets()) {
      int pcc = p.spec.compute_capability_major * 10 + p.spec.compute_capability_minor;
      if (pcc <= cc && pcc > best && std::string(p.names[0]).rfind("sm_", 0) == 0) {
        best = pcc;
        s = p.spec;
      }
    }
  }
  if (!d.name.empty()) s.name = d.name;
  if (d.compute_capability_major > 0 && !s.is_hip()) {
    s.compute_capability_major = d.compute_capability_major;
    s.compute_capability_minor = d.compute_capability_minor;
  }
  if (d.multiprocessor_count > 0) s.sm_count = d.multiprocessor_count;
  if (d.warp_size > 0) s.warp_size = d.warp_size;
  if (d.max_threads_per_block > 0) s.max_threads_per_block = d.max_threads_per_block;
  if (d.max_threads_per_multiprocessor > 0) s.max_threads_per_sm = d.max_threads_per_multiprocessor;
  if (d.shared_memory_per_block > 0) s.shared_memory_per_block = static_cast<int64_t>(d.shared_memory_per_block);
  if (d.shared_memory_per_block_optin > 0)
    s.shared_memory_per_block_optin = static_cast<int64_t>(d.shared_memory_per_block_optin);
  if (d.shared_memory_per_multiprocessor > 0)
    s.shared_memory_per_sm = static_cast<int64_t>(d.shared_memory_per_multiprocessor);
  if (d.registers_per_multiprocessor > 0) s.registers_per_sm = d.registers_per_multiprocessor;
  if (d.registers_per_block > 0) s.registers_per_block = d.registers_per_block;
  if (d.l2_cache_bytes > 0) s.l2_cache_bytes = static_cast<int64_t>(d.l2_cache_bytes);
  if (d.memory_bandwidth_bytes_per_s > 0) s.memory_bandwidth_bytes_per_s = d.memory_bandwidth_bytes_per_s;
  return s;
}

StatusOr<DeviceSpec> DeviceSpec::FromPreset(std::string_view name) {
  std::string n = Lower(StripWhitespace(name));
  // "sm_90a" / "sm_100f": family-specific targets share the base architecture's limits.
  if (n.rfind("sm_", 0) == 0 && !n.empty() && std::isalpha(static_cast<unsigned char>(n.back())))
    n.pop_back();
  for (const Preset& p : Presets())
    for (const char* pn : p.names)
      if (pn != nullptr && n == pn) return p.spec;
  return NotFound("no device preset named '", name, "'; known: ", StrJoin(PresetNames(), ", "), ", ",
                  StrJoin(PresetNames(GpuDialect::kHip), ", "));
}

std::vector<std::string> DeviceSpec::PresetNames(GpuDialect dialect) {
  std::vector<std::string> names;
  for (const Preset& p : Presets())
    for (const char* pn : p.names)
      if (pn != nullptr && p.spec.dialect == dialect) names.push_back(pn);
  return names;
}

}  // namespace kiln::codegen
