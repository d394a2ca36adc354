// Helpers for the GPU tests (label gpu): one CUDA platform per test process, and NVRTC
// compilation for the device under test. Test code only.
#pragma once

#include <memory>
#include <string>

#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/cuda/nvrtc_compiler.h"

namespace kiln::cuda::testing {

// Device 0 of a CUDA platform created once per process; the error says why there is none
// ("cuda: no driver (libcuda.so.1 not found)", "cuda: 0 devices").
inline StatusOr<CudaDevice*> TestDevice() {
  static auto* platform = new StatusOr<std::unique_ptr<runtime::Platform>>(CreateCudaPlatform());
  if (!platform->ok()) return platform->status();
  KILN_ASSIGN_OR_RETURN(runtime::Device * device, (**platform)->GetDevice(0));
  return static_cast<CudaDevice*>(device);
}

// A shared NVRTC compiler (default cache).
inline StatusOr<NvrtcCompiler*> TestCompiler() {
  static auto* compiler =
      new StatusOr<std::unique_ptr<NvrtcCompiler>>(NvrtcCompiler::Create(NvrtcOptions{}));
  if (!compiler->ok()) return compiler->status();
  return compiler->value().get();
}

// The native architecture of `device` ("sm_90").
inline std::string DeviceArch(const runtime::Device& device) {
  return ArchForComputeCapability(device.description().compute_capability_major,
                                  device.description().compute_capability_minor);
}

// Compiles `request` for `device` (its arch replaces request.arch) and loads the cubin.
inline StatusOr<std::unique_ptr<runtime::Module>> CompileAndLoad(runtime::Device& device,
                                                                 NvrtcRequest request,
                                                                 NvrtcProgram* program_out = nullptr) {
  KILN_ASSIGN_OR_RETURN(NvrtcCompiler * compiler, TestCompiler());
  request.arch = DeviceArch(device);
  KILN_ASSIGN_OR_RETURN(NvrtcProgram program, compiler->Compile(request));
  std::unique_ptr<runtime::Module> module;
  KILN_ASSIGN_OR_RETURN(module,
                        device.LoadModule(runtime::ModuleSpec::FromCubin(program.cubin, request.program_name)));
  if (program_out != nullptr) *program_out = std::move(program);
  return module;
}

}  // namespace kiln::cuda::testing
