// DriverApi: the CUDA driver API (libcuda.so.1), loaded at run time.
//
// KILN_CUDA_DRIVER_FUNCTIONS is the one list of driver functions kiln calls; add a name here to
// use a new one (see library_loader.h for how the list becomes typed members). Every function
// in the list is required: a driver lacking one fails to load with a message naming it.
//
//   KILN_ASSIGN_OR_RETURN(std::shared_ptr<const DriverApi> api, DriverApi::Default());
//   CUdeviceptr p;
//   KILN_RETURN_IF_ERROR(KILN_CU(*api, cuMemAlloc(&p, bytes)));
//
// Errors: DriverApi::Load fails with Unavailable "cuda: no driver (libcuda.so.1 not found)"
// when the library is absent, or with the loader's message when it exists but cannot load.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "kiln/base/status.h"
#include "kiln/cuda/library_loader.h"

#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                     \
  /* initialization, versions, errors */                                                  \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                   \
  /* devices */                                                                           \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)           \
  X(cuDeviceTotalMem) X(cuDeviceGetUuid) X(cuDeviceGetPCIBusId)                           \
  /* contexts */                                                                          \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)             \
  X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuCtxGetStreamPriorityRange)                   \
  /* memory */                                                                            \
  X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)           \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)       \
  X(cuMemsetD32Async)                                                                     \
  /* stream-ordered memory pools */                                                       \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute)                         \
  X(cuMemPoolGetAttribute) X(cuMemPoolTrimTo) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) \
  /* streams and events */                                                                \
  X(cuStreamCreateWithPriority) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) \
  X(cuStreamWaitEvent) X(cuLaunchHostFunc) X(cuEventCreate) X(cuEventDestroy)             \
  X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventElapsedTime)            \
  /* modules and kernels */                                                               \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)   \
  X(cuFuncSetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel)

namespace kiln::cuda {

struct DriverApi {
#define KILN_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
#undef KILN_CUDA_DECLARE_MEMBER

  SharedLibrary library;

  // Loads `library` (empty: CudaLibraryPaths::driver of library_loader.h, else "libcuda.so.1").
  // Does not call cuInit.
  static StatusOr<std::shared_ptr<const DriverApi>> Load(const std::string& library = "");
  // The process-wide driver table, loaded on first use (the result, success or failure, is
  // remembered).
  static StatusOr<std::shared_ptr<const DriverApi>> Default();
};

// Status for a driver call: OK for CUDA_SUCCESS, else an error whose message names the call and
// carries the driver's own name and description of the code:
//   "cuda: cuMemAlloc(&ptr, bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
// Codes map onto StatusCodes (out of memory → ResourceExhausted, invalid value/handle →
// InvalidArgument, not found → NotFound, no device → Unavailable, not supported →
// Unimplemented, anything else → Internal).
Status CuStatus(const DriverApi& api, CUresult result, std::string_view call);

}  // namespace kiln::cuda

// Status of `api.expr`, e.g. KILN_CU(*api_, cuStreamSynchronize(stream_)).
#define KILN_CU(api, expr) ::kiln::cuda::CuStatus((api), (api).expr, #expr)
