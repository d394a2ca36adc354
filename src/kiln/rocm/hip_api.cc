#include "kiln/rocm/hip_api.h"

#include <hip/hip_version.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kiln/base/strings.h"

namespace kiln::rocm {

namespace {
std::mutex& PathsMutex() {
  static std::mutex mu;
  return mu;
}
RocmLibraryPaths& Paths() {
  static auto* paths = new RocmLibraryPaths();  // never destroyed
  return *paths;
}
}  // namespace

RocmLibraryPaths GetRocmLibraryPaths() {
  std::lock_guard<std::mutex> lock(PathsMutex());
  return Paths();
}

void SetRocmLibraryPaths(const RocmLibraryPaths& paths) {
  std::lock_guard<std::mutex> lock(PathsMutex());
  Paths() = paths;
}

std::vector<std::string> RocmCandidates(const std::string& configured,
                                        const std::vector<std::string>& defaults) {
  if (!configured.empty()) return {configured};
  return defaults;
}

std::vector<std::string> RocmLibraryCandidates(const std::vector<std::string>& sonames) {
  std::vector<std::string> out = sonames;
  std::vector<std::string> dirs;
  // ROCm's own convention (ROCM_PATH): an ordinary platform default, read here.
  if (const char* root = std::getenv("ROCM_PATH"); root != nullptr && *root != '\0') {
    dirs.push_back(StrCat(root, "/lib"));
  }
  dirs.push_back("/opt/rocm/lib");
  for (const std::string& dir : dirs) {
    for (const std::string& name : sonames) {
      std::string path = StrCat(dir, "/", name);
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
  }
  return out;
}

std::string HipVersionString(int version) {
  if (version <= 0) return "";
  return StrCat(version / 10000000, ".", (version / 100000) % 100, ".", version % 100000);
}

std::string HipHeaderVersion() {
  return StrCat(HIP_VERSION_MAJOR, ".", HIP_VERSION_MINOR, ".", HIP_VERSION_PATCH);
}

StatusOr<std::shared_ptr<const HipApi>> HipApi::Load(const std::string& library) {
  std::vector<std::string> candidates =
      library.empty() ? RocmCandidates(GetRocmLibraryPaths().hip,
                                       RocmLibraryCandidates({"libamdhip64.so.7", "libamdhip64.so.6",
                                                              "libamdhip64.so.5"}))
                      : std::vector<std::string>{library};
  StatusOr<runtime::SharedLibrary> opened = runtime::SharedLibrary::Open("rocm", candidates);
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound) {
      return NotFound("rocm: libamdhip64 not found (looked for ", StrJoin(candidates, ", "), ")");
    }
    return opened.status();
  }
  auto api = std::make_shared<HipApi>();
  api->library = std::move(opened).value();
#define KILN_ROCM_LOAD_MEMBER(name) \
  KILN_RETURN_IF_ERROR(api->library.Load(KILN_STRINGIFY(name), &api->name));
  KILN_ROCM_HIP_FUNCTIONS(KILN_ROCM_LOAD_MEMBER)
#undef KILN_ROCM_LOAD_MEMBER
#define KILN_ROCM_LOAD_OPTIONAL(name) api->library.LoadOptional(KILN_STRINGIFY(name), &api->name);
  KILN_ROCM_HIP_FUNCTIONS_6(KILN_ROCM_LOAD_OPTIONAL)
#undef KILN_ROCM_LOAD_OPTIONAL
  KILN_RETURN_IF_ERROR(api->library.Load("hipMallocAsync", &api->hipMallocAsync));
  return std::shared_ptr<const HipApi>(std::move(api));
}

StatusOr<std::shared_ptr<const HipApi>> HipApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const HipApi>>(Load());
  return *loaded;
}

std::string HipApi::RuntimeVersion() const {
  int version = 0;
  if (hipRuntimeGetVersion == nullptr || hipRuntimeGetVersion(&version) != hipSuccess) return "";
  return HipVersionString(version);
}

std::vector<std::string> HipApi::MissingHip6Functions() const {
  std::vector<std::string> missing;
#define KILN_ROCM_CHECK_OPTIONAL(name) \
  if (name == nullptr) missing.push_back(KILN_STRINGIFY(name));
  KILN_ROCM_HIP_FUNCTIONS_6(KILN_ROCM_CHECK_OPTIONAL)
#undef KILN_ROCM_CHECK_OPTIONAL
  return missing;
}

Status HipStatus(const HipApi& api, hipError_t result, std::string_view call) {
  if (result == hipSuccess) return OkStatus();
  // HIP 5.x's hipGetErrorString gives the name again; only add it when it says more.
  const char* name = api.hipGetErrorName != nullptr ? api.hipGetErrorName(result) : nullptr;
  const char* text = api.hipGetErrorString != nullptr ? api.hipGetErrorString(result) : nullptr;
  std::string message = StrCat("rocm: ", call, ": ", name != nullptr ? name : "HIP error",
                               name != nullptr ? "" : StrCat(" ", static_cast<int>(result)));
  if (text != nullptr && (name == nullptr || std::string_view(text) != name)) {
    message += StrCat(" (", text, ")");
  }
  switch (result) {
    case hipErrorOutOfMemory:
      return ResourceExhausted(message);
    case hipErrorInvalidValue:
    case hipErrorInvalidHandle:
    case hipErrorInvalidImage:
    case hipErrorInvalidKernelFile:
      return InvalidArgument(message);
    case hipErrorNotFound:
      return NotFound(message);
    case hipErrorNoDevice:
    case hipErrorInvalidDevice:
    case hipErrorNotInitialized:
    case hipErrorDeinitialized:
      return Unavailable(message);
    case hipErrorNotSupported:
    case hipErrorNoBinaryForGpu:
      return Unimplemented(message);
    case hipErrorNotReady:
      return FailedPrecondition(message);
    default:
      return Internal(message);
  }
}

}  // namespace kiln::rocm
