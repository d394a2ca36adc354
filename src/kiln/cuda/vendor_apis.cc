#include "kiln/cuda/vendor_apis.h"

#include <cuda.h>  // CUDA_VERSION

#include "kiln/base/strings.h"
#include "kiln/cuda/nccl_api.h"
#include "kiln/cuda/nvrtc_api.h"

namespace kiln::cuda {

namespace {

#define KILN_CUDA_LOAD_MEMBER(name) \
  KILN_RETURN_IF_ERROR(api.library.Load(KILN_CUDA_STRINGIFY(name), &api.name));

#define KILN_CUDA_LOAD_TYPED_MEMBER(name, result, params) KILN_CUDA_LOAD_MEMBER(name)

Status LoadCublas(CublasApi& api) {
  KILN_CUBLAS_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
  KILN_CUBLAS_TYPED_FUNCTIONS(KILN_CUDA_LOAD_TYPED_MEMBER)
  return OkStatus();
}
Status LoadCublasLt(CublasLtApi& api) {
  KILN_CUBLASLT_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
  return OkStatus();
}
Status LoadCufft(CufftApi& api) {
  KILN_CUFFT_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
  return OkStatus();
}
Status LoadCusolver(CusolverApi& api) {
  KILN_CUSOLVER_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
  return OkStatus();
}
#if defined(KILN_HAVE_CUDNN_HEADERS)
Status LoadCudnn(CudnnApi& api) {
  KILN_CUDNN_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
  return OkStatus();
}
#endif

#undef KILN_CUDA_LOAD_TYPED_MEMBER
#undef KILN_CUDA_LOAD_MEMBER

// `explicit_library` (the Load argument), else `configured` (a CudaLibraryPaths field), else
// `defaults` and their toolkit locations.
std::vector<std::string> Candidates(const std::string& explicit_library, const std::string& configured,
                                    std::vector<std::string> defaults) {
  if (!explicit_library.empty()) return {explicit_library};
  return LibraryCandidates(configured, ToolkitLibraryCandidates(defaults));
}

// major*10000 + minor*100 + patch → "major.minor.patch"
std::string DottedVersion(size_t v) {
  return StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
}

Status LibraryStatus(std::string_view library, std::string_view call, int code,
                     const char* name, const char* text, StatusCode mapped) {
  return Status(mapped, StrCat(library, ": ", call, ": ", name != nullptr ? name : "error",
                               name != nullptr ? "" : StrCat(" ", code),
                               text != nullptr ? StrCat(" (", text, ")") : std::string()));
}

StatusCode MapCublas(cublasStatus_t result) {
  switch (result) {
    case CUBLAS_STATUS_ALLOC_FAILED: return StatusCode::kResourceExhausted;
    case CUBLAS_STATUS_INVALID_VALUE: return StatusCode::kInvalidArgument;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return StatusCode::kUnimplemented;
    case CUBLAS_STATUS_NOT_INITIALIZED: return StatusCode::kFailedPrecondition;
    default: return StatusCode::kInternal;
  }
}

}  // namespace

StatusOr<std::shared_ptr<const CublasApi>> CublasApi::Load(const std::string& library) {
  return LoadApi<CublasApi>(
      "cublas",
      Candidates(library, GetCudaLibraryPaths().cublas,
                 {StrCat("libcublas.so.", CUDA_VERSION / 1000), "libcublas.so"}),
      LoadCublas);
}
StatusOr<std::shared_ptr<const CublasApi>> CublasApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const CublasApi>>(Load());
  return *loaded;
}
std::string CublasApi::Version() const {
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return StrCat(major, ".", minor, ".", patch);
}

StatusOr<std::shared_ptr<const CublasLtApi>> CublasLtApi::Load(const std::string& library) {
  return LoadApi<CublasLtApi>(
      "cublasLt",
      Candidates(library, GetCudaLibraryPaths().cublaslt,
                 {StrCat("libcublasLt.so.", CUDA_VERSION / 1000), "libcublasLt.so"}),
      LoadCublasLt);
}
StatusOr<std::shared_ptr<const CublasLtApi>> CublasLtApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const CublasLtApi>>(Load());
  return *loaded;
}
std::string CublasLtApi::Version() const { return DottedVersion(cublasLtGetVersion()); }

Status CublasStatus(const CublasApi& api, cublasStatus_t result, std::string_view call) {
  if (result == CUBLAS_STATUS_SUCCESS) return OkStatus();
  return LibraryStatus("cublas", call, static_cast<int>(result), api.cublasGetStatusName(result),
                       api.cublasGetStatusString(result), MapCublas(result));
}

