// kiln's public C++ API: compile an HLO module for any device kiln has, run it on buffers.
//
//   #include "kiln/api/kiln.h"
//
//   KILN_ASSIGN_OR_RETURN(std::unique_ptr<kiln::Client> client, kiln::Client::Create());
//   KILN_ASSIGN_OR_RETURN(std::unique_ptr<kiln::HloModule> module,
//                         kiln::ParseModuleFile("model.hlo"));
//   KILN_ASSIGN_OR_RETURN(std::unique_ptr<kiln::Executable> exe,
//                         client->Compile(*module, /*device=*/""));   // the best device
//   KILN_ASSIGN_OR_RETURN(kiln::Literal out, exe->Run(arguments));   // host in, host out
//
// Objects:
//   Client       the backends of this build (interpreter, cpu, cuda, ...) and their devices
//   Executable   a module compiled for one device (backend/executable.h): Execute on Buffers,
//                Run on host literals, compile and memory statistics
//   Buffer       one array on one device (backend/buffer.h): from host memory, from a device
//                pointer the caller owns (the DLPack hook), results of Execute
// Devices are named "PLATFORM[:ORDINAL]" ("cpu", "cuda:1"); an empty name is the best device
// present (a GPU when there is one, else the cpu).
//
// Errors are Status values, never aborts or exceptions: a bad module (file:line:col and a
// caret), an unknown or absent device, a missing driver, out-of-memory (ResourceExhausted with
// the size asked for).
//
// Nothing in the library reads the environment; ClientOptions and CompileOptions are plain
// structs. FromEnvironment (api/environment.h) fills them the way the `kiln` tool does.
//
// Thread safety: a Client may be used from several threads; see Executable and Buffer for theirs.
// The Client must outlive the executables and buffers it made.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/backend/backend.h"
#include "kiln/backend/buffer.h"
#include "kiln/backend/executable.h"
#include "kiln/backend/options.h"
#include "kiln/backend/registry.h"
#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct ClientOptions {
  // Only these platforms (names as KnownPlatformNames); empty (default): every one built in.
  std::vector<std::string> platforms;
  // Platform-level backend settings, given to every backend when the client creates it, and
  // the defaults of every Compile's CompileOptions::flags (which win where both name a flag).
  // Default: none.
  BackendFlags flags;
};

// A platform as the client sees it (`kiln devices`).
struct PlatformInfo {
  std::string name;         // "cuda"
  std::string description;  // one line
  bool built = false;       // false: kiln knows the platform, this build lacks it
  Status status;            // why there are no devices (no driver, no GPU), when there are none
  std::vector<DeviceInfo> devices;
};

struct ParseModuleOptions {
  // Fill constants printed as {...} with random values (seeded) instead of failing.
  bool fill_elided_constants = false;
  uint64_t fill_seed = 42;
  // Run the HLO verifier after parsing. Default true.
  bool verify = true;
};

// Parses (and verifies) HLO text; `filename` names it in error messages.
StatusOr<std::unique_ptr<HloModule>> ParseModule(std::string_view text, std::string_view filename = "<text>",
                                                 const ParseModuleOptions& options = {});
// Reads, parses and verifies an HLO text file.
StatusOr<std::unique_ptr<HloModule>> ParseModuleFile(const std::string& path, const ParseModuleOptions& options = {});

class Client {
 public:
  static StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options = {});

  // Every platform kiln knows, built or not, with its devices (what `kiln devices` prints).
  std::vector<PlatformInfo> Platforms() const;
  // The runtime drivers and their devices in detail (`kiln devices`), one block per platform.
  std::string DriverListing(bool verbose) const;

  // Resolves a device name; an empty one is the best device present. With require_device
  // false a platform that sees no device is still selected (compiling for a GPU needs none).
  StatusOr<DeviceSelection> SelectDevice(std::string_view device, bool require_device = true) const;
  // "cpu:0"
  static std::string DeviceName(const DeviceSelection& d);

  // Compiles `module` for `device` (options.device_ordinal is taken from the name).
  StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module, std::string_view device,
                                                CompileOptions options = {}) const;
  // Parses, verifies and compiles HLO text.
  StatusOr<std::unique_ptr<Executable>> CompileText(std::string_view hlo_text, std::string_view device,
                                                    CompileOptions options = {}) const;
  // Tunes `module`'s implementation choices on `device` and fills the autotuning cache
  // (Backend::Tune); CompileReport::autotune says what was chosen.
  StatusOr<CompileReport> Tune(const HloModule& module, std::string_view device, CompileOptions options = {}) const;

  // Copies host memory (an array of `shape`, row-major) onto `device`.
  StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                   std::string_view device) const;
  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal, std::string_view device) const;
  // Wraps memory already on `device` (a host pointer for cpu and interpreter, a CUdeviceptr
  // for cuda) without copying; `release` is called once nothing uses it any more.
  StatusOr<std::unique_ptr<Buffer>> BufferFromPointer(void* ptr, const Shape& shape, std::string_view device,
                                                      std::function<void()> release = {}) const;

  const BackendRegistry& registry() const { return *registry_; }
  const ClientOptions& options() const { return options_; }

 private:
  Client(std::unique_ptr<BackendRegistry> registry, ClientOptions options)
      : registry_(std::move(registry)), options_(std::move(options)) {}
  // The client's flags under the compile's own.
  CompileOptions WithClientFlags(CompileOptions options) const;
  std::unique_ptr<BackendRegistry> registry_;
  ClientOptions options_;
};

}  // namespace kiln
