#include "kiln/cuda/library_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kiln/base/strings.h"

namespace kiln::cuda {

StatusOr<SharedLibrary> SharedLibrary::Open(std::string_view what,
                                            const std::vector<std::string>& candidates) {
  std::vector<std::string> load_errors;  // candidates that exist but failed to load
  for (const std::string& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      std::string message = error != nullptr ? error : "unknown dlopen error";
      // "cannot open shared object file: No such file or directory" means absent; anything
      // else (wrong architecture, missing dependency, bad ELF) is worth reporting.
      if (message.find("No such file or directory") == std::string::npos) {
        load_errors.push_back(std::move(message));
      }
      continue;
    }
    SharedLibrary library;
    library.handle_ = handle;
    library.what_ = std::string(what);
    library.name_ = name;
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
      library.path_ = map->l_name;
    }
    if (library.path_.empty()) library.path_ = name;
    return library;
  }
  if (!load_errors.empty()) {
    return Unavailable(what, ": cannot load ", StrJoin(candidates, " / "), ": ",
                       StrJoin(load_errors, "; "));
  }
  if (candidates.size() <= 1) return NotFound(what, ": ", StrJoin(candidates, ""), " not found");
  return NotFound(what, ": ", candidates.front(), " not found (also looked for ",
                  StrJoin(std::vector<std::string>(candidates.begin() + 1, candidates.end()), ", "),
                  ")");
}

void* SharedLibrary::Symbol(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, symbol);
}

Status SharedLibrary::MissingSymbol(const char* symbol) const {
  return NotFound(what_, ": ", path_, " lacks the symbol ", symbol,
                  " (the library is older than the headers kiln was built with; update it)");
}

namespace {
std::mutex& PathsMutex() {
  static std::mutex mu;
  return mu;
}
CudaLibraryPaths& Paths() {
  static auto* paths = new CudaLibraryPaths();  // never destroyed
  return *paths;
}
}  // namespace

CudaLibraryPaths GetCudaLibraryPaths() {
  std::lock_guard<std::mutex> lock(PathsMutex());
  return Paths();
}

void SetCudaLibraryPaths(const CudaLibraryPaths& paths) {
  std::lock_guard<std::mutex> lock(PathsMutex());
  Paths() = paths;
}

std::vector<std::string> LibraryCandidates(const std::string& configured,
                                           const std::vector<std::string>& defaults) {
  if (!configured.empty()) return {configured};
  return defaults;
}

std::vector<std::string> ToolkitLibraryCandidates(const std::vector<std::string>& sonames) {
  std::vector<std::string> out = sonames;
  std::vector<std::string> dirs;
  // The toolkit's own conventions (CUDA_HOME, CUDA_PATH): ordinary platform defaults, read here.
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
      dirs.push_back(StrCat(root, "/lib64"));
    }
  }
  dirs.push_back("/usr/local/cuda/lib64");
  for (const std::string& dir : dirs) {
    for (const std::string& name : sonames) {
      std::string path = StrCat(dir, "/", name);
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
  }
  return out;
}

}  // namespace kiln::cuda
