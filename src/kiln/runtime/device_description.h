// DeviceDescription: what a device is and what it can do, filled once by its driver.
//
// Fields a driver cannot know stay at their zero value (numbers) or empty (strings); consumers
// treat 0 as "unknown". Sizes are bytes, clocks kHz, bandwidth bytes per second.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/types.h"

namespace kiln::runtime {

struct DeviceDescription {
  std::string platform;  // "host", "cuda", ...
  int ordinal = 0;       // index within the platform
  std::string name;      // "NVIDIA H200", "AMD EPYC 9654 96-Core Processor"
  std::string vendor;    // "NVIDIA", "GenuineIntel", ...

  // Compute capability (CUDA: major.minor, e.g. 9.0); 0.0 for devices without one.
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  // The GPU's instruction-set target where it is named rather than numbered (ROCm: "gfx942",
  // the gcnArchName without its feature suffix); empty elsewhere.
  std::string gpu_arch;

  int multiprocessor_count = 0;  // SMs (host: hardware threads)
  int64_t core_clock_khz = 0;    // typical/peak core clock
  int64_t memory_clock_khz = 0;  // peak memory clock

  uint64_t memory_bytes = 0;           // total device memory
  int memory_bus_width_bits = 0;       // DRAM interface width
  double memory_bandwidth_bytes_per_s = 0;  // theoretical peak (2 × clock × bus width / 8)
  uint64_t l2_cache_bytes = 0;

  uint64_t shared_memory_per_block = 0;        // default static+dynamic limit per block
  uint64_t shared_memory_per_block_optin = 0;  // limit after opting in (CUDA: > 48 KiB)
  uint64_t shared_memory_per_multiprocessor = 0;
  int registers_per_block = 0;
  int registers_per_multiprocessor = 0;
  int warp_size = 0;  // threads per warp (host: 1)
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  Dim3 max_block_dims;
  Dim3 max_grid_dims;

  std::string pci_bus_id;  // "0000:3b:00.0"
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-..." (CUDA), empty when unknown

  bool supports_stream_ordered_allocation = false;  // CUDA memory pools (cuMemAllocAsync)
  bool unified_addressing = false;

  std::string driver_version;   // "13.0" (CUDA driver API version), kernel release on host
  std::string runtime_version;  // toolkit headers kiln was built against ("13.0")
  // Every vendor library the driver looked for, with its version or why it was not found:
  // {"nvrtc", "13.0"}, {"cublas", "13.0.2"}, {"cudnn", "not found (libcudnn.so.9: ...)"}.
  std::vector<std::pair<std::string, std::string>> library_versions;

  std::string compute_capability() const;  // "9.0"
  // Multi-line "key: value" listing, one field per line, for `kiln devices`.
  std::string ToString() const;
  // A short stable key that changes when anything affecting generated code or tuning changes
  // (name, compute capability, SMs, memory, driver and library versions); for cache keys.
  std::string Fingerprint() const;
};

}  // namespace kiln::runtime
