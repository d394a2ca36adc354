#include "kiln/rocm/vendor_apis.h"

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/rocm/hip_api.h"

namespace kiln::rocm {

std::vector<std::string> HiprtcCandidates() {
  return RocmLibraryCandidates({"libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5"});
}
std::vector<std::string> ComgrCandidates() {
  return RocmLibraryCandidates({"libamd_comgr.so.3", "libamd_comgr.so.2"});
}
std::vector<std::string> RocblasCandidates() {
  return RocmLibraryCandidates({"librocblas.so.5", "librocblas.so.4", "librocblas.so.0"});
}
std::vector<std::string> HipblasLtCandidates() {
  return RocmLibraryCandidates({"libhipblaslt.so.1", "libhipblaslt.so.0"});
}
std::vector<std::string> MiopenCandidates() {
  return RocmLibraryCandidates({"libMIOpen.so.1"});
}
std::vector<std::string> RcclCandidates() {
  return RocmLibraryCandidates({"librccl.so.1"});
}

#define KILN_ROCM_LOAD_MEMBER(name) \
  KILN_RETURN_IF_ERROR(api->library.Load(KILN_STRINGIFY(name), &api->name));
#define KILN_ROCM_DEFINE_LOAD(Struct, what, LIST, field, candidates)                           \
  StatusOr<std::shared_ptr<const Struct>> Struct::Load(const std::string& library) {           \
    std::vector<std::string> names =                                                           \
        library.empty() ? RocmCandidates(GetRocmLibraryPaths().field, candidates())            \
                        : std::vector<std::string>{library};                                   \
    KILN_ASSIGN_OR_RETURN(runtime::SharedLibrary opened, runtime::SharedLibrary::Open(what, names)); \
    auto api = std::make_shared<Struct>();                                                     \
    api->library = std::move(opened);                                                          \
    LIST(KILN_ROCM_LOAD_MEMBER)                                                                \
    return std::shared_ptr<const Struct>(std::move(api));                                      \
  }                                                                                            \
  StatusOr<std::shared_ptr<const Struct>> Struct::Default() {                                  \
    static const auto* loaded = new StatusOr<std::shared_ptr<const Struct>>(Load());           \
    return *loaded;                                                                            \
  }

KILN_ROCM_DEFINE_LOAD(HiprtcApi, "hiprtc", KILN_ROCM_HIPRTC_FUNCTIONS, hiprtc, HiprtcCandidates)
KILN_ROCM_DEFINE_LOAD(ComgrApi, "comgr", KILN_ROCM_COMGR_FUNCTIONS, comgr, ComgrCandidates)
KILN_ROCM_DEFINE_LOAD(RocblasApi, "rocblas", KILN_ROCM_ROCBLAS_FUNCTIONS, rocblas, RocblasCandidates)
KILN_ROCM_DEFINE_LOAD(HipblasLtApi, "hipblaslt", KILN_ROCM_HIPBLASLT_FUNCTIONS, hipblaslt,
                      HipblasLtCandidates)
KILN_ROCM_DEFINE_LOAD(MiopenApi, "miopen", KILN_ROCM_MIOPEN_FUNCTIONS, miopen, MiopenCandidates)
KILN_ROCM_DEFINE_LOAD(RcclApi, "rccl", KILN_ROCM_RCCL_FUNCTIONS, rccl, RcclCandidates)

#undef KILN_ROCM_DEFINE_LOAD
#undef KILN_ROCM_LOAD_MEMBER

std::string HiprtcApi::Version() const {
  int major = 0, minor = 0;
  if (hiprtcVersion(&major, &minor) != HIPRTC_SUCCESS) return "";
  return StrCat(major, ".", minor);
}

std::string ComgrApi::Version() const {
  size_t major = 0, minor = 0;
  amd_comgr_get_version(&major, &minor);
  return StrCat(major, ".", minor);
}

std::string RocblasApi::Version() const {
  size_t size = 0;
  if (rocblas_get_version_string_size(&size) != rocblas_status_success || size == 0) return "";
  std::string buffer(size, '\0');
  if (rocblas_get_version_string(buffer.data(), size) != rocblas_status_success) return "";
  return std::string(buffer.c_str());
}

// hipBLASLt reports its version through a handle, which needs a device: the header's version
// stands in (the library is loaded by its soname, whose major matches).
std::string HipblasLtApi::Version() const {
  return StrCat(HIPBLASLT_VERSION_MAJOR, ".", HIPBLASLT_VERSION_MINOR, ".", HIPBLASLT_VERSION_PATCH,
                " (headers)");
}

std::string MiopenApi::Version() const {
  size_t major = 0, minor = 0, patch = 0;
  if (miopenGetVersion(&major, &minor, &patch) != miopenStatusSuccess) return "";
  return StrCat(major, ".", minor, ".", patch);
}

// NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch from NCCL 2.9 on (RCCL 5.4: 21304).
std::string RcclApi::Version() const {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess || code <= 0) return "";
  return StrCat(code / 10000, ".", (code / 100) % 100, ".", code % 100);
}

