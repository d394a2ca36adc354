// The CUDA platform: NVIDIA GPUs through the driver API, loaded at run time.
//
// Creating the platform loads libcuda.so.1 and calls cuInit. It fails, never crashes, on
// machines without a GPU:
//   - no libcuda.so.1:            Unavailable "cuda: no driver (libcuda.so.1 not found)"
//   - driver present, no GPU:     Unavailable "cuda: 0 devices"
//   - cuInit fails otherwise:     Unavailable "cuda: driver initialization failed: ..."
// Devices use their primary context (shared with any other CUDA user in the process, e.g.
// cuBLAS). See cuda_device.h for the driver's objects.
#pragma once

#include <memory>
#include <string>

#include "kiln/base/status.h"
#include "kiln/runtime/platform.h"
#include "kiln/runtime/platform_registry.h"

namespace kiln::cuda {

struct CudaPlatformOptions {
  // The driver library to load. Empty (default): CudaLibraryPaths::driver (library_loader.h;
  // the cuda backend's flag cuda_driver_library, the `kiln` tool's KILN_CUDA_DRIVER_LIBRARY),
  // else "libcuda.so.1". Tests point it at a nonexistent name to exercise the no-driver path.
  std::string driver_library;
};

StatusOr<std::unique_ptr<runtime::Platform>> CreateCudaPlatform(
    const CudaPlatformOptions& options = {});

// Registers "cuda" with `registry`.
Status RegisterCudaPlatform(runtime::PlatformRegistry& registry,
                            const CudaPlatformOptions& options = {});

// The NVRTC/cuobjdump architecture name for a compute capability: (9, 0) → "sm_90".
std::string ArchForComputeCapability(int major, int minor);

}  // namespace kiln::cuda
