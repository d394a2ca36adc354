// NvrtcApi: NVRTC (libnvrtc.so.<major>), loaded at run time. See library_loader.h.
#pragma once

#include <nvrtc.h>

#include <memory>
#include <string>

#include "kiln/base/status.h"
#include "kiln/cuda/library_loader.h"

#define KILN_NVRTC_FUNCTIONS(X)                                                              \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) \
  X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram)                        \
  X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX)          \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName)

namespace kiln::cuda {

struct NvrtcApi {
#define KILN_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_NVRTC_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
#undef KILN_CUDA_DECLARE_MEMBER

  SharedLibrary library;
  int version_major = 0;
  int version_minor = 0;

  // Loads `library` (empty: CudaLibraryPaths::nvrtc, else libnvrtc.so.<major of the headers>,
  // libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so). NotFound "nvrtc: ... not found" when absent.
  static StatusOr<std::shared_ptr<const NvrtcApi>> Load(const std::string& library = "");
  // The process-wide table, loaded on first use (the outcome is remembered).
  static StatusOr<std::shared_ptr<const NvrtcApi>> Default();
};

// OK for NVRTC_SUCCESS, else "nvrtc: <call>: <nvrtcGetErrorString>" with a mapped code.
Status NvrtcStatus(const NvrtcApi& api, nvrtcResult result, std::string_view call);

}  // namespace kiln::cuda

#define KILN_NVRTC(api, expr) ::kiln::cuda::NvrtcStatus((api), (api).expr, #expr)
