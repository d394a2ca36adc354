// SharedLibrary: a vendor library opened at run time (dlopen), for drivers that reach their
// vendor's libraries through a symbol table instead of linking them (rocm/hip_api.h; the CUDA
// driver keeps its own copy in cuda/library_loader.h, which predates this one).
//
// Libraries are opened with dlopen(RTLD_NOW | RTLD_LOCAL) and never closed (vendor libraries do
// not support being unloaded reliably). A missing library or symbol is a Status:
//   NotFound    "rocm: libamdhip64.so.6 not found (also looked for libamdhip64.so.5)"
//   Unavailable "rocm: cannot load X: <the loader's message>" (exists but does not load)
//   NotFound    "rocm: /usr/lib/.../libamdhip64.so.5 lacks the symbol hipFoo (...)"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"

// Stringizes after macro expansion, so a vendor's renames (hipGetDeviceProperties →
// hipGetDevicePropertiesR0600) give the symbol that code compiled against its headers calls.
#define KILN_STRINGIFY_INNER(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY_INNER(x)

namespace kiln::runtime {

class SharedLibrary {
 public:
  SharedLibrary() = default;

  // Opens the first of `candidates` (file names searched the usual way, or paths) that loads;
  // `what` ("rocm", "hiprtc") prefixes messages.
  static StatusOr<SharedLibrary> Open(std::string_view what,
                                      const std::vector<std::string>& candidates);

  bool is_open() const { return handle_ != nullptr; }
  // The address of `symbol`, or nullptr.
  void* Symbol(const char* symbol) const;
  // Resolves `symbol` into `*slot`; NotFound naming the library and the symbol when missing.
  template <typename Fn>
  Status Load(const char* symbol, Fn* slot) const {
    void* address = Symbol(symbol);
    if (address == nullptr) return MissingSymbol(symbol);
    *slot = reinterpret_cast<Fn>(address);
    return OkStatus();
  }
  // Resolves `symbol` into `*slot` when present, else leaves it null (optional entry points).
  template <typename Fn>
  void LoadOptional(const char* symbol, Fn* slot) const {
    *slot = reinterpret_cast<Fn>(Symbol(symbol));
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

}  // namespace kiln::runtime
