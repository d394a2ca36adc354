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
#include "kiln/codegen/device_spec.h"
#include "kiln/runtime/device_description.h"
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

// The description a deviceless compile for `spec` (a HIP preset: gfx942 / MI300X...) stands on:
// the preset's numbers (gfx arch, CUs, LDS, L2, bandwidth, wavefront 64), the HIP runtime's
// version where libamdhip64 loads (hipRuntimeGetVersion needs no device) and every library's
// (RocmLibraryVersions). The autotuning cache keys of such a compile are made from it (Note
// [Deviceless autotuning] in rocm/compiler/rocm_compiler.cc); "(preset)" in the name keeps them
// apart from a real device's.
runtime::DeviceDescription RocmTargetDescription(const codegen::DeviceSpec& spec);

// "gfx90a:sramecc+:xnack-" → "gfx90a" (the architecture without its target features).
std::string GfxArchWithoutFeatures(std::string_view gcn_arch_name);

}  // namespace kiln::rocm
