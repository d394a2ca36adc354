// The CUDA backend (GpuCompiler + GpuExecutable, cuda/compiler) behind the public API: "cuda",
// one device per visible NVIDIA GPU. Compiling needs no GPU (kernels are generated and
// compiled for the sm_90 preset when none is present; such an executable cannot run), running
// does.
//
// Buffers live in device memory from one BFC allocator per device (shared by every buffer of
// the backend on that device). Execute binds the argument buffers as the executable's
// parameters (no copy; Note [CUDA graphs of bound parameters] in gpu_executable.h), then copies
// each result out of the executable's arena into a fresh buffer; a result the module places in
// a donated argument takes that argument's memory over instead.
//
// Autotuning (CompileOptions::autotune): with a device and a level other than off (or a forced
// config), the GPU compiler's autotuning step runs with the CUDA factory and the cache.
// Without a device nothing is tuned: the cache's key needs the device's description.
//
// Flags (CompileOptions::flags, "0" turns a default off): see CudaFlagHelp().
#pragma once

#include <memory>
#include <string>

#include "kiln/backend/backend.h"

namespace kiln::cuda {

// `flags`: platform-level settings (ClientOptions::flags).
std::unique_ptr<Backend> CreateCudaBackend(const BackendFlags& flags = {});

// One line per flag: "cuda_graph=0|1  ...".
std::string CudaFlagHelp();

}  // namespace kiln::cuda
