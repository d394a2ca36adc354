// Compiling and loading the library layer's own kernels (sort, top-k, FFT scaling) on a device.
//
// LoadLibraryModule compiles a request with NVRTC for the device's architecture (through the
// on-disk cache: a warm process compiles nothing) and loads the cubin, once per (device,
// request): later calls return the same module. Modules stay loaded for the life of the process
// (plans keep raw Kernel pointers into them); call it from the Initialize stage.
//
// Thread safety: may be called concurrently; one compile per distinct request.
#pragma once

#include "kiln/base/status.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/nvrtc_compiler.h"

namespace kiln::cuda::libs {

// The process's shared NVRTC compiler (default options and cache).
StatusOr<NvrtcCompiler*> LibraryCompiler();

// `request.arch` is replaced by the device's architecture ("sm_90").
StatusOr<runtime::Module*> LoadLibraryModule(CudaDevice& device, NvrtcRequest request);

}  // namespace kiln::cuda::libs
