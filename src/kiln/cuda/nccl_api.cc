#include "kiln/cuda/nccl_api.h"

#include <glob.h>

#include <cstdlib>
#include <vector>

#include "kiln/base/strings.h"

namespace kiln::cuda {

namespace {

// The nvidia-nccl wheels of the usual Python installations (PyTorch and JAX bring NCCL this way).
std::vector<std::string> WheelCandidates() {
  std::vector<std::string> patterns = {
      "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
      "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
      "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
      "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
      "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
  };
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    patterns.push_back(StrCat(home, "/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0')
    patterns.push_back(StrCat(venv, "/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    glob_t g{};
    if (glob(p.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return out;
}

Status LoadMembers(NcclApi& api) {
#define KILN_NCCL_LOAD(name, ...) KILN_RETURN_IF_ERROR(api.library.Load(#name, &api.name));
  KILN_NCCL_FUNCTIONS(KILN_NCCL_LOAD)
#undef KILN_NCCL_LOAD
  return OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<const NcclApi>> NcclApi::Load(const std::string& library) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates = {library};
  } else {
    candidates = LibraryCandidates(GetCudaLibraryPaths().nccl, ToolkitLibraryCandidates({"libnccl.so.2", "libnccl.so"}));
    if (GetCudaLibraryPaths().nccl.empty())
      for (std::string& w : WheelCandidates()) candidates.push_back(std::move(w));
  }
  StatusOr<std::shared_ptr<const NcclApi>> api = LoadApi<NcclApi>("nccl", candidates, LoadMembers);
  if (!api.ok())
    return Status(api.status().code(),
                  StrCat("NCCL not found: ", api.status().message(),
                         " (programs of several participants need libnccl.so.2: install NCCL or PyPI's "
                         "nvidia-nccl-cu13, or name the library with KILN_NCCL_LIBRARY)"));
  return api;
}

StatusOr<std::shared_ptr<const NcclApi>> NcclApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const NcclApi>>(Load());
  return *loaded;
}

int NcclApi::VersionCode() const {
  int v = 0;
  ncclGetVersion(&v);
  return v;
}

std::string NcclApi::Version() const {
  const int v = VersionCode();
  return StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
}

Status NcclStatus(const NcclApi& api, nccl::ncclResult_t result, std::string_view call, nccl::ncclComm_t comm) {
  if (result == nccl::ncclSuccess) return OkStatus();
  StatusCode mapped = StatusCode::kInternal;
  if (result == nccl::ncclInvalidArgument || result == nccl::ncclInvalidUsage) mapped = StatusCode::kInvalidArgument;
  if (result == nccl::ncclRemoteError || result == nccl::ncclSystemError) mapped = StatusCode::kUnavailable;
  if (result == nccl::ncclInProgress) mapped = StatusCode::kFailedPrecondition;
  const char* text = api.ncclGetErrorString(result);
  const char* last = api.ncclGetLastError(comm);
  return Status(mapped, StrCat("nccl: ", call, ": ", text != nullptr ? text : "error", " (", static_cast<int>(result),
                               ")", last != nullptr && *last != '\0' ? StrCat(": ", last) : std::string()));
}

std::optional<nccl::ncclDataType_t> NcclReductionType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred: case PrimitiveType::kU8: return nccl::ncclUint8;
    case PrimitiveType::kS8: return nccl::ncclInt8;
    case PrimitiveType::kS32: return nccl::ncclInt32;
    case PrimitiveType::kU32: return nccl::ncclUint32;
    case PrimitiveType::kS64: return nccl::ncclInt64;
    case PrimitiveType::kU64: return nccl::ncclUint64;
    case PrimitiveType::kF16: return nccl::ncclFloat16;
    case PrimitiveType::kF32: return nccl::ncclFloat32;
    case PrimitiveType::kF64: return nccl::ncclFloat64;
    case PrimitiveType::kBF16: return nccl::ncclBfloat16;
    default: return std::nullopt;
  }
}

}  // namespace kiln::cuda
