// Backend: one way of implementing some HLO instructions (a vendor library, kiln's generated
// kernels, the host evaluator...), seen by the autotuner as a list of configs it can compile,
// run, time and finally write into the module.
//
// Stages, in the order the autotuner calls them:
//   SupportedConfigs(instr)  every config worth trying (empty: this backend cannot do `instr`);
//                            the order is the backend's preference (the determinism mode takes
//                            the first valid one). Must work without a device (compiling from a
//                            shared cache on a machine without a GPU calls it).
//   DefaultConfig(instr)     what to use without measuring (tuning off); one of the above.
//   Compile(instr, config)   a Candidate the profiler can run on this backend's device. Called
//                            concurrently from a thread pool for different configs.
//   Apply(instr, config)     writes the chosen config into the instruction (usually its
//                            backend_config) so that the platform compiler emits that choice.
// A backend whose results are exact by construction (a vendor library used as documented, the
// reference evaluator) says CanProduceWrongResults() == false; the first candidate of such a
// backend that runs cleanly is the reference every other candidate's outputs are checked
// against. Kiln's generated kernels and anything experimental say true.
//
// Failures are values: a config that does not compile or run is dropped by the autotuner,
// never a crash. Nothing here is specific to a platform: the CUDA and ROCm factories return
// backends over the same runtime interfaces (Device, Stream, DeviceMemory).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/autotune/config.h"
#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/runtime/device.h"

namespace kiln::autotune {

// The buffers of one execution of a candidate, all on the backend's device. The instruction's
// operands and results are flattened to their array leaves (a tuple operand contributes one
// buffer per leaf, in order); each buffer holds the leaf densely in its shape's layout, with
// PrimitiveByteWidth(type) bytes per element (sub-byte types take a byte each, as in Literal).
struct CandidateBuffers {
  std::span<const runtime::DeviceMemory> inputs;   // operand leaves, in operand order
  std::span<const runtime::DeviceMemory> outputs;  // result leaves
  runtime::DeviceMemory scratch;                   // Candidate::scratch_bytes() bytes, or null
};

// A compiled config, ready to run. Owned by the autotuner; destroyed before its backend.
class Candidate {
 public:
  virtual ~Candidate() = default;

  // Scratch (workspace) memory one execution needs; the profiler allocates it. Among candidates
  // of nearly equal speed the one needing least scratch wins.
  virtual uint64_t scratch_bytes() const { return 0; }

  // Enqueues one execution on `stream` (it must not synchronize). Errors raised while the work
  // runs surface at the stream's next synchronization; both kinds count as a launch failure.
  virtual Status Launch(runtime::Stream& stream, const CandidateBuffers& buffers) = 0;
};

// What a factory is asked for. Defaults are the autotuner's defaults.
struct BackendOptions {
  // List every config a backend has, not its heuristic short list (`--autotune exhaustive`).
  bool exhaustive = false;
  // Offer only configs whose results are bitwise identical from run to run (no atomics-based
  // split-K reductions, no nondeterministic cuDNN algorithms).
  bool deterministic = false;
  // f32 dots and convolutions of DEFAULT precision may use TF32 (XLA's behaviour); operands
  // with HIGHEST precision never do.
  bool allow_tf32 = true;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Short, stable name ("cublaslt", "cudnn", "codegen", "host_gemm"); configs carry it.
  virtual std::string_view name() const = 0;
  // Version of whatever decides the configs' behaviour ("cublasLt 13.0.2", "kiln-codegen 3");
  // part of the cache key, so a library upgrade invalidates its entries.
  virtual std::string version() const = 0;

  virtual StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) = 0;
  virtual StatusOr<Config> DefaultConfig(const HloInstruction& instr) = 0;
  virtual StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                                       const Config& config) = 0;
  virtual Status Apply(HloInstruction& instr, const Config& config) = 0;
  virtual bool CanProduceWrongResults() const = 0;
  // Whether `config` is in this backend's config space for `instr` (well-typed fields, values in
  // range). The autotuner checks every cache entry with it before applying it: an entry that
  // fails is ignored with a warning and the instruction tuned again (a hand-edited cache, an
  // entry of another version). Must work without a device. Default: any config of this backend.
  virtual Status CheckConfig(const HloInstruction& instr, const Config& config) {
    (void)instr;
    if (config.backend() != name()) return InvalidArgument("a ", config.backend(), " config for ", name());
    return OkStatus();
  }

 protected:
  Backend() = default;
};

// A platform's backends for one device, best first. `device` is null when compiling without a
// device (a require-complete cache): backends must then still answer SupportedConfigs,
// DefaultConfig and Apply, and may fail Compile with FailedPrecondition.
using BackendList = std::vector<std::unique_ptr<Backend>>;
using BackendFactory = std::function<StatusOr<BackendList>(
    const runtime::DeviceDescription& target, runtime::Device* device,
    const BackendOptions& options)>;

// Factories by platform name ("host", "cuda", "rocm"), registered by explicit calls.
// Thread safety: all methods may be called concurrently.
class BackendFactoryRegistry {
 public:
  // AlreadyExists when `platform` has a factory.
  Status Register(std::string platform, BackendFactory factory);
  // NotFound listing the registered platforms.
  StatusOr<BackendFactory> Get(std::string_view platform) const;
  std::vector<std::string> platforms() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, BackendFactory>> factories_;
};

// The instruction's kind as options name it: the opcode ("dot", "convolution", "fusion"), or
// for custom calls "custom-call:TARGET". `--autotune-force` and reports use it.
std::string InstructionKind(const HloInstruction& instr);

// Writes {"autotune": config.ToJson()} into the instruction's backend_config (JSON), keeping
// other top-level fields of an existing JSON backend_config. A ready-made Apply for backends
// whose compiler reads the choice from there.
Status WriteConfigToBackendConfig(HloInstruction& instr, const Config& config);
// The config WriteConfigToBackendConfig stored, or NotFound.
StatusOr<Config> ReadConfigFromBackendConfig(const HloInstruction& instr);

}  // namespace kiln::autotune
