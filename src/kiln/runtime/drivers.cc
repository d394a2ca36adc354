#include "kiln/runtime/drivers.h"

#include "kiln/runtime/host/host_platform.h"

#if defined(KILN_HAVE_CUDA)
#include "kiln/cuda/cuda_platform.h"
#endif

namespace kiln::runtime {

Status RegisterBuiltinPlatforms(PlatformRegistry& registry) {
  KILN_RETURN_IF_ERROR(RegisterHostPlatform(registry));
#if defined(KILN_HAVE_CUDA)
  KILN_RETURN_IF_ERROR(cuda::RegisterCudaPlatform(registry));
#else
  KILN_RETURN_IF_ERROR(registry.RegisterUnavailable(
      "cuda", Unavailable("cuda: not built (this kiln was configured without the CUDA toolkit "
                          "headers; reconfigure with CUDA_HOME set and -DKILN_ENABLE_CUDA=ON)")));
#endif
  return OkStatus();
}

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
