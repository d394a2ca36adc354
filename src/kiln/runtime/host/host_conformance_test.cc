// The conformance suite on the host driver.
#include "kiln/runtime/cts/conformance.h"
#include "kiln/runtime/host/host_platform.h"

namespace kiln::runtime::cts {
namespace {

// Device 0 of a host platform created once per process (and never destroyed: cases share it).
Driver HostCtsDriver() {
  Driver driver;
  driver.name = "host";
  driver.device = []() -> StatusOr<Device*> {
    static auto* platform = new StatusOr<std::unique_ptr<Platform>>(CreateHostPlatform());
    if (!platform->ok()) return platform->status();
    return (**platform)->GetDevice(0);
  };
  driver.kernels = [](Device&) -> StatusOr<ModuleSpec> {
    return ModuleSpec::FromHostLibrary(HostCtsKernels(), "kiln_cts");
  };
  return driver;
}

INSTANTIATE_TEST_SUITE_P(Host, ConformanceTest, ::testing::Values(HostCtsDriver()),
                         CtsDriverName);

}  // namespace
}  // namespace kiln::runtime::cts