Status CublasLtStatus(const CublasLtApi& api, cublasStatus_t result, std::string_view call) {
  if (result == CUBLAS_STATUS_SUCCESS) return OkStatus();
  return LibraryStatus("cublasLt", call, static_cast<int>(result),
                       api.cublasLtGetStatusName(result), api.cublasLtGetStatusString(result),
                       MapCublas(result));
}

StatusOr<std::shared_ptr<const CufftApi>> CufftApi::Load(const std::string& library) {
  return LoadApi<CufftApi>(
      "cufft",
      Candidates(library, GetCudaLibraryPaths().cufft,
                 {StrCat("libcufft.so.", CUFFT_VER_MAJOR), "libcufft.so"}),
      LoadCufft);
}
StatusOr<std::shared_ptr<const CufftApi>> CufftApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const CufftApi>>(Load());
  return *loaded;
}
std::string CufftApi::Version() const {
  int major = 0, minor = 0, patch = 0;
  cufftGetProperty(MAJOR_VERSION, &major);
  cufftGetProperty(MINOR_VERSION, &minor);
  cufftGetProperty(PATCH_LEVEL, &patch);
  return StrCat(major, ".", minor, ".", patch);
}

Status CufftStatus(cufftResult result, std::string_view call) {
  if (result == CUFFT_SUCCESS) return OkStatus();
  const char* name = nullptr;
  StatusCode mapped = StatusCode::kInternal;
  switch (result) {
#define KILN_CUFFT_CASE(e, code) \
  case e:                        \
    name = #e;                   \
    mapped = code;               \
    break;
    KILN_CUFFT_CASE(CUFFT_INVALID_PLAN, StatusCode::kInvalidArgument)
    KILN_CUFFT_CASE(CUFFT_ALLOC_FAILED, StatusCode::kResourceExhausted)
    KILN_CUFFT_CASE(CUFFT_INVALID_TYPE, StatusCode::kInvalidArgument)
    KILN_CUFFT_CASE(CUFFT_INVALID_VALUE, StatusCode::kInvalidArgument)
    KILN_CUFFT_CASE(CUFFT_INTERNAL_ERROR, StatusCode::kInternal)
    KILN_CUFFT_CASE(CUFFT_EXEC_FAILED, StatusCode::kInternal)
    KILN_CUFFT_CASE(CUFFT_SETUP_FAILED, StatusCode::kFailedPrecondition)
    KILN_CUFFT_CASE(CUFFT_INVALID_SIZE, StatusCode::kInvalidArgument)
    KILN_CUFFT_CASE(CUFFT_UNALIGNED_DATA, StatusCode::kInvalidArgument)
    KILN_CUFFT_CASE(CUFFT_INVALID_DEVICE, StatusCode::kFailedPrecondition)
    KILN_CUFFT_CASE(CUFFT_NO_WORKSPACE, StatusCode::kFailedPrecondition)
    KILN_CUFFT_CASE(CUFFT_NOT_IMPLEMENTED, StatusCode::kUnimplemented)
    KILN_CUFFT_CASE(CUFFT_NOT_SUPPORTED, StatusCode::kUnimplemented)
    KILN_CUFFT_CASE(CUFFT_MISSING_DEPENDENCY, StatusCode::kFailedPrecondition)
    KILN_CUFFT_CASE(CUFFT_NVRTC_FAILURE, StatusCode::kInternal)
    KILN_CUFFT_CASE(CUFFT_NVJITLINK_FAILURE, StatusCode::kInternal)
    KILN_CUFFT_CASE(CUFFT_NVSHMEM_FAILURE, StatusCode::kInternal)
#undef KILN_CUFFT_CASE
    default: break;
  }
  return LibraryStatus("cufft", call, static_cast<int>(result), name, nullptr, mapped);
}

StatusOr<std::shared_ptr<const CusolverApi>> CusolverApi::Load(const std::string& library) {
  return LoadApi<CusolverApi>(
      "cusolver",
      Candidates(library, GetCudaLibraryPaths().cusolver,
                 {StrCat("libcusolver.so.", CUSOLVER_VER_MAJOR), "libcusolver.so"}),
      LoadCusolver);
}
StatusOr<std::shared_ptr<const CusolverApi>> CusolverApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const CusolverApi>>(Load());
  return *loaded;
}
std::string CusolverApi::Version() const {
  int major = 0, minor = 0, patch = 0;
  cusolverGetProperty(MAJOR_VERSION, &major);
  cusolverGetProperty(MINOR_VERSION, &minor);
  cusolverGetProperty(PATCH_LEVEL, &patch);
  return StrCat(major, ".", minor, ".", patch);
}