Status RcclStatus(const RcclApi& api, ncclResult_t result, std::string_view call, ncclComm_t comm) {
  if (result == ncclSuccess) return OkStatus();
  StatusCode code = StatusCode::kInternal;
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) code = StatusCode::kInvalidArgument;
  if (result == ncclSystemError || result == ncclRemoteError) code = StatusCode::kUnavailable;
  const char* text = api.ncclGetErrorString(result);
  const char* last = api.ncclGetLastError(comm);
  std::string detail = last != nullptr && *last != '\0' ? StrCat(": ", last) : std::string();
  return Status(code, StrCat("rccl: ", call, ": ", text != nullptr ? text : "error", " (", static_cast<int>(result), ")",
                             detail));
}

StatusOr<std::vector<std::string>> ComgrIsaNames(const ComgrApi& comgr) {
  size_t count = 0;
  if (comgr.amd_comgr_get_isa_count(&count) != AMD_COMGR_STATUS_SUCCESS) {
    return Internal("comgr: amd_comgr_get_isa_count failed");
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (comgr.amd_comgr_get_isa_name(i, &name) != AMD_COMGR_STATUS_SUCCESS || name == nullptr) {
      continue;
    }
    // "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" → "gfx90a"
    std::string_view full(name);
    size_t dash = full.rfind("--");
    std::string_view target = dash == std::string_view::npos ? full : full.substr(dash + 2);
    std::string arch(target.substr(0, target.find(':')));
    if (std::find(names.begin(), names.end(), arch) == names.end()) names.push_back(arch);
  }
  return names;
}

namespace {
template <typename Api>
std::pair<std::string, std::string> VersionOf(const char* what) {
  StatusOr<std::shared_ptr<const Api>> api = Api::Default();
  if (!api.ok()) return {what, StrCat("not found (", api.status().message(), ")")};
  std::string v = (*api)->Version();
  return {what, v.empty() ? "unknown" : v};
}
}  // namespace

std::vector<std::pair<std::string, std::string>> RocmLibraryVersions() {
  return {VersionOf<HiprtcApi>("hiprtc"), VersionOf<ComgrApi>("comgr"),
          VersionOf<RocblasApi>("rocblas"), VersionOf<HipblasLtApi>("hipblaslt"),
          VersionOf<MiopenApi>("miopen"), VersionOf<RcclApi>("rccl")};
}

std::vector<std::pair<std::string, std::string>> RocmHeaderVersions() {
  return {{"hip", HipHeaderVersion()},
          {"rocblas", StrCat(ROCBLAS_VERSION_MAJOR, ".", ROCBLAS_VERSION_MINOR, ".", ROCBLAS_VERSION_PATCH)},
          {"hipblaslt", StrCat(HIPBLASLT_VERSION_MAJOR, ".", HIPBLASLT_VERSION_MINOR, ".", HIPBLASLT_VERSION_PATCH)},
          {"miopen", StrCat(MIOPEN_VERSION_MAJOR, ".", MIOPEN_VERSION_MINOR, ".", MIOPEN_VERSION_PATCH)},
          {"rccl", StrCat(NCCL_MAJOR, ".", NCCL_MINOR, ".", NCCL_PATCH)}};
}

}  // namespace kiln::rocm
