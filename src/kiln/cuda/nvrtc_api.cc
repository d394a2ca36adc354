#include "kiln/cuda/nvrtc_api.h"

#include <cuda.h>  // CUDA_VERSION: the toolkit the headers come from

#include "kiln/base/strings.h"

namespace kiln::cuda {

namespace {

Status LoadMembers(NvrtcApi& api) {
#define KILN_CUDA_LOAD_MEMBER(name) \
  KILN_RETURN_IF_ERROR(api.library.Load(KILN_CUDA_STRINGIFY(name), &api.name));
  KILN_NVRTC_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
#undef KILN_CUDA_LOAD_MEMBER
  return KILN_NVRTC(api, nvrtcVersion(&api.version_major, &api.version_minor));
}

}  // namespace

StatusOr<std::shared_ptr<const NvrtcApi>> NvrtcApi::Load(const std::string& library) {
  std::vector<std::string> defaults = {StrCat("libnvrtc.so.", CUDA_VERSION / 1000)};
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    if (defaults[0] != name) defaults.push_back(name);
  }
  std::vector<std::string> candidates =
      library.empty() ? LibraryCandidates(GetCudaLibraryPaths().nvrtc, ToolkitLibraryCandidates(defaults))
                      : std::vector<std::string>{library};
  return LoadApi<NvrtcApi>("nvrtc", candidates, LoadMembers);
}

StatusOr<std::shared_ptr<const NvrtcApi>> NvrtcApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const NvrtcApi>>(Load());
  return *loaded;
}

Status NvrtcStatus(const NvrtcApi& api, nvrtcResult result, std::string_view call) {
  if (result == NVRTC_SUCCESS) return OkStatus();
  const char* text = api.nvrtcGetErrorString != nullptr ? api.nvrtcGetErrorString(result) : nullptr;
  std::string message = StrCat("nvrtc: ", call, ": ",
                               text != nullptr ? text : StrCat("error ", static_cast<int>(result)));
  switch (result) {
    case NVRTC_ERROR_OUT_OF_MEMORY:
      return ResourceExhausted(message);
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_INVALID_PROGRAM:
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_COMPILATION:
      return InvalidArgument(message);
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return NotFound(message);
    default:
      return Internal(message);
  }
}

}  // namespace kiln::cuda
