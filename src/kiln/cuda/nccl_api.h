// NcclApi: NCCL, loaded at run time like the other vendor libraries (library_loader.h), but
// declared here instead of through nccl.h: the build needs no NCCL headers at all, and a
// machine without libnccl gets a Status only when something asks for NCCL.
//
// Note [NCCL declarations]
//   The few NCCL types kiln uses are declared below with NCCL's ABI (nccl.h of NCCL 2.18 and
//   later; checked against 2.28): the opaque communicator, the 128-byte unique id, the result,
//   data type and reduction enums by their values, and the communicator config's leading
//   fields, which NCCL reads up to the `size` the caller states (older config versions are
//   accepted by every later NCCL). Function pointer types spell out NCCL's prototypes; one list
//   (KILN_NCCL_FUNCTIONS) names every function, and each is resolved by dlsym once per process.
//   cudaStream_t is CUstream (the runtime and driver stream types are the same struct).
//
// Where the library is looked for: the `library` argument, else CudaLibraryPaths::nccl
// (KILN_NCCL_LIBRARY / --flag cuda_nccl_library=), else libnccl.so.2 and libnccl.so the usual
// way, then in the toolkit's directories, then in the nvidia-nccl wheels of the usual Python
// site-packages directories (.../site-packages/nvidia/nccl/lib/libnccl.so.2).
#pragma once

#include <cuda.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/cuda/library_loader.h"
#include "kiln/hlo/types.h"

namespace kiln::cuda::nccl {

struct Comm;  // NCCL's ncclComm
using ncclComm_t = Comm*;
struct ncclUniqueId {
  char internal[128];
};
enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};
enum ncclDataType_t : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,  // NCCL 2.24
  ncclFloat8e5m2 = 11,  // NCCL 2.24
};
enum ncclRedOp_t : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };
inline constexpr int kSplitNoColor = -1;  // NCCL_SPLIT_NOCOLOR
inline constexpr int kConfigUndefInt = INT_MIN;

// The leading fields of ncclConfig_t as of NCCL 2.18 (Note [NCCL declarations]).
struct ncclConfig_t {
  size_t size = sizeof(ncclConfig_t);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21800;  // NCCL_VERSION(2, 18, 0)
  int blocking = kConfigUndefInt;
  int cgaClusterSize = kConfigUndefInt;
  int minCTAs = kConfigUndefInt;
  int maxCTAs = kConfigUndefInt;
  const char* netName = nullptr;
  int splitShare = kConfigUndefInt;
};

using cudaStream_t = CUstream;

}  // namespace kiln::cuda::nccl

// name, result, parameters
#define KILN_NCCL_FUNCTIONS(X)                                                                      \
  X(ncclGetVersion, (int*))                                                                        \
  X(ncclGetErrorString, (ncclResult_t), const char*)                                               \
  X(ncclGetLastError, (ncclComm_t), const char*)                                                   \
  X(ncclGetUniqueId, (ncclUniqueId*))                                                              \
  X(ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))                                       \
  X(ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))                  \
  X(ncclCommInitAll, (ncclComm_t*, int, const int*))                                               \
  X(ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))                             \
  X(ncclCommDestroy, (ncclComm_t))                                                                 \
  X(ncclCommAbort, (ncclComm_t))                                                                   \
  X(ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))                                            \
  X(ncclCommCount, (const ncclComm_t, int*))                                                       \
  X(ncclCommUserRank, (const ncclComm_t, int*))                                                    \
  X(ncclAllReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,           \
                    cudaStream_t))                                                                 \
  X(ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))    \
  X(ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))         \
  X(ncclReduceScatter, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,       \
                        cudaStream_t))                                                             \
  X(ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))                \
  X(ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))                      \
  X(ncclGroupStart, ())                                                                            \
  X(ncclGroupEnd, ())

namespace kiln::cuda {

struct NcclApi {
  // Members returning ncclResult_t unless a third list element names another result.
#define KILN_NCCL_MEMBER_2(name, params) nccl::ncclResult_t(*name) params = nullptr;
#define KILN_NCCL_MEMBER_3(name, params, result) result(*name) params = nullptr;
#define KILN_NCCL_PICK(_1, _2, _3, M, ...) M
#define KILN_NCCL_MEMBER(...) KILN_NCCL_PICK(__VA_ARGS__, KILN_NCCL_MEMBER_3, KILN_NCCL_MEMBER_2, _)(__VA_ARGS__)
  using ncclComm_t = nccl::ncclComm_t;
  using ncclUniqueId = nccl::ncclUniqueId;
  using ncclResult_t = nccl::ncclResult_t;
  using ncclDataType_t = nccl::ncclDataType_t;
  using ncclRedOp_t = nccl::ncclRedOp_t;
  using ncclConfig_t = nccl::ncclConfig_t;
  using cudaStream_t = nccl::cudaStream_t;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_MEMBER)
#undef KILN_NCCL_MEMBER
#undef KILN_NCCL_PICK
#undef KILN_NCCL_MEMBER_3
#undef KILN_NCCL_MEMBER_2
  SharedLibrary library;

  static StatusOr<std::shared_ptr<const NcclApi>> Load(const std::string& library = "");
  // Loaded once per process; the error (NotFound: "NCCL not found: ...") every time after.
  static StatusOr<std::shared_ptr<const NcclApi>> Default();
  std::string Version() const;  // "2.28.3"
  int VersionCode() const;      // 22803
};

// OK for ncclSuccess, else "nccl: <call>: <error string> (<last error>)" with a mapped code
// (invalid argument / usage: InvalidArgument; remote and system errors: Unavailable).
Status NcclStatus(const NcclApi& api, nccl::ncclResult_t result, std::string_view call,
                  nccl::ncclComm_t comm = nullptr);

// NCCL's type for elements of `type` in reductions, or nullopt (s16, u16, complex, sub-byte
// and the f8 types NCCL lacks; pred reduces as uint8: and = min, or = max).
std::optional<nccl::ncclDataType_t> NcclReductionType(PrimitiveType type);

}  // namespace kiln::cuda
