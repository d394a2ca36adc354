// The symbol table's failure modes, which every machine without a GPU exercises (label cpu).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kiln/cuda/cuda_platform.h"
#include "kiln/cuda/driver_api.h"
#include "kiln/cuda/nvrtc_api.h"
#include "kiln/cuda/vendor_apis.h"
#include "kiln/runtime/drivers.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

constexpr const char* kMissing = "libkiln_no_such_driver.so.1";

bool SystemHasDriver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

TEST(CudaLoaderTest, MissingDriverIsAStatus) {
  StatusOr<std::shared_ptr<const DriverApi>> api = DriverApi::Load(kMissing);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(api.status().message(), "cuda: no driver (libkiln_no_such_driver.so.1 not found)");

  CudaPlatformOptions options;
  options.driver_library = kMissing;
  StatusOr<std::unique_ptr<runtime::Platform>> platform = CreateCudaPlatform(options);
  ASSERT_FALSE(platform.ok());
  EXPECT_EQ(platform.status().message(), "cuda: no driver (libkiln_no_such_driver.so.1 not found)");
}

TEST(CudaLoaderTest, ConfiguredPathSelectsTheDriver) {
  CudaLibraryPaths saved = GetCudaLibraryPaths();
  CudaLibraryPaths paths = saved;
  paths.driver = "/nonexistent/libcuda.so.1";
  SetCudaLibraryPaths(paths);
  StatusOr<std::shared_ptr<const DriverApi>> api = DriverApi::Load();
  SetCudaLibraryPaths(saved);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().message(), "cuda: no driver (/nonexistent/libcuda.so.1 not found)");
}

TEST(CudaLoaderTest, ConfiguredPathsReplaceTheCandidates) {
  CudaLibraryPaths saved = GetCudaLibraryPaths();
  CudaLibraryPaths paths;
  paths.cublas = "/nonexistent/libcublas.so";
  SetCudaLibraryPaths(paths);
  StatusOr<std::shared_ptr<const CublasApi>> cublas = CublasApi::Load();
  SetCudaLibraryPaths(saved);
  ASSERT_FALSE(cublas.ok());
  EXPECT_EQ(cublas.status().message(), "cublas: /nonexistent/libcublas.so not found");
  EXPECT_EQ(LibraryCandidates("", {"a.so", "b.so"}), (std::vector<std::string>{"a.so", "b.so"}));
  EXPECT_EQ(LibraryCandidates("/x/c.so", {"a.so"}), std::vector<std::string>{"/x/c.so"});
}

