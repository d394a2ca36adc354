// CpuExecutable: a compiled module ready to run on the host (made by CpuCompiler, compiler.h).
//
// It owns the compiled module, its buffer assignment, the thunk graph of the entry computation
// (thunk_sequence.h), the constants (materialized once, at load, into one aligned block) and a
// thread pool (CpuCompileOptions::threads; Note [Nested parallelism]).
//
// Two ways to run:
//   Run(literals)    one Literal per entry parameter (shapes compatible with the parameters';
//                    layouts ignored: literals are logical); returns the root's value, a tuple
//                    literal for a tuple root. Donated arguments are copied first (a Literal is
//                    const), so the caller's literals are never written.
//   Execute(raw)     for benchmarks: one pointer per entry parameter array leaf (parameters in
//                    order, each one's leaves in ArrayLeafIndices order), each to memory laid
//                    out as argument_leaf_shapes() says -- the entry layout, row-major unless
//                    entry_computation_layout says otherwise, one byte per element for pred
//                    and sub-byte types -- and at least that many bytes. No conversion happens
//                    when the entry layouts are the default. The executable never writes an
//                    argument unless the module donates it (input_output_alias /
//                    buffer_donor); a donated argument may be overwritten, and a must-alias
//                    output is left in its argument's memory.
//
// Buffers (buffer_allocations.h): per run, one arena from a pool of arenas the executable keeps
// (so concurrent runs never share temporaries and sequential runs reuse memory); parameters are
// the caller's memory; constants the executable's. Entry arguments and results whose entry
// layout is not the default are relayouted by boundary copies (into a per-run row-major buffer
// before the graph runs, into the result's own buffer after).
//
// Thread safety: Run and Execute may be called concurrently from any number of threads. The
// executable must outlive every ExecutionOutput it returned.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/thread_pool.h"
#include "kiln/cpu/kernel.h"
#include "kiln/cpu/layout_normalization.h"
#include "kiln/cpu/thunk_emitter.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/pipeline.h"

namespace kiln::cpu {

struct CpuRunOptions {
  // Accumulate each thunk's wall time into the executable's profile (ProfileReport()).
  bool profile = false;
  // Run the thunks one at a time in schedule order (kernels still use the pool).
  bool sequential = false;
  // Seed of the stateful RNG ops (rng, rng-get-and-update-state), as the evaluator's
  // EvaluatorOptions::rng_seed: each run starts from it.
  uint64_t seed = 0;
  // This participant of a multi-participant run (cpu/collective_context.h); null: alone.
  const struct CollectiveContext* collectives = nullptr;
};

// What compiling produced, for `kiln compile --stats`.
struct CpuCompileStats {
  std::vector<PassStats> passes;  // every pass run, in order, with its time
  double compile_seconds = 0;     // the whole compilation, thunk emission included
  std::string fusion_summary;     // compile_summary.h FusionSummary
  MemoryStats memory;             // buffer assignment's statistics
  int64_t thunks = 0;             // all thunks, nested ones included
  int64_t kernel_thunks = 0;      // kernels, row-tiled chains' members included
  int64_t row_tiled_chains = 0;   // RowTilesThunks (row_tiling.h)
  int64_t threads = 0;            // pool workers (1: no pool)
  // Instructions run by the evaluator's kernel, by kind (EmittedThunks::evaluator_fallbacks).
  std::map<std::string, int64_t> evaluator_fallbacks;
  std::string ToString() const;   // pass table, fusion summary, memory, thunk counts
};

// Memory from std::aligned_alloc (64-byte aligned), freed with std::free.
struct AlignedFree {
  void operator()(uint8_t* p) const;
};
using AlignedBlock = std::unique_ptr<uint8_t[], AlignedFree>;

// The arenas an executable's runs lease, shared with the results still holding one: a result
// that outlives its executable returns its arena to the pool, which goes when the last of them
// does.
struct ArenaPool {
  std::mutex mu;
  std::vector<AlignedBlock> free;
};

// The result of Execute(): views of the result's array leaves (physical entry layout), valid
// while this object lives (also after the executable is gone, for its own memory). Outputs may
// point into the run's arena (released to the executable's ArenaPool on destruction), into the
// executable's constants (read-only, valid while the executable lives), into an
// argument (a result that is a parameter, or a donated one), or into buffers this object owns.
class ExecutionOutput {
 public:
  ExecutionOutput() = default;
  ExecutionOutput(ExecutionOutput&&) = default;
  ExecutionOutput& operator=(ExecutionOutput&& other) noexcept;  // returns this one's arena first
  ~ExecutionOutput();
  const std::vector<ArrayView>& outputs() const { return outputs_; }

