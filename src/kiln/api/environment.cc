#include "kiln/api/environment.h"

#include <cctype>
#include <cstdlib>

#include "kiln/autotune/device_lock.h"
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/runtime/disk_cache.h"

namespace kiln {

namespace {

// The variable's value, or "" when it is unset.
std::string Env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v != nullptr ? v : "";
}

// Older environment names of backend flags (before the flags existed), read where the newer
// KILN_<FLAG> is not set.
constexpr std::pair<std::string_view, std::string_view> kLegacyNames[] = {
    {"KILN_NVRTC_LIBRARY", "cuda_nvrtc_library"},       {"KILN_CUBLAS_LIBRARY", "cuda_cublas_library"},
    {"KILN_CUBLASLT_LIBRARY", "cuda_cublaslt_library"}, {"KILN_CUFFT_LIBRARY", "cuda_cufft_library"},
    {"KILN_CUDNN_LIBRARY", "cuda_cudnn_library"},       {"KILN_NCCL_LIBRARY", "cuda_nccl_library"},
    // A process started by OpenMPI's mpirun: its place in the job (docs/collectives.md).
    {"OMPI_COMM_WORLD_SIZE", "cuda_process_count"},     {"OMPI_COMM_WORLD_RANK", "cuda_process_index"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "cuda_local_rank"},
};

}  // namespace

std::vector<std::string> FlagNames(std::string_view flag_help) {
  std::vector<std::string> names;
  for (std::string_view line : StrSplit(flag_help, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string_view::npos && eq > 0) names.emplace_back(StripWhitespace(line.substr(0, eq)));
  }
  return names;
}

BackendFlags BackendFlagsFromEnvironment(const BackendRegistry& registry) {
  BackendFlags flags;
  for (const Backend* b : registry.backends())
    for (const std::string& name : FlagNames(b->flag_help())) {
      std::string var = "KILN_";
      for (char c : name) var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (std::string v = Env(var); !v.empty()) {
        flags[name] = v;
        continue;
      }
      for (const auto& [legacy, flag] : kLegacyNames)
        if (flag == name)
          if (std::string v = Env(std::string(legacy)); !v.empty()) flags[name] = v;
    }
  return flags;
}

ClientOptions ClientOptionsFromEnvironment() {
  // The flag names come from the backends themselves (creating one is cheap: no driver is
  // loaded until a device is used).
  BackendRegistry registry;
  RegisterBuiltinBackends(registry);
  ClientOptions options;
  options.flags = BackendFlagsFromEnvironment(registry);
  return options;
}

void ApplyEnvironmentToProcess() {
  if (std::string v = Env("KILN_LOG_LEVEL"); !v.empty()) SetLogLevel(std::atoi(v.c_str()));
  if (std::string v = Env("KILN_CACHE_DIR"); !v.empty()) runtime::DiskCache::SetDefaultRoot(v);
  if (std::string v = Env("KILN_LOCK_DIR"); !v.empty()) autotune::SetDefaultDeviceLockDirectory(v);
}

}  // namespace kiln
