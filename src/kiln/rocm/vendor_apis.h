// ROCm's libraries besides the HIP runtime, each one symbol table loaded at run time (the
// pattern of hip_api.h): hipRTC (run-time kernel compilation), comgr (the code-object manager:
// which ISAs it knows), rocBLAS and hipBLASLt (GEMMs), MIOpen (convolutions), RCCL
// (collectives: NCCL's API under NCCL's names, in librccl.so.1).
//
// kiln compiles these tables against the vendors' own headers (hipRTC: HIP 6.x's hiprtc.h;
// comgr: Debian's amd_comgr.h; rocBLAS, hipBLASLt, MIOpen, RCCL: their -dev packages' headers,
// unpacked by ./kiln.sh, never installed) and links none of the libraries. Each Load returns
// NotFound "rocblas: librocblas.so.5 not found (also looked for ...)" when the library is absent,
// Unavailable with the loader's message when it exists but cannot load (Debian 13's builds need
// a newer libc than Debian 12's), NotFound naming a missing symbol.
#pragma once

#include <amd_comgr.h>
#include <hip/hiprtc.h>
#include <hipblaslt/hipblaslt.h>
#include <miopen/miopen.h>
#include <miopen/version.h>
#include <rccl/rccl.h>
#include <rocblas/rocblas.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/shared_library.h"

// hipRTC: inside libamdhip64.so.5 (HIP 5.x), its own libhiprtc.so.6/.7 from HIP 6.0 on.
#define KILN_ROCM_HIPRTC_FUNCTIONS(X)                                                   \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcDestroyProgram) \
  X(hiprtcAddNameExpression) X(hiprtcCompileProgram) X(hiprtcGetLoweredName)             \
  X(hiprtcGetProgramLogSize) X(hiprtcGetProgramLog) X(hiprtcGetCodeSize) X(hiprtcGetCode)

// comgr: the ISA list hipRTC is checked against before any compile (Note [hipRTC and unknown
// targets] in hsaco_compiler.h).
#define KILN_ROCM_COMGR_FUNCTIONS(X) \
  X(amd_comgr_get_version) X(amd_comgr_get_isa_count) X(amd_comgr_get_isa_name)

#define KILN_ROCM_ROCBLAS_FUNCTIONS(X)                                                       \
  X(rocblas_create_handle) X(rocblas_destroy_handle) X(rocblas_set_stream)                   \
  X(rocblas_get_version_string_size) X(rocblas_get_version_string) X(rocblas_set_workspace)  \
  X(rocblas_gemm_ex) X(rocblas_gemm_strided_batched_ex) X(rocblas_gemm_ex_get_solutions)     \
  X(rocblas_status_to_string)

#define KILN_ROCM_HIPBLASLT_FUNCTIONS(X)                                                    \
  X(hipblasLtCreate) X(hipblasLtDestroy) X(hipblasLtGetVersion) X(hipblasLtMatmulDescCreate) \
  X(hipblasLtMatmulDescDestroy) X(hipblasLtMatmulDescSetAttribute)                          \
  X(hipblasLtMatrixLayoutCreate) X(hipblasLtMatrixLayoutDestroy)                            \
  X(hipblasLtMatrixLayoutSetAttribute) X(hipblasLtMatmulPreferenceCreate)                   \
  X(hipblasLtMatmulPreferenceDestroy) X(hipblasLtMatmulPreferenceSetAttribute)              \
  X(hipblasLtMatmulAlgoGetHeuristic) X(hipblasLtMatmul)

#define KILN_ROCM_MIOPEN_FUNCTIONS(X)                                                         \
  X(miopenGetVersion) X(miopenCreate) X(miopenDestroy) X(miopenSetStream)                     \
  X(miopenGetErrorString) X(miopenCreateTensorDescriptor) X(miopenDestroyTensorDescriptor)    \
  X(miopenSetTensorDescriptor) X(miopenCreateConvolutionDescriptor)                           \
  X(miopenDestroyConvolutionDescriptor) X(miopenInitConvolutionNdDescriptor)                  \
  X(miopenSetConvolutionGroupCount) X(miopenConvolutionForwardGetWorkSpaceSize)               \
  X(miopenFindConvolutionForwardAlgorithm) X(miopenConvolutionForward)                        \
  X(miopenConvolutionForwardGetSolutionCount) X(miopenConvolutionForwardGetSolution)          \
  X(miopenConvolutionForwardCompileSolution) X(miopenConvolutionForwardImmediate)