// The library reads no KILN_* variable: the `kiln` tool turns KILN_CUDA_DRIVER_LIBRARY into the
// cuda_driver_library flag (api/environment.h), which the cuda backend passes on.
TEST(CudaLoaderTest, TheEnvironmentIsNotRead) {
  setenv("KILN_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  StatusOr<std::shared_ptr<const DriverApi>> api = DriverApi::Load();
  unsetenv("KILN_CUDA_DRIVER_LIBRARY");
  if (api.ok()) return;  // the system's driver loaded
  EXPECT_EQ(api.status().message().find("/nonexistent/"), std::string::npos)
      << api.status().message();
}

TEST(CudaLoaderTest, NoDriverOnThisMachineGivesTheDocumentedMessage) {
  if (SystemHasDriver()) {
    GTEST_SKIP() << "libcuda.so.1 is installed here; the no-driver message is covered by "
                    "MissingDriverIsAStatus";
  }
  StatusOr<std::unique_ptr<runtime::Platform>> platform = CreateCudaPlatform();
  ASSERT_FALSE(platform.ok());
  EXPECT_EQ(platform.status().message(), "cuda: no driver (libcuda.so.1 not found)");
  // `kiln devices` shows the same line.
  std::vector<runtime::PlatformListing> listing = runtime::ListPlatformsAndDevices();
  ASSERT_EQ(listing.size(), 3u);  // host, cuda, and rocm (not built: registered as unavailable)
  EXPECT_EQ(listing[1].name, "cuda");
  EXPECT_EQ(listing[2].name, "rocm");
  EXPECT_FALSE(listing[2].status.ok());
  EXPECT_EQ(listing[1].status.message(), "cuda: no driver (libcuda.so.1 not found)");
  EXPECT_NE(runtime::FormatPlatformListing(listing, false)
                .find("cuda: unavailable: cuda: no driver (libcuda.so.1 not found)"),
            std::string::npos);
}

TEST(CudaLoaderTest, ALibraryWithoutTheSymbolsIsAStatus) {
  // zlib is on every machine that runs kiln (a dependency) and exports no cu* symbol.
  StatusOr<std::shared_ptr<const DriverApi>> api = DriverApi::Load("libz.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kNotFound);
  EXPECT_NE(api.status().message().find("lacks the symbol cuInit"), std::string::npos)
      << api.status().message();
}

TEST(CudaLoaderTest, AnUnloadableFileIsAStatus) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("kiln_not_a_library_" + std::to_string(getpid()) + ".so"))
                         .string();
  { std::ofstream(path) << "this is not an ELF file"; }
  StatusOr<std::shared_ptr<const DriverApi>> api = DriverApi::Load(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(api.status().message().rfind("cuda: cannot load " + path, 0), 0u)
      << api.status().message();
}

TEST(CudaLoaderTest, TheToolkitStubDriverFailsCleanly) {
  // The toolkit ships a link-time stub libcuda whose every call fails; loading it must give a
  // status, not a crash.
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no stub driver at " << stub;
  CudaPlatformOptions options;
  options.driver_library = stub;
  StatusOr<std::unique_ptr<runtime::Platform>> platform = CreateCudaPlatform(options);
  ASSERT_FALSE(platform.ok());
  EXPECT_EQ(platform.status().message().rfind("cuda: ", 0), 0u) << platform.status().message();
  std::cout << "stub driver: " << platform.status().message() << "\n";
}

TEST(CudaLoaderTest, DriverErrorsBecomeStatusesInOnePlace) {
  // A table with only the error-string functions, standing in for the driver.
  DriverApi api;
  api.cuGetErrorName = [](CUresult r, const char** s) -> CUresult {
    *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_X";
    return CUDA_SUCCESS;
  };
  api.cuGetErrorString = [](CUresult, const char** s) -> CUresult {
    *s = "out of memory";
    return CUDA_SUCCESS;
  };
  KILN_EXPECT_OK(CuStatus(api, CUDA_SUCCESS, "cuInit(0)"));
  const char* name = nullptr;
  KILN_EXPECT_OK(KILN_CU(api, cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name)));  // the macro
  EXPECT_STREQ(name, "CUDA_ERROR_OUT_OF_MEMORY");
  Status status = CuStatus(api, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(&ptr, bytes)");
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "cuda: cuMemAlloc(&ptr, bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(CuStatus(api, CUDA_ERROR_INVALID_VALUE, "f").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CuStatus(api, CUDA_ERROR_NOT_FOUND, "f").code(), StatusCode::kNotFound);
  EXPECT_EQ(CuStatus(api, CUDA_ERROR_NO_DEVICE, "f").code(), StatusCode::kUnavailable);
  EXPECT_EQ(CuStatus(api, CUDA_ERROR_NOT_SUPPORTED, "f").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(CuStatus(api, CUDA_ERROR_ILLEGAL_ADDRESS, "f").code(), StatusCode::kInternal);
  // Without the string functions the numeric code still shows.
  DriverApi bare;
  EXPECT_EQ(CuStatus(bare, CUDA_ERROR_ILLEGAL_ADDRESS, "cuLaunchKernel").message(),
            "cuda: cuLaunchKernel: CUDA error 700");
}

TEST(CudaLoaderTest, OtherLibrariesReportMissingFiles) {
  StatusOr<std::shared_ptr<const NvrtcApi>> nvrtc = NvrtcApi::Load("libkiln_no_nvrtc.so");
  ASSERT_FALSE(nvrtc.ok());
  EXPECT_EQ(nvrtc.status().message(), "nvrtc: libkiln_no_nvrtc.so not found");
  StatusOr<std::shared_ptr<const CublasApi>> cublas = CublasApi::Load("libkiln_no_cublas.so");
  ASSERT_FALSE(cublas.ok());
  EXPECT_EQ(cublas.status().message(), "cublas: libkiln_no_cublas.so not found");
}

TEST(CudaLoaderTest, ReportsEveryVendorLibrary) {
  std::vector<std::pair<std::string, std::string>> versions = VendorLibraryVersions();
  std::vector<std::string> names;
  for (const auto& [name, version] : versions) {
    names.push_back(name);
    EXPECT_FALSE(version.empty()) << name;
    std::cout << name << ": " << version << "\n";
  }
  EXPECT_EQ(names, (std::vector<std::string>{"nvrtc", "cublas", "cublasLt", "cufft", "cusolver", "cudnn", "nccl"}));
}

TEST(CudaLoaderTest, LoadsTheToolkitLibrariesThatArePresent) {
  // Where the toolkit is installed (this build found its headers), its host-side libraries
  // load without a GPU and their symbol tables resolve completely.
  StatusOr<std::shared_ptr<const NvrtcApi>> nvrtc = NvrtcApi::Default();
  if (!nvrtc.ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.status().message();
  EXPECT_GE((*nvrtc)->version_major, 12);
  KILN_EXPECT_OK(NvrtcStatus(**nvrtc, NVRTC_SUCCESS, "x"));
  Status compile_error = NvrtcStatus(**nvrtc, NVRTC_ERROR_COMPILATION, "nvrtcCompileProgram");
  EXPECT_EQ(compile_error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(compile_error.message(), "nvrtc: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION");
  StatusOr<std::shared_ptr<const CublasApi>> cublas = CublasApi::Default();
  if (cublas.ok()) {
    EXPECT_NE((*cublas)->Version(), "0.0.0");
    Status s = CublasStatus(**cublas, CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&handle)");
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(s.message().find("CUBLAS_STATUS_ALLOC_FAILED"), std::string::npos) << s.message();
  }
  StatusOr<std::shared_ptr<const CusolverApi>> cusolver = CusolverApi::Default();
  if (cusolver.ok()) {
    EXPECT_NE((*cusolver)->Version(), "0.0.0");
    Status s = CusolverStatus(CUSOLVER_STATUS_INVALID_VALUE, "cusolverDnSpotrf");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "cusolver: cusolverDnSpotrf: CUSOLVER_STATUS_INVALID_VALUE");
  }
}

TEST(CudaLoaderTest, MissingCusolverIsAClearError) {
  StatusOr<std::shared_ptr<const CusolverApi>> api = CusolverApi::Load("/nonexistent/libcusolver.so.12");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kNotFound) << api.status().ToString();
  EXPECT_NE(api.status().message().find("cusolver"), std::string::npos) << api.status().message();
}

}  // namespace
}  // namespace kiln::cuda
