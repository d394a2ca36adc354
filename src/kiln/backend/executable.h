// Executable: a module compiled for one device of one backend, ready to run any number of
// times (made by Backend::Compile).
//
// Arguments and results are Buffers, one per array leaf: the entry parameters in order, each
// one's leaves in ArrayLeafIndices order (an array parameter is one leaf), and the root's array
// leaves likewise. argument_shapes() and result_shapes() give their shapes (element type and
// dimensions must match; a buffer in another layout than the one asked for is relaid by the
// backend where it can, or refused). Arguments must live on the executable's device
// (Backend::BufferFromHost puts host data there).
//
// Donation: an argument that the module's input_output_alias or buffer_donor names is
// donated: Execute consumes it (Buffer::is_deleted() afterwards) and its memory may hold a
// result. Every other argument is only read.
//
// Stages: Compile does everything expensive (passes, kernel generation, autotuning, loading);
// Execute only binds buffers and launches. A backend may do lazy work on the first runs (the
// cuda backend captures a CUDA graph on the second); RunReport says what happened.
//
// Thread safety: Execute may be called from several threads; a backend serializes runs where
// it must (cuda: one executable runs one module at a time). The executable must outlive the
// buffers it returned only where a backend says so (none does today: results own their memory).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/backend/buffer.h"
#include "kiln/backend/options.h"
#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/shape.h"
#include "kiln/passes/memory_stats.h"

namespace kiln {
class HloInstruction;
class HloModule;
}

namespace kiln {

namespace autotune {
struct AutotuneReport;
}

// What compiling produced, for `kiln compile` and `kiln tune`.
struct CompileReport {
  double compile_seconds = 0;
  // The target: "host", "NVIDIA H200 (sm_90)", "sm_90 preset (no device)".
  std::string target;
  // A few lines: what was made (thunks, kernels, threads), memory; what `kiln compile` prints.
  std::string summary;
  // Everything: the pass table with times, the fusion summary, memory, counts (`--stats`).
  std::string details;
  // One line per thunk, nested ones indented (`--thunks`); may be empty.
  std::string thunk_listing;
  // Memory plan of one run (all zero where the backend has none: the interpreter).
  MemoryStats memory;
  // Instructions that run on the host evaluator instead of a native kernel (the cpu backend's
  // evaluator kernels, the cuda backend's host thunks), by kind (HostFallbackKind) with counts,
  // sorted by kind: {"custom-call lapack_sgetrf_ffi", 2}, {"reduce-window", 1}.
  std::vector<std::pair<std::string, int64_t>> host_fallbacks;
  // The autotuning step's report, where one ran (null otherwise).
  std::shared_ptr<const autotune::AutotuneReport> autotune;
  // The module as compiled, choices applied (`kiln tune -o`); empty where not kept.
  std::string compiled_module_text;
};

// The kind an instruction that runs on the host evaluator is counted under: its opcode,
// "custom-call TARGET" for a custom call, "fusion(ROOT-OPCODE)" for a fusion.
std::string HostFallbackKind(const HloInstruction& instr);
// The number of instructions in `fallbacks` (the sum of the counts).
int64_t HostFallbackCount(const std::vector<std::pair<std::string, int64_t>>& fallbacks);
// The one line `kiln compile` and `kiln run` print for them: "on the host (evaluator): 3
// instructions: custom-call lapack_sgetrf_ffi x2, reduce-window x1\n"; empty for none.
std::string HostFallbackLine(const std::vector<std::pair<std::string, int64_t>>& fallbacks);

class Executable {
 public:
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const std::string& platform() const { return platform_; }
  int device_ordinal() const { return ordinal_; }
  const std::string& module_name() const { return module_name_; }

  // Shapes (with layouts) of the argument and result array leaves.
  const std::vector<Shape>& argument_shapes() const { return argument_shapes_; }
  const std::vector<Shape>& result_shapes() const { return result_shapes_; }
  // The root's logical shape (a tuple for a tuple root): how result leaves nest.
  const Shape& result_shape() const { return result_shape_; }
  // For each argument leaf, whether the module donates it.
  const std::vector<bool>& donated() const { return donated_; }
  // Index of the first leaf of entry parameter p in argument_shapes().
  int64_t first_leaf_of_parameter(int64_t p) const { return parameter_first_leaf_[p]; }
  int64_t num_parameters() const { return static_cast<int64_t>(parameter_first_leaf_.size()); }

  const CompileReport& compile_report() const { return report_; }
  const MemoryStats& memory_stats() const { return report_.memory; }

  // Whether this executable can run (a cuda module compiled without a GPU cannot).
  virtual bool can_execute() const { return true; }

  // Runs the module on `arguments` (one per argument leaf) and returns the result leaves (none
  // with ExecuteOptions::discard_results). Errors: a wrong count, shape, device or a deleted
  // buffer (InvalidArgument / FailedPrecondition, naming the argument), running out of memory
  // (ResourceExhausted with the size), anything the device reports.
  StatusOr<std::vector<std::unique_ptr<Buffer>>> Execute(std::span<Buffer* const> arguments,
                                                          const ExecuteOptions& options = {});

