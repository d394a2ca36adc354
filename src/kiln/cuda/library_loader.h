// Run-time loading of vendor libraries: the machinery behind kiln's one symbol table.
//
// kiln compiles against the CUDA toolkit headers but links no vendor library. Each library
// (driver API, NVRTC, cuBLAS, cuBLASLt, cuDNN, NCCL) has an API struct (driver_api.h,
// vendor_apis.h) generated from one X-macro list of function names: the list declares one
// member per function, typed `decltype(&::name)` from the vendor's own prototype, and a loader
// that dlsym()s each. Names go through the vendor headers' macros first, so `cuMemAlloc` in the
// list becomes the member and the symbol `cuMemAlloc_v2`, exactly what code compiled against
// those headers would call; callers write `api.cuMemAlloc(...)` as usual.
//
// Libraries are opened with dlopen(RTLD_NOW | RTLD_LOCAL) and never closed (vendor libraries
// do not support being unloaded reliably). A missing library or symbol is a Status, never a
// loader error: see LibraryNotFound and MissingSymbol below for the messages.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"

// Stringizes after macro expansion (so vendor renames such as cuMemAlloc → cuMemAlloc_v2 apply).
#define KILN_CUDA_STRINGIFY_INNER(x) #x
#define KILN_CUDA_STRINGIFY(x) KILN_CUDA_STRINGIFY_INNER(x)

namespace kiln::cuda {

// An opened shared library.
class SharedLibrary {
 public:
  SharedLibrary() = default;

  // Opens the first of `candidates` (file names searched the usual way, or paths) that loads.
  // On failure returns NotFound when no candidate exists, or Unavailable with the loader's
  // message when one exists but fails to load; `what` ("cuda", "nvrtc") prefixes messages.
  static StatusOr<SharedLibrary> Open(std::string_view what,
                                      const std::vector<std::string>& candidates);

  // The address of `symbol`, or nullptr.
  void* Symbol(const char* symbol) const;
  // Resolves `symbol` into `*slot`; NotFound naming the library when it is missing.
  template <typename Fn>
  Status Load(const char* symbol, Fn* slot) const {
    void* address = Symbol(symbol);
    if (address == nullptr) return MissingSymbol(symbol);
    *slot = reinterpret_cast<Fn>(address);
    return OkStatus();
  }

  const std::string& name() const { return name_; }  // the candidate that loaded
  const std::string& path() const { return path_; }  // its resolved file path

 private:
  Status MissingSymbol(const char* symbol) const;

  void* handle_ = nullptr;
  std::string what_;
  std::string name_;
  std::string path_;
};

// Opens the first loadable candidate and resolves every member of an API struct; `load_members`
// is `Status(Api&)`, usually generated from the library's X-macro list.
template <typename Api, typename LoadMembers>
StatusOr<std::shared_ptr<const Api>> LoadApi(std::string_view what,
                                             const std::vector<std::string>& candidates,
                                             LoadMembers load_members) {
  KILN_ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::Open(what, candidates));
  auto api = std::make_shared<Api>();
  api->library = std::move(library);
  KILN_RETURN_IF_ERROR(load_members(*api));
  return std::shared_ptr<const Api>(std::move(api));
}

// Where kiln finds the CUDA libraries and headers, when not told per call: each field a file
// name or path tried alone instead of the usual candidates; empty (every default): the usual
// candidates (each API's Load comment lists them). Process-wide, since each library is loaded
// once per process (Api::Default()): set it before the first use. The cuda backend sets the
// fields its platform-level flags name (cuda_driver_library, ... cuda_include_dir:
// CreateCudaBackend); the `kiln` tool fills those from KILN_CUDA_DRIVER_LIBRARY,
// KILN_NVRTC_LIBRARY, ... KILN_CUDA_INCLUDE_DIR (api/environment.h). No library reads KILN_*
// variables.
struct CudaLibraryPaths {
  std::string driver;    // libcuda (DriverApi)
  std::string nvrtc;     // NvrtcApi
  std::string cublas;    // CublasApi
  std::string cublaslt;  // CublasLtApi
  std::string cufft;     // CufftApi
  std::string cusolver;  // CusolverApi
  std::string cudnn;     // CudnnApi
  std::string nccl;      // NcclApi
  std::string mpi;       // MpiBootstrap's libmpi (runs over several processes)
  // Not a library: the toolkit include directory NVRTC compiles against (searched first,
  // FindToolkitIncludeDirs in nvrtc_compiler.h).
  std::string include_dir;
};
CudaLibraryPaths GetCudaLibraryPaths();
void SetCudaLibraryPaths(const CudaLibraryPaths& paths);  // thread-safe

// The candidates to try for a library: `configured` alone when set (a CudaLibraryPaths field:
// a single name or path), else `defaults`.
std::vector<std::string> LibraryCandidates(const std::string& configured,
                                           const std::vector<std::string>& defaults);

// `sonames` (searched the usual way), then each of them inside the toolkit's library
// directories ($CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64), for machines whose
// loader path does not include the toolkit.
std::vector<std::string> ToolkitLibraryCandidates(const std::vector<std::string>& sonames);

}  // namespace kiln::cuda
