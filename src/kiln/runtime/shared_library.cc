#include "kiln/runtime/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include "kiln/base/strings.h"

namespace kiln::runtime {

StatusOr<SharedLibrary> SharedLibrary::Open(std::string_view what,
                                            const std::vector<std::string>& candidates) {
  std::vector<std::string> load_errors;  // candidates that exist but failed to load
  for (const std::string& name : candidates) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      std::string message = error != nullptr ? error : "unknown dlopen error";
      // "No such file or directory" means absent; anything else (wrong architecture, a missing
      // dependency, a bad ELF, a too old libc) is worth reporting.
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

}  // namespace kiln::runtime
