// GpuExecutable: a compiled module (gpu_compiler.h) loaded onto one CUDA device, ready to run.
//
// Buffers: one BFC allocator per executable (runtime/bfc_allocator.h) provides, once, at
// Create: the constants (uploaded), one buffer per entry parameter leaf (arguments are copied
// in), the arena of all temporaries and outputs (BufferAssignment's kTemp allocation), and the
// workspace the library calls and kernels share. Because these addresses never change, the
// thunk sequence can be replayed as a CUDA graph.
//
// Note [CUDA graph capture]
//   An executable whose thunks never make the host wait (no host fallback; conditionals and
//   loops of unknown trip count only as conditional nodes, Notes [Device-side loops] and
//   [Device-side conditionals] in control_flow_thunks.h; loops of known trip count are
//   captured unrolled, up to 2^17 enqueued operations in all) is captured once as a CUDA graph
//   and replayed: the first Execute runs the thunks
//   eagerly (it creates library handles and anything else that is created lazily, which must
//   not happen during capture); the second captures them on the run's stream in relaxed mode
//   (cuStreamBeginCapture/EndCapture) and instantiates the graph; from then on Execute is one
//   cuGraphLaunch. Kernel arguments, library calls and copies all see the same buffers on
//   every run, so the graph stays valid for the executable's lifetime. A capture that fails
//   (a library call that cannot be captured) turns graphs off for the executable, with a
//   warning, and the run proceeds eagerly. Profiled runs are never captured (they record
//   events between thunks).
//
// Runs: Run() copies the arguments in, executes, and copies the result out. Benchmarks call
// SetArguments once, then Execute repeatedly (device work + synchronize; results stay on the
// device), then FetchResult. The public API's buffers (cuda/backend) take the other way,
// ExecuteBound: the parameters are bound to the caller's device memory (no copy), and the
// outputs the caller asks for are copied out of the arena into its memory. Parameter slots of
// the executable's own are allocated only when SetArguments first needs them. Runs of one
// executable are serialized by a mutex.
//
// Note [CUDA graphs of bound parameters]
//   A captured graph bakes in every address it touches, the parameters' included. Each
//   captured graph is therefore kept with the parameter addresses it was captured with;
//   a run whose bound addresses match one of them replays it, a run with new addresses
//   captures a new graph (at most kMaxGraphs are kept, the least recently used goes). A caller
//   that passes the same buffers run after run (a benchmark, a training loop over donated
//   state that the buffer assignment places back in the same memory) captures once.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/cuda/compiler/collective_thunks.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/hlo/literal.h"
#include "kiln/runtime/bfc_allocator.h"

namespace kiln::cuda {

struct GpuExecutableOptions {
  // Replay runs without host synchronization as a CUDA graph (Note [CUDA graph capture]).
  bool use_cuda_graph = true;
  // Run independent (library call, kernel) pairs of the entry sequence on two streams
  // (Note [Side stream] in gpu_thunk.h); graphs capture the fork and join.
  bool use_side_stream = true;
  // Loops whose trip count is only known on the device, and conditionals, run as CUDA graph
  // conditional nodes inside the graph (Notes [Device-side loops] and [Device-side
  // conditionals] in control_flow_thunks.h) where the driver and the toolkit's device runtime
  // allow; off: they read their predicate / branch index on the host and are never captured.
  bool use_graph_conditionals = true;
  // Conditionals (with use_graph_conditionals) become one SWITCH node where the driver has them
  // (CUDA 12.8); off: a chain of IF nodes, what older drivers get (Note [Device-side
  // conditionals]). For tests of that path.
  bool use_graph_switch_nodes = true;
};

struct GpuRunOptions {
  // Seed of the stateful RNG ops (rng, rng-get-and-update-state; they run on the host), as
  // the evaluator's EvaluatorOptions::rng_seed: each run starts from it.
  uint64_t seed = 0;
  // Record events around every thunk (no graph) for ProfileReport / WriteChromeTrace.
  bool profile = false;
  // Fill the arena and the workspace with 0xff bytes (NaN for every float type) before the
  // run, so that an output element no kernel writes shows up as NaN, not as a stale value
  // that happens to be right. For tests and `kiln run`; benchmarks leave it off.
  bool poison = false;
};

class GpuExecutable {
 public:
  static StatusOr<std::unique_ptr<GpuExecutable>> Create(std::unique_ptr<CompiledGpuModule> compiled,
                                                         CudaDevice& device, GpuExecutableOptions options = {});
  ~GpuExecutable();

  // One literal per entry parameter (dimensions and element type as the parameter's); returns
  // the root's value (a tuple literal for a tuple root).
  StatusOr<Literal> Run(std::span<const Literal> arguments, const GpuRunOptions& options = {});

  Status SetArguments(std::span<const Literal> arguments);

