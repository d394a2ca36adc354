// NvrtcCompiler: CUDA C++ source → cubin (or PTX) through NVRTC, with an on-disk cache.
//
//   KILN_ASSIGN_OR_RETURN(auto compiler, NvrtcCompiler::Create({}));
//   NvrtcRequest request;
//   request.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2; }";
//   request.arch = "sm_90";
//   KILN_ASSIGN_OR_RETURN(NvrtcProgram program, compiler->Compile(request));
//   KILN_ASSIGN_OR_RETURN(auto module,
//                         device.LoadModule(runtime::ModuleSpec::FromCubin(program.cubin)));
//
// Architectures: "sm_XY" (and "sm_XYa"/"sm_XYf" family variants) produce a cubin for exactly
// that GPU generation; "compute_XY" produces PTX, which the driver JIT-compiles at load time.
// The architecture must be one NVRTC supports (NvrtcCompiler::supported_archs()).
//
// Headers: the toolkit's include directory and its CCCL directory (libcu++, CUB, Thrust) are on
// the include path, found from CudaLibraryPaths::include_dir (library_loader.h; the cuda
// backend's flag cuda_include_dir, the `kiln` tool's KILN_CUDA_INCLUDE_DIR), $CUDA_HOME/include,
// $CUDA_PATH/include, the directory NVRTC was loaded from (../include, ../../include), then
// /usr/local/cuda/include.
//
// Cache: results are stored under <cache root>/nvrtc/ (see DiskCache; root
// DiskCache::DefaultRoot(): the `kiln` tool's KILN_CACHE_DIR, else ~/.cache/kiln), keyed by
// SHA-256 over (source, in-memory headers, architecture, the full option list including include
// directories, name expressions, NVRTC version and library size). A damaged entry is detected by its checksum, dropped and recompiled. Cache failures
// never fail a compile: without a usable directory the compiler just compiles.
//
// Errors: a compile error is InvalidArgument whose message holds NVRTC's log; an unsupported
// architecture is InvalidArgument listing the supported ones; a missing NVRTC library is
// NotFound ("nvrtc: libnvrtc.so.13 / ... not found").
//
// Thread safety: Compile may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/nvrtc_api.h"
#include "kiln/runtime/disk_cache.h"

namespace kiln::cuda {

struct NvrtcOptions {
  // NVRTC library to load; empty (default): CudaLibraryPaths::nvrtc or the usual sonames.
  std::string library;
  // Extra include directories, searched before the toolkit's. Default none.
  std::vector<std::string> include_dirs;
  // Use the on-disk cache. Default on.
  bool use_cache = true;
  // Cache root; empty (default): DiskCache::DefaultRoot() (the `kiln` tool's KILN_CACHE_DIR,
  // else ~/.cache/kiln).
  std::string cache_root;
};

struct NvrtcRequest {
  std::string source;
  std::string program_name = "kiln_kernel.cu";  // appears in NVRTC's diagnostics
  std::string arch = "sm_90";
  // Extra NVRTC options ("-DN=4", "--use_fast_math", "-lineinfo"); "-std=c++17" is added
  // unless an -std option is given.
  std::vector<std::string> options;
  // In-memory headers: (include name, contents).
  std::vector<std::pair<std::string, std::string>> headers;
  // C++ names whose mangled ("lowered") names are wanted: "my_kernel<float, 4>".
  std::vector<std::string> name_expressions;
};

struct NvrtcProgram {
  std::string arch;
  std::string cubin;  // for sm_* targets
  std::string ptx;    // for compute_* targets
  std::string log;    // NVRTC's warnings (empty when clean)
  std::vector<std::pair<std::string, std::string>> lowered_names;  // expression → mangled
  bool from_cache = false;

  // The mangled name of `name_expression` (one of the request's).
  StatusOr<std::string> LoweredName(std::string_view name_expression) const;
};

class NvrtcCompiler {
 public:
  static StatusOr<std::unique_ptr<NvrtcCompiler>> Create(const NvrtcOptions& options);

  StatusOr<NvrtcProgram> Compile(const NvrtcRequest& request);

  std::string version() const;  // "13.0"
  const std::vector<int>& supported_archs() const { return supported_archs_; }  // 75, 80, ...
  const std::vector<std::string>& include_dirs() const { return include_dirs_; }
  // nullptr when the cache is disabled or unusable.
  runtime::DiskCache* cache() const { return cache_.get(); }
  // The cache key of `request` (what Compile would look up).
  std::string CacheKey(const NvrtcRequest& request) const;

 private:
  NvrtcCompiler() = default;
  std::vector<std::string> FullOptions(const NvrtcRequest& request) const;
  StatusOr<NvrtcProgram> CompileUncached(const NvrtcRequest& request,
                                         const std::vector<std::string>& options) const;

  std::shared_ptr<const NvrtcApi> api_;
  std::vector<int> supported_archs_;
  std::vector<std::string> include_dirs_;
  std::unique_ptr<runtime::DiskCache> cache_;
  uint64_t library_size_ = 0;
};

// The toolkit include directories NVRTC should see (see the header comment for the search
// order): the first directory holding cuda_fp16.h, plus its cccl/ subdirectory when present.
// `nvrtc_library_path` is where NVRTC was loaded from (may be empty).
std::vector<std::string> FindToolkitIncludeDirs(const std::string& nvrtc_library_path);

// Checks an architecture name: "sm_90", "sm_90a", "compute_80"... Returns the numeric
// architecture (90) or InvalidArgument.
StatusOr<int> ParseArch(std::string_view arch);

}  // namespace kiln::cuda
