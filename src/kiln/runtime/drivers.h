// The platforms built into this kiln binary, registered by one explicit call.
//
//   PlatformRegistry registry;
//   KILN_RETURN_IF_ERROR(RegisterBuiltinPlatforms(registry));
//   std::cout << FormatPlatformListing(ListPlatformsAndDevices(registry), /*verbose=*/false);
//
// "host" is always registered; so is every driver whose folder declares itself with
// kiln_register_platform (cmake/kiln.cmake): "cuda" when the CUDA driver was built (CMake
// KILN_ENABLE_CUDA). A known driver this build lacks is registered as unavailable with a message
// saying so, so that `kiln devices` explains why there is no GPU. RegisterBuiltinPlatforms is
// generated at build time (kiln_generate_registrations): runtime/ names no driver.
#pragma once

#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/platform_registry.h"

namespace kiln::runtime {

Status RegisterBuiltinPlatforms(PlatformRegistry& registry);

// Every built-in platform with its status and device descriptions (creates a registry of its
// own; platforms are released when it returns). For `kiln devices`.
std::vector<PlatformListing> ListPlatformsAndDevices();

}  // namespace kiln::runtime
