#include "kiln/cuda/driver_api.h"

#include "kiln/base/strings.h"

namespace kiln::cuda {

StatusOr<std::shared_ptr<const DriverApi>> DriverApi::Load(const std::string& library) {
  // Besides the loader's search path, where containers commonly mount the driver.
  std::vector<std::string> candidates =
      library.empty() ? LibraryCandidates(GetCudaLibraryPaths().driver,
                                          {"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
                                           "/usr/lib/wsl/lib/libcuda.so.1"})
                      : std::vector<std::string>{library};
  StatusOr<SharedLibrary> opened = SharedLibrary::Open("cuda", candidates);
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound) {
      return Unavailable("cuda: no driver (", candidates.front(), " not found)");
    }
    return Unavailable(opened.status().message());
  }
  auto api = std::make_shared<DriverApi>();
  api->library = std::move(opened).value();
#define KILN_CUDA_LOAD_MEMBER(name) \
  KILN_RETURN_IF_ERROR(api->library.Load(KILN_CUDA_STRINGIFY(name), &api->name));
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
#undef KILN_CUDA_LOAD_MEMBER
  return std::shared_ptr<const DriverApi>(std::move(api));
}

StatusOr<std::shared_ptr<const DriverApi>> DriverApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const DriverApi>>(Load());
  return *loaded;
}

Status CuStatus(const DriverApi& api, CUresult result, std::string_view call) {
  if (result == CUDA_SUCCESS) return OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string message =
      StrCat("cuda: ", call, ": ", name != nullptr ? name : "CUDA error",
             name != nullptr ? "" : StrCat(" ", static_cast<int>(result)),
             text != nullptr ? StrCat(" (", text, ")") : std::string());
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ResourceExhausted(message);
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_DEVICE:
      return InvalidArgument(message);
    case CUDA_ERROR_NOT_FOUND:
      return NotFound(message);
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return Unavailable(message);
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      return Unimplemented(message);
    case CUDA_ERROR_NOT_READY:
      return FailedPrecondition(message);
    default:
      return Internal(message);
  }
}

}  // namespace kiln::cuda