  // Where output j's memory is: the run's own memory (the arena or a buffer this object
  // owns), an argument's (argument leaf index >= 0: a donated parameter, or a parameter
  // returned as is), or the executable's read-only constants.
  enum class Source { kRun, kArgument, kConstant };
  Source source(size_t j) const { return sources_[j].first; }
  int64_t source_argument(size_t j) const { return sources_[j].second; }

 private:
  friend class CpuExecutable;
  using Block = AlignedBlock;
  std::vector<ArrayView> outputs_;
  std::vector<std::pair<Source, int64_t>> sources_;  // per output
  std::shared_ptr<ArenaPool> pool_;
  Block arena_;  // returned to pool_
  int64_t arena_size_ = 0;
  std::vector<Block> owned_;
};

class CpuExecutable {
 public:
  struct Parts {
    std::unique_ptr<HloModule> module;
    std::unique_ptr<BufferAssignment> assignment;
    std::unique_ptr<HloSchedule> schedule;
    EmittedThunks thunks;
    EntryLayouts entry_layouts;  // before layout normalization
    std::shared_ptr<ThreadPool> pool;  // null: single-threaded
    ExecutorOptions executor;
    CpuCompileStats stats;
  };
  // Materializes the constants and checks the parts fit together.
  static StatusOr<std::unique_ptr<CpuExecutable>> Create(Parts parts);
  ~CpuExecutable();

  StatusOr<Literal> Run(std::span<const Literal> arguments, const CpuRunOptions& options = {}) const;
  StatusOr<ExecutionOutput> Execute(std::span<void* const> arguments,
                                    const CpuRunOptions& options = {}) const;
  // As Execute, but every argument and result is row-major whatever the entry layout says
  // (the public API's buffers): no boundary relayout, results as the graph left them.
  StatusOr<ExecutionOutput> ExecuteRowMajor(std::span<void* const> arguments,
                                            const CpuRunOptions& options = {}) const {
    return ExecuteImpl(arguments, /*logical=*/true, options);
  }

  // Shapes (with their entry layouts) of the raw arguments and results of Execute().
  const std::vector<Shape>& argument_leaf_shapes() const { return arg_shapes_; }
  const std::vector<Shape>& result_leaf_shapes() const { return result_shapes_; }
  // The entry result's shape (logical; what Run returns).
  const Shape& result_shape() const;

  const HloModule& module() const { return *parts_.module; }
  const BufferAssignment& buffer_assignment() const { return *parts_.assignment; }
  const ThunkSequence& entry_thunks() const { return parts_.thunks.entry; }
  const MemoryStats& memory_stats() const { return parts_.assignment->stats(); }
  const CpuCompileStats& compile_stats() const { return parts_.stats; }
  // Worker threads of the pool (1 without one).
  int num_threads() const { return parts_.pool ? parts_.pool->num_threads() : 1; }

  // Every thunk, one per line, nested ones indented, with its slices' kinds and cost.
  std::string ThunkListing() const;
  // Per-thunk times accumulated by runs with CpuRunOptions::profile, most expensive first
  // (at most `max_rows` rows), with each thunk's share of the total.
  std::string ProfileReport(int64_t max_rows = 30) const;
  void ResetProfile() const { profile_.Reset(); }

 private:
  explicit CpuExecutable(Parts parts);
  StatusOr<ExecutionOutput> ExecuteImpl(std::span<void* const> arguments, bool logical,
                                        const CpuRunOptions& options) const;
  AlignedBlock LeaseArena() const;
  void ReturnArena(AlignedBlock arena) const;
  friend class ExecutionOutput;

  Parts parts_;
  std::vector<Shape> arg_shapes_, result_shapes_;
  std::vector<int64_t> arg_allocation_;       // argument leaf -> allocation index
  std::vector<bool> arg_relayout_, result_relayout_;
  // For must-alias outputs: output leaf -> argument leaf (-1: none).
  std::vector<int64_t> must_alias_arg_;
  AlignedBlock constants_;
  std::vector<int64_t> constant_offset_;      // per allocation (-1: not a constant)
  int64_t arena_size_ = 0;
  // The module sends or receives between devices: a run without CpuRunOptions::collectives
  // gets a context of its own (one participant), whose rendezvous carries its sends to its
  // recv-dones.
  bool point_to_point_ = false;
  std::shared_ptr<ArenaPool> arenas_ = std::make_shared<ArenaPool>();
  mutable ThunkProfile profile_;
};

// Copies an array between its logical row-major form and its physical form in `layout`
// (element width PrimitiveByteWidth; the default layout is a plain copy).
void RelayoutToRowMajor(const uint8_t* physical, const Shape& shape, const Layout& layout, uint8_t* row_major);
void RelayoutFromRowMajor(const uint8_t* row_major, const Shape& shape, const Layout& layout, uint8_t* physical);

}  // namespace kiln::cpu
