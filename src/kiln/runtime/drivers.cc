#include "kiln/runtime/drivers.h"

namespace kiln::runtime {

// RegisterBuiltinPlatforms is generated from the kiln_register_platform declarations
// (cmake/kiln.cmake): runtime/ names no driver.

std::vector<PlatformListing> ListPlatformsAndDevices() {
  PlatformRegistry registry;
  Status status = RegisterBuiltinPlatforms(registry);
  if (!status.ok()) {
    PlatformListing failed;
    failed.name = "registry";
    failed.status = status;
    return {failed};
  }
  return ListPlatformsAndDevices(registry);
}

}  // namespace kiln::runtime
