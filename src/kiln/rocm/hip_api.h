// HipApi: the HIP runtime (libamdhip64), loaded at run time; RocmLibraryPaths: where kiln looks
// for it and for ROCm's other libraries.
//
// KILN_ROCM_HIP_FUNCTIONS is the one list of HIP functions kiln calls (the symbol-table pattern
// of cuda/library_loader.h: members typed `decltype(&::name)` from the HIP headers, resolved
// with dlsym after macro expansion). kiln is compiled against the HIP 6.x headers; the list
// holds only functions whose ABI is the same in HIP 5.x and 6.x, so the 5.x runtime (Debian 12's
// libamdhip64.so.5) loads too. KILN_ROCM_HIP_FUNCTIONS_6 are the functions only 6.x has
// (hipGetDevicePropertiesR0600, the 6.x layout of hipDeviceProp_t): optional members, null on a
// 5.x runtime, which can then list "no device" but cannot open a device (RocmDevice::Create says
// why).
//
//   KILN_ASSIGN_OR_RETURN(std::shared_ptr<const HipApi> hip, HipApi::Default());
//   KILN_RETURN_IF_ERROR(KILN_HIP(*hip, hipStreamSynchronize(stream)));
//
// Errors: Load is NotFound "rocm: libamdhip64 not found (looked for libamdhip64.so.6,
// libamdhip64.so.5, ...)" when no candidate exists, Unavailable with the loader's message when
// one exists but does not load, NotFound naming a missing required symbol.
#pragma once

#include <hip/hip_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/shared_library.h"

#define KILN_ROCM_HIP_FUNCTIONS(X)                                                         \
  /* initialization, versions, errors */                                                   \
  X(hipInit) X(hipDriverGetVersion) X(hipRuntimeGetVersion) X(hipGetErrorName)             \
  X(hipGetErrorString) X(hipGetLastError)                                                  \
  /* devices */                                                                            \
  X(hipGetDeviceCount) X(hipDeviceGet) X(hipSetDevice) X(hipGetDevice) X(hipDeviceGetName) \
  X(hipDeviceGetAttribute) X(hipDeviceTotalMem) X(hipDeviceGetPCIBusId)                    \
  X(hipDeviceSynchronize) X(hipDeviceGetStreamPriorityRange) X(hipMemGetInfo)              \
  /* memory */                                                                             \
  X(hipMalloc) X(hipFree) X(hipHostMalloc) X(hipHostFree) X(hipMemcpyHtoDAsync)            \
  X(hipMemcpyDtoHAsync) X(hipMemcpyDtoDAsync) X(hipMemsetD8Async) X(hipMemsetD32Async)     \
  X(hipFreeAsync)                                                                          \
  /* streams and events */                                                                 \
  X(hipStreamCreateWithPriority) X(hipStreamDestroy) X(hipStreamSynchronize)               \
  X(hipStreamQuery) X(hipStreamWaitEvent) X(hipStreamAddCallback) X(hipEventCreateWithFlags) \
  X(hipEventDestroy) X(hipEventRecord) X(hipEventQuery) X(hipEventSynchronize)             \
  X(hipEventElapsedTime)                                                                   \
  /* modules and kernels */                                                                \
  X(hipModuleLoadData) X(hipModuleUnload) X(hipModuleGetFunction) X(hipFuncGetAttribute)   \
  X(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor) X(hipModuleLaunchKernel)

// Only in HIP >= 6.0 (optional members; see above).
#define KILN_ROCM_HIP_FUNCTIONS_6(X) X(hipGetDeviceProperties)

namespace kiln::rocm {

struct HipApi {
#define KILN_ROCM_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_ROCM_HIP_FUNCTIONS(KILN_ROCM_DECLARE_MEMBER)
  KILN_ROCM_HIP_FUNCTIONS_6(KILN_ROCM_DECLARE_MEMBER)
#undef KILN_ROCM_DECLARE_MEMBER
  // hipMallocAsync is overloaded in the 6.x C++ headers: the C entry point, spelled out.
  hipError_t (*hipMallocAsync)(void**, size_t, hipStream_t) = nullptr;

  runtime::SharedLibrary library;

  // Loads `library` (empty: RocmLibraryPaths::hip, else the candidates of HipCandidates()).
  // Does not call hipInit.
  static StatusOr<std::shared_ptr<const HipApi>> Load(const std::string& library = "");
  // The process-wide table, loaded on first use (the result, success or failure, is kept).
  static StatusOr<std::shared_ptr<const HipApi>> Default();

  // The runtime's version (hipRuntimeGetVersion: 50221153 → "5.2.21153"), "" when unknown.
  std::string RuntimeVersion() const;
  // The missing 6.x functions, by name (empty on a 6.x runtime).
  std::vector<std::string> MissingHip6Functions() const;
};

// "50221153" → "5.2.21153" (HIP's major * 10000000 + minor * 100000 + patch).
std::string HipVersionString(int version);
// The version of the HIP headers kiln was built against ("6.4.43484").
std::string HipHeaderVersion();

// Status for a HIP call: OK for hipSuccess, else an error whose message names the call and the
// runtime's name for the code ("rocm: hipMalloc(&ptr, bytes): hipErrorOutOfMemory"). Codes map
// onto StatusCodes: out of memory → ResourceExhausted; invalid value/handle/image →
// InvalidArgument; not found → NotFound; no device, invalid device, not initialized →
// Unavailable; not supported, no binary for the GPU → Unimplemented; not ready →
// FailedPrecondition; anything else → Internal.
Status HipStatus(const HipApi& api, hipError_t result, std::string_view call);

// Where kiln finds ROCm's libraries, when not told per call: each field a file name or path
// tried alone instead of the defaults; empty: the defaults. Process-wide (each library is loaded
// once per process): set before first use. The rocm backend's platform-level flags
// (rocm_hip_library, ...) fill it; no library reads the environment.
struct RocmLibraryPaths {
  std::string hip;        // libamdhip64 (HipApi)
  std::string hiprtc;     // HiprtcApi
  std::string comgr;      // ComgrApi (the ISA list hipRTC is checked against)
  std::string rocblas;    // RocblasApi
  std::string hipblaslt;  // HipblasLtApi
  std::string miopen;     // MiopenApi
  std::string rccl;       // RcclApi
};
RocmLibraryPaths GetRocmLibraryPaths();
void SetRocmLibraryPaths(const RocmLibraryPaths& paths);  // thread-safe

// `configured` alone when set, else `defaults`.
std::vector<std::string> RocmCandidates(const std::string& configured,
                                        const std::vector<std::string>& defaults);
// `sonames` as they are, then inside $ROCM_PATH/lib and /opt/rocm/lib (ROCm's own install
// convention, where the loader path rarely points).
std::vector<std::string> RocmLibraryCandidates(const std::vector<std::string>& sonames);

}  // namespace kiln::rocm

// Status of `api.expr`, e.g. KILN_HIP(*api_, hipStreamSynchronize(stream_)).
#define KILN_HIP(api, expr) ::kiln::rocm::HipStatus((api), (api).expr, #expr)