Status CusolverStatus(cusolverStatus_t result, std::string_view call) {
  if (result == CUSOLVER_STATUS_SUCCESS) return OkStatus();
  const char* name = nullptr;
  StatusCode mapped = StatusCode::kInternal;
  switch (result) {
#define KILN_CUSOLVER_CASE(e, code) \
  case e:                           \
    name = #e;                      \
    mapped = code;                  \
    break;
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_NOT_INITIALIZED, StatusCode::kFailedPrecondition)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_ALLOC_FAILED, StatusCode::kResourceExhausted)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_INVALID_VALUE, StatusCode::kInvalidArgument)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_ARCH_MISMATCH, StatusCode::kUnimplemented)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_MAPPING_ERROR, StatusCode::kInternal)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_EXECUTION_FAILED, StatusCode::kInternal)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_INTERNAL_ERROR, StatusCode::kInternal)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED, StatusCode::kUnimplemented)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_NOT_SUPPORTED, StatusCode::kUnimplemented)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_INVALID_LICENSE, StatusCode::kFailedPrecondition)
    KILN_CUSOLVER_CASE(CUSOLVER_STATUS_INVALID_WORKSPACE, StatusCode::kInvalidArgument)
#undef KILN_CUSOLVER_CASE
    default: break;
  }
  return LibraryStatus("cusolver", call, static_cast<int>(result), name, nullptr, mapped);
}

#if defined(KILN_HAVE_CUDNN_HEADERS)
StatusOr<std::shared_ptr<const CudnnApi>> CudnnApi::Load(const std::string& library) {
  return LoadApi<CudnnApi>(
      "cudnn",
      Candidates(library, GetCudaLibraryPaths().cudnn,
                 {StrCat("libcudnn.so.", CUDNN_MAJOR), "libcudnn.so"}),
      LoadCudnn);
}
StatusOr<std::shared_ptr<const CudnnApi>> CudnnApi::Default() {
  static const auto* loaded = new StatusOr<std::shared_ptr<const CudnnApi>>(Load());
  return *loaded;
}
std::string CudnnApi::Version() const { return DottedVersion(cudnnGetVersion()); }

Status CudnnStatus(const CudnnApi& api, cudnnStatus_t result, std::string_view call) {
  if (result == CUDNN_STATUS_SUCCESS) return OkStatus();
  char detail[512] = {0};
  api.cudnnGetLastErrorString(detail, sizeof(detail));
  int code = static_cast<int>(result);
  // cuDNN 9 codes are grouped by thousands: 2xxx bad parameter, 3xxx not supported,
  // 4xxx internal (4003/4004: allocation), 5xxx execution failed.
  StatusCode mapped = StatusCode::kInternal;
  if (code / 1000 == 2) mapped = StatusCode::kInvalidArgument;
  if (code / 1000 == 3) mapped = StatusCode::kUnimplemented;
  if (code == 4003 || code == 4004) mapped = StatusCode::kResourceExhausted;
  if (code / 1000 == 1) mapped = StatusCode::kFailedPrecondition;
  return LibraryStatus("cudnn", call, code, api.cudnnGetErrorString(result),
                       detail[0] != '\0' ? detail : nullptr, mapped);
}
#endif


std::vector<std::pair<std::string, std::string>> VendorLibraryVersions() {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const char* name, auto loaded) {
    if (loaded.ok()) {
      out.emplace_back(name, (*loaded)->Version());
    } else {
      out.emplace_back(name, StrCat("not found (", loaded.status().message(), ")"));
    }
  };
  StatusOr<std::shared_ptr<const NvrtcApi>> nvrtc = NvrtcApi::Default();
  out.emplace_back("nvrtc", nvrtc.ok() ? StrCat((*nvrtc)->version_major, ".",
                                                (*nvrtc)->version_minor)
                                       : StrCat("not found (", nvrtc.status().message(), ")"));
  add("cublas", CublasApi::Default());
  add("cublasLt", CublasLtApi::Default());
  add("cufft", CufftApi::Default());
  add("cusolver", CusolverApi::Default());
#if defined(KILN_HAVE_CUDNN_HEADERS)
  add("cudnn", CudnnApi::Default());
#else
  out.emplace_back("cudnn", "not built (no cudnn.h beside the CUDA headers)");
#endif
  add("nccl", NcclApi::Default());
  return out;
}

}  // namespace kiln::cuda
