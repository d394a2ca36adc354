// The ROCm platform: AMD GPUs through the HIP runtime (libamdhip64), loaded at run time.
//
// Creating the platform loads libamdhip64 and calls hipInit once, then hipGetDeviceCount. It
// fails, never crashes, on machines without an AMD GPU:
//   - no libamdhip64:                 Unavailable "rocm: libamdhip64 not found (looked for ...)"
//   - runtime present, no GPU:        Unavailable "rocm: no device (hipInit: ..., hipGetDeviceCount: ...)"
//     (with no /dev/kfd, HIP 5.2's hipInit gives hipErrorInvalidDevice and hipGetDeviceCount
//     hipErrorNoDevice with a count of 0: both read as "no device")
//   - initialization fails otherwise: Unavailable "rocm: runtime initialization failed: ..."
// Devices (RocmDevice, rocm_device.h) are created on first use and cached per ordinal.
#pragma once

#include <memory>
#include <string>

#include "kiln/base/status.h"
#include "kiln/runtime/platform.h"
#include "kiln/runtime/platform_registry.h"

namespace kiln::rocm {

struct RocmPlatformOptions {
  // The HIP runtime to load. Empty (default): RocmLibraryPaths::hip (hip_api.h), else
  // libamdhip64.so.7/.6/.5. Tests point it at a nonexistent name for the missing-library path.
  std::string hip_library;
};

StatusOr<std::unique_ptr<runtime::Platform>> CreateRocmPlatform(
    const RocmPlatformOptions& options = {});

// Registers "rocm" with `registry`.
Status RegisterRocmPlatform(runtime::PlatformRegistry& registry,
                            const RocmPlatformOptions& options = {});

// "gfx90a:sramecc+:xnack-" → "gfx90a" (the architecture without its target features).
std::string GfxArchWithoutFeatures(std::string_view gcn_arch_name);

}  // namespace kiln::rocm
