// The backends the `kiln` tool can run a module on, registered explicitly (no static
// initializers): main() calls RegisterBuiltinBackends, which adds each backend this binary was
// built with, best first. A new platform plugs in by implementing Backend and adding one line
// to RegisterBuiltinBackends (guarded by its build option).
//
// Backend names are the platform names of docs/ARCHITECTURE.md: "interpreter" (the reference
// evaluator), "cpu", "cuda", "rocm". KnownPlatformNames() lists them all, built or not, so the
// tool can tell "not built" from "unknown".
//
// When src/kiln/runtime grows a Platform registry, Backend becomes a thin adapter over a
// Platform + Compiler pair; the tool's commands do not change.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct AutotuneFlags;  // autotune_options.h

struct DeviceInfo {
  int ordinal = 0;
  std::string name;         // "host", "NVIDIA H200"
  std::string description;  // one line of details
};

struct BackendRunOptions {
  int device_ordinal = 0;
  // Seed of the stateful `rng` op (and of anything else random at run time).
  uint64_t seed = 0;
  // Host threads a backend that uses them (cpu) runs with; 0: every core.
  int threads = 0;
  // Collect a per-kernel profile (PreparedModule::Report), where the backend can.
  bool profile = false;
  // With profile: write a Chrome/Perfetto trace of the last profiled run here (cuda).
  std::string trace_path;
  // The --autotune* flags (cuda: the GPU compiler's autotuning step); null: no autotuning.
  const AutotuneFlags* autotune = nullptr;
};

struct BackendCompileOptions {
  int device_ordinal = 0;
  int threads = 0;              // as BackendRunOptions::threads
  std::string dump_passes_dir;  // write the module after every pass that changed it
  std::string dump_kernels_dir;  // write generated kernel sources here (cuda)
  bool stats = false;           // per-pass timing, fusion summary, memory statistics
  bool thunks = false;          // list the executable's thunks (cpu)
  const AutotuneFlags* autotune = nullptr;  // as BackendRunOptions::autotune
};

// A module compiled once, with its arguments prepared once, run many times (`kiln bench`).
class PreparedModule {
 public:
  virtual ~PreparedModule() = default;
  // Runs the module on the prepared arguments; the result is dropped.
  virtual Status Execute() = 0;
  // What the backend can say about the compiled module and the runs so far (memory
  // statistics, a profile when BackendRunOptions::profile), one item per line; may be empty.
  virtual std::string Report() const { return ""; }
  // Named numbers for machine-readable reports (`kiln bench --json`): the cpu backend gives
  // its memory plan (argument_bytes, output_bytes, constant_bytes, temp_bytes, peak_bytes,
  // aliased_bytes) and threads. May be empty.
  virtual std::vector<std::pair<std::string, double>> Metrics() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;         // "interpreter"
  virtual std::string_view description() const = 0;  // "the reference evaluator (host)"
  // The devices this backend can use now; an error says why there are none (no driver, ...).
  virtual StatusOr<std::vector<DeviceInfo>> Devices() const = 0;
  // Compiles (if the backend compiles) and runs the module's entry computation on `args`
  // (one per entry parameter). Returns the root's value (a tuple literal for a tuple root).
  virtual StatusOr<Literal> Run(const HloModule& module, std::span<const Literal> args,
                                const BackendRunOptions& options) = 0;
  // Whether this backend computes some of the module's f32/c64 dots or convolutions with
  // TF32 products (as XLA does on NVIDIA GPUs below HIGHEST precision): comparisons against
  // the evaluator then use the TF32 tolerance (eval/tolerance.h). Default: no.
  virtual bool RunsF32ProductsInTf32(const HloModule& module) const {
    (void)module;
    return false;
  }
  // Compiles the module without running it and describes the result (`kiln compile`).
  // Default: Unimplemented (the backend does not compile).
  virtual StatusOr<std::string> Compile(const HloModule& module, const BackendCompileOptions& options);
  // Compiles the module and prepares `args` for repeated runs. Default: every Execute() calls
  // Run() on copies of the module and arguments kept by the returned object.
  virtual StatusOr<std::unique_ptr<PreparedModule>> Prepare(const HloModule& module,
                                                            std::span<const Literal> args,
                                                            const BackendRunOptions& options);
};

class BackendRegistry {
 public:
  // Adds a backend; registering a name twice is a kiln bug (the second is ignored).
  void Register(std::unique_ptr<Backend> backend);
  // The backend named `name`, or nullptr.
  Backend* Find(std::string_view name) const;
  // Registered backends in registration order (best first).
  std::vector<Backend*> backends() const;
  // Names of the registered backends, comma-separated ("interpreter, cpu").
  std::string AvailableNames() const;
  // The first registered backend that sees at least one device (the interpreter always does).
  Backend* Best() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

// Every platform name kiln knows, built into this binary or not.
std::span<const std::string_view> KnownPlatformNames();

// Registers every backend built into this binary, best first.
void RegisterBuiltinBackends(BackendRegistry& registry);

// The reference evaluator as a backend (always built).
std::unique_ptr<Backend> CreateInterpreterBackend();
// The CPU backend (src/kiln/cpu; cpu_backend.cc).
std::unique_ptr<Backend> CreateCpuBackend();
// The CUDA backend (src/kiln/cuda/compiler; cuda_backend.cc), where it is built.
std::unique_ptr<Backend> CreateCudaBackend();

// Resolves a --device value ("interpreter", "cuda:1") to a backend and device ordinal. Errors:
// an unknown name lists the known ones; a known but unregistered one says it is not built yet.
struct DeviceSelection {
  Backend* backend = nullptr;
  int ordinal = 0;
};
// With require_device false (`kiln compile`), a backend that sees no device is still selected:
// compiling for a GPU needs no GPU.
StatusOr<DeviceSelection> SelectDevice(const BackendRegistry& registry, std::string_view spec,
                                       bool require_device = true);

}  // namespace kiln