// RCCL: the entry points of NCCL 2.13's API that every RCCL since ROCm 5.4 has (RCCL 5.4.3's
// rccl.h, Debian's librccl-dev, is what kiln compiles against; ncclCommSplit and the config
// variants of NCCL 2.14+ are not in it), plus RCCL's own ncclAllToAll.
#define KILN_ROCM_RCCL_FUNCTIONS(X)                                                            \
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetLastError) X(ncclGetUniqueId)               \
  X(ncclCommInitRank) X(ncclCommInitAll) X(ncclCommDestroy) X(ncclCommAbort)                   \
  X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommUserRank) X(ncclAllReduce)               \
  X(ncclBroadcast) X(ncclAllGather) X(ncclReduceScatter) X(ncclAllToAll) X(ncclSend)           \
  X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

namespace kiln::rocm {

#define KILN_ROCM_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
#define KILN_ROCM_API_STRUCT(Struct, LIST)                                          \
  struct Struct {                                                                   \
    LIST(KILN_ROCM_DECLARE_MEMBER)                                                  \
    runtime::SharedLibrary library;                                                 \
    /* `library` empty: the RocmLibraryPaths field, else the default candidates. */ \
    static StatusOr<std::shared_ptr<const Struct>> Load(const std::string& library = ""); \
    /* The process-wide table, loaded once (success or failure is kept). */         \
    static StatusOr<std::shared_ptr<const Struct>> Default();                       \
    /* The library's version ("6.4.4"), "" when it does not say. */                 \
    std::string Version() const;                                                    \
  };

KILN_ROCM_API_STRUCT(HiprtcApi, KILN_ROCM_HIPRTC_FUNCTIONS)
KILN_ROCM_API_STRUCT(ComgrApi, KILN_ROCM_COMGR_FUNCTIONS)
KILN_ROCM_API_STRUCT(RocblasApi, KILN_ROCM_ROCBLAS_FUNCTIONS)
KILN_ROCM_API_STRUCT(HipblasLtApi, KILN_ROCM_HIPBLASLT_FUNCTIONS)
KILN_ROCM_API_STRUCT(MiopenApi, KILN_ROCM_MIOPEN_FUNCTIONS)
KILN_ROCM_API_STRUCT(RcclApi, KILN_ROCM_RCCL_FUNCTIONS)

#undef KILN_ROCM_API_STRUCT
#undef KILN_ROCM_DECLARE_MEMBER

// The default candidates of each library, in the order tried.
std::vector<std::string> HiprtcCandidates();
std::vector<std::string> ComgrCandidates();
std::vector<std::string> RocblasCandidates();
std::vector<std::string> HipblasLtCandidates();
std::vector<std::string> MiopenCandidates();
std::vector<std::string> RcclCandidates();

// OK for ncclSuccess, else "rccl: <call>: <error string> (<code>)[: <last error>]": invalid
// argument / usage are InvalidArgument, system and remote errors Unavailable, the rest Internal.
Status RcclStatus(const RcclApi& api, ncclResult_t result, std::string_view call, ncclComm_t comm = nullptr);

// The ISAs comgr can compile for, without feature suffixes ("gfx90a", ...), in comgr's order,
// deduplicated. The error of ComgrApi::Default() when comgr is absent.
StatusOr<std::vector<std::string>> ComgrIsaNames(const ComgrApi& comgr);

// {"hiprtc", "9.0"}, {"rocblas", "not found (...)"}, {"rccl", "2.13.4"}, ...: every library above, for
// DeviceDescription::library_versions and autotuning cache keys.
std::vector<std::pair<std::string, std::string>> RocmLibraryVersions();

// The headers' versions kiln was built with: {"rocblas", "4.4.1..."}, {"hipblaslt", ...},
// {"miopen", "3.4.0"}, {"rccl", "2.13.4"} (RCCL's NCCL_VERSION_CODE).
std::vector<std::pair<std::string, std::string>> RocmHeaderVersions();

}  // namespace kiln::rocm