  // Host convenience: one literal per entry parameter (tuple literals for tuple parameters)
  // in, the root's value out (a tuple literal for a tuple root). Copies to and from the device.
  StatusOr<Literal> Run(std::span<const Literal> arguments, const ExecuteOptions& options = {});

  // ---- Several participants (docs/collectives.md) ----
  // The grid this executable runs over: replica_count() x num_partitions() participants;
  // participant i is replica i / num_partitions(), partition i % num_partitions(). 1 x 1
  // unless the module (or CompileOptions) asked for more and the backend runs several.
  int64_t replica_count() const { return replica_count_; }
  int64_t num_partitions() const { return num_partitions_; }
  int64_t num_participants() const { return replica_count_ * num_partitions_; }
  // Runs every participant at once (threads meeting at the collectives). arguments[i]: the
  // argument leaves of participant i, as Execute takes them (each checked the same way, except
  // that they may live on any device of the platform: the backend copies them where the
  // participant runs);
  // returns each participant's result leaves. Execute itself runs an executable of one
  // participant only (InvalidArgument otherwise, pointing here).
  StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> ExecuteParticipants(
      std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options = {});
  // The participants this process runs (default: all of them). A backend that runs a
  // program over several processes (cuda under `mpirun`) runs some: ExecuteParticipants still
  // takes every participant's arguments but only reads the local ones', and returns no result
  // leaves for the others (RunParticipants: an empty literal).
  virtual std::vector<int64_t> local_participants() const;
  // Host convenience: arguments[i] holds participant i's literals (one per entry parameter);
  // one root value per participant.
  StatusOr<std::vector<Literal>> RunParticipants(std::span<const std::vector<Literal>> arguments,
                                                 const ExecuteOptions& options = {});

  // Puts a host literal (an array) on this executable's device, as the backend would.
  virtual StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal) = 0;

  // What the backend can say about the runs so far, one item per line (memory, device times,
  // whether a CUDA graph was captured, the profile with ExecuteOptions::profile); may be empty.
  virtual std::string RunReport() const { return ""; }
  // Named numbers for machine-readable reports (`kiln bench --json`): memory plan, threads.
  virtual std::vector<std::pair<std::string, double>> Metrics() const;
  // Whether some f32/c64 dots or convolutions run with TF32 products (as XLA does on NVIDIA
  // GPUs below HIGHEST precision): comparisons against the evaluator then use the TF32
  // tolerance (eval/tolerance.h). Default: no.
  virtual bool RunsF32ProductsInTf32() const { return false; }

 protected:
  // `module`: the module as given to Compile (the entry computation's signature is read from
  // it); `report`: what compiling produced.
  Executable(std::string platform, int ordinal, const HloModule& module, CompileReport report);

  // Execute after the checks: arguments match argument_shapes() in count, type and
  // dimensions, live on this device and are not deleted. Implementations mark donated
  // arguments with Buffer::MarkDonated.
  virtual StatusOr<std::vector<std::unique_ptr<Buffer>>> ExecuteImpl(std::span<Buffer* const> arguments,
                                                                      const ExecuteOptions& options) = 0;

  CompileReport& mutable_report() { return report_; }

  // Backends that run several participants: the grid (set by Compile) and the run of all of
  // them after the checks (each participant's arguments as ExecuteImpl's). The default runs
  // the one participant through ExecuteImpl.
  void set_participants(int64_t replica_count, int64_t num_partitions) {
    replica_count_ = replica_count;
    num_partitions_ = num_partitions;
  }
  virtual StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> ExecuteParticipantsImpl(
      std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options);

 private:
  std::string platform_;
  int ordinal_ = 0;
  std::string module_name_;
  std::vector<Shape> argument_shapes_, result_shapes_;
  Shape result_shape_;
  std::vector<bool> donated_;
  std::vector<int64_t> parameter_first_leaf_;
  CompileReport report_;
  int64_t replica_count_ = 1, num_partitions_ = 1;
  // Execute's argument checks (count, null, deleted, shape, device -- any of the platform's with
  // any_device --, donated duplicates).
  Status CheckArguments(std::span<Buffer* const> arguments, bool any_device = false) const;
  // Run's conversion of parameter literals into argument buffers.
  Status BuffersFromLiterals(std::span<const Literal> arguments, std::vector<std::unique_ptr<Buffer>>& owned,
                             std::vector<Buffer*>& raw);
  StatusOr<Literal> LiteralFromResults(const std::vector<std::unique_ptr<Buffer>>& results) const;
};

// The grid a module runs over with `options` (CompileOptions::replica_count/num_partitions,
// the module header where they are 0): (replicas, partitions). InvalidArgument below 1 or over
// 4096 participants.
StatusOr<std::pair<int64_t, int64_t>> ParticipantsOf(const HloModule& module, const CompileOptions& options);

// Flattens a literal into its array leaves (ArrayLeafIndices order), copying each.
std::vector<Literal> FlattenLiteral(const Literal& literal);
// Nests array leaves into `shape` (the inverse of FlattenLiteral); InvalidArgument when the
// count or a leaf's shape does not match.
StatusOr<Literal> NestLiterals(std::vector<Literal> leaves, const Shape& shape);

}  // namespace kiln