  // Where each output leaf lives after a run.
  struct OutputPlacement {
    enum class Kind { kArena, kConstant, kParameter } kind = Kind::kArena;
    int64_t argument_leaf = -1;  // kParameter: the argument leaf whose memory holds it
    uint64_t offset = 0;         // kParameter: byte offset into that argument
    uint64_t bytes = 0;
  };
  const std::vector<OutputPlacement>& output_placements() const { return output_placements_; }
  // Number of argument leaves (entry parameters' array leaves in order).
  size_t argument_leaf_count() const { return leaf_allocation_.size(); }
  // Binds the parameters to `arguments` (one device range per argument leaf, at least as large
  // as the leaf), runs, and copies every output j whose outputs[j] is not null into it (the
  // copy is not part of last_device_ms). The caller's memory must stay valid for the run; a
  // donated argument may be written (Note [CUDA graphs of bound parameters]).
  Status ExecuteBound(std::span<const runtime::DeviceMemory> arguments, std::span<const runtime::DeviceMemory> outputs,
                      const GpuRunOptions& options = {});
  // Runs the module on the arguments set last and waits for the device.
  Status Execute(const GpuRunOptions& options = {});
  StatusOr<Literal> FetchResult();

  // Device time of the last Execute (events around it), milliseconds.
  double last_device_ms() const { return last_device_ms_; }
  bool graph_captured() const { return !graphs_.empty(); }
  // Graphs captured so far (one per distinct set of bound parameter addresses).
  int64_t graphs_captured() const { return graphs_captured_; }
  // Pairs of the entry sequence that run concurrently on the side stream.
  int64_t side_stream_pairs() const { return side_pairs_; }
  bool graph_eligible() const { return graph_eligible_; }

  // Collectives (collective_thunks.h): whether the module has any, and the participant this
  // executable runs as (null: alone, without NCCL). A run with a participant whose world is
  // set ends with NcclWorld::Wait instead of a plain synchronize (Note [Never a hang on NCCL]).
  bool has_collectives() const { return has_collectives_; }
  void set_participant(std::shared_ptr<GpuParticipant> participant);
  const std::shared_ptr<GpuParticipant>& participant() const { return participant_; }

  const CompiledGpuModule& compiled() const { return *compiled_; }
  CudaDevice& device() const { return device_; }

  // Per-thunk table of the profiled runs so far: time per execution, bytes, FLOPs, GB/s,
  // TFLOP/s and % of the device's floor (max of bytes / peak bandwidth and FLOPs / peak rate).
  std::string ProfileReport(int max_rows = 40) const;
  // The last profiled run as Chrome trace events (chrome://tracing, Perfetto).
  Status WriteChromeTrace(const std::string& path) const;

 private:
  GpuExecutable(std::unique_ptr<CompiledGpuModule> compiled, CudaDevice& device, GpuExecutableOptions options);
  Status Initialize();
  Status ExecuteLocked(const GpuRunOptions& options);
  Status Capture();
  Status EnsureParameterSlots();
  void DestroyGraphs();
  // The parameter bases a graph is keyed by.
  std::vector<void*> ParameterBases() const;

  std::unique_ptr<CompiledGpuModule> compiled_;
  CudaDevice& device_;
  GpuExecutableOptions options_;
  std::unique_ptr<runtime::BfcAllocator> allocator_;
  std::unique_ptr<runtime::Stream> stream_;
  std::unique_ptr<runtime::Event> start_, stop_;
  std::unique_ptr<runtime::Stream> side_stream_;       // null: no planned pair
  std::unique_ptr<runtime::Event> fork_, join_;
  int64_t side_pairs_ = 0;
  void SetSideStream(ThunkExecuteParams& p) const;
  bool has_collectives_ = false;
  std::unique_ptr<runtime::Stream> collective_stream_;  // null: no asynchronous collective
  std::shared_ptr<GpuParticipant> participant_;
  Status WaitForRun();
  std::vector<runtime::OwnedDeviceMemory> owned_;  // constants, parameters, arena, workspace
  BufferAllocations buffers_;
  runtime::DeviceMemory workspace_;
  std::vector<std::pair<int64_t, ShapeIndex>> parameter_leaves_;  // per allocation (-1: none)
  std::vector<int64_t> leaf_allocation_;  // argument leaf -> allocation (-1: none)
  std::vector<runtime::OwnedDeviceMemory> parameter_slots_;  // SetArguments' own (lazily)
  std::vector<OutputPlacement> output_placements_;
  Shape result_shape_;

  std::mutex mu_;
  bool graph_eligible_ = false;
  int eager_runs_ = 0;
  struct CapturedGraph {
    std::vector<void*> parameter_bases;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
  };
  static constexpr size_t kMaxGraphs = 4;
  std::vector<CapturedGraph> graphs_;  // most recently used last
  int64_t graphs_captured_ = 0;
  double last_device_ms_ = 0;
  std::unique_ptr<ThunkProfiler> profiler_;
};

}  // namespace kiln::cuda
