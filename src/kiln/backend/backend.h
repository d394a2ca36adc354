// Backend: one platform kiln can run modules on -- "interpreter" (the reference evaluator),
// "cpu", "cuda", later "rocm" -- behind one neutral interface. This is the seam every backend
// implements and the public API (api/client.h) is built on; nothing above it knows a backend's
// own classes.
//
//   Backend
//     Devices()              what it sees now; an error says why there are none (no driver)
//     Compile(module, opts)  -> Executable (backend/executable.h) for one device
//     BufferFromHost(...)    host bytes -> a Buffer on a device (backend/buffer.h)
//     BufferFromPointer(...) memory already on the device, borrowed (the DLPack hook)
//
// Registration: each backend's folder declares itself to CMake with kiln_register_backend
// (cmake/kiln.cmake); the build generates RegisterBuiltinBackends from those declarations, so
// adding a backend touches no neutral file. Backends are created once per registry and live
// as long as it does.
//
// Thread safety: every method may be called from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/backend/buffer.h"
#include "kiln/backend/executable.h"
#include "kiln/backend/options.h"
#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;         // "host", "NVIDIA H200"
  std::string description;  // one line of details ("compute capability 9.0, 132 SMs, 140 GiB")
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;         // "cpu"
  virtual std::string_view description() const = 0;  // one line, for `kiln devices`
  // The devices this backend can run on now; an error says why there are none.
  virtual StatusOr<std::vector<DeviceInfo>> Devices() const = 0;
  // The BackendFlags this backend takes, one "name=VALUES  meaning" line each; empty: none.
  virtual std::string flag_help() const { return ""; }

  // Compiles `module` for device options.device_ordinal. A backend that can compile without
  // its device (cuda, for the sm_90 preset) returns an executable whose can_execute() is
  // false; the others fail with Unavailable. The module is not modified.
  virtual StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module,
                                                        const CompileOptions& options) = 0;

  // Measures the module's implementation choices on device options.device_ordinal, fills the
  // autotuning cache (options.autotune) and reports what was chosen (`kiln tune`;
  // CompileReport::autotune holds the choices). Default: Compile with options.autotune and
  // return its report; FailedPrecondition when no tuning step ran.
  virtual StatusOr<CompileReport> Tune(const HloModule& module, const CompileOptions& options);

  // Copies `bytes` bytes of host memory holding an array of `shape` (its layout, row-major
  // where it has none) onto device `ordinal`.
  virtual StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                           int ordinal) = 0;
  // The same for a literal (an array).
  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal, int ordinal);
  // Wraps memory that already lives on device `ordinal` (a host pointer for host backends, a
  // CUdeviceptr for cuda) without copying; `release` (may be empty) is called once when the
  // buffer and every result aliasing it are gone. Default: Unimplemented.
  virtual StatusOr<std::unique_ptr<Buffer>> BufferFromPointer(void* ptr, const Shape& shape, int ordinal,
                                                              std::function<void()> release);
};

// One flag a backend takes: its name and "VALUES  meaning" (Backend::flag_help lines).
struct FlagSpec {
  std::string_view name;
  std::string_view help;
};
// Checks flags against a backend's known names: those starting with `prefix` ("cpu_") must be
// in `known`; InvalidArgument lists the known ones otherwise.
Status CheckBackendFlags(const BackendFlags& flags, std::string_view prefix, std::span<const FlagSpec> known);
// "name=help" lines, the Backend::flag_help text of `specs`.
std::string FlagHelp(std::span<const FlagSpec> specs);
// The value of flag `name`, or `fallback`.
std::string_view FlagOr(const BackendFlags& flags, std::string_view name, std::string_view fallback);

}  // namespace kiln
