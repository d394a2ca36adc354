// GpuThunk: one unit of device work of a GPU executable -- a generated kernel, a library call
// (GEMM, convolution, sort, FFT, dense solver), a copy, a loop, a branch, a collective (NCCL), or (rarely) an op the device cannot
// run, evaluated on the host.
//
// An executable is a ThunkSequence per sequential computation, run in schedule order on one
// stream (asynchronous collectives on a second one: collective_thunks.h). Control-flow thunks
// own the sequences of their computations.
//
// Stages (Note [Objects in stages] in ../shared/design/STYLE.md):
//   construction  by the thunk emitter at compile time: slices resolved, kernels generated and
//                 compiled to cubins (no device needed);
//   Initialize    once per executable, with the device: modules loaded, library plans created,
//                 algorithms chosen, pinned host buffers allocated; after it, workspace_bytes()
//                 is final;
//   Execute       per run: only enqueues work on the stream (plus, for thunks that SyncsHost(),
//                 the host waits they need). Execute is const and keeps no per-run state, except
//                 the pinned staging buffers of host-synchronizing thunks (runs of one
//                 executable are serialized by the executable).
//
// A sequence without host-synchronizing thunks can be captured into a CUDA graph
// (Note [CUDA graph capture] in gpu_executable.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/saturating.h"
#include "kiln/base/status.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/runtime/device_description.h"
#include "kiln/runtime/event.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda {

class CudaDevice;
class ThunkProfiler;
struct GpuParticipant;  // collective_thunks.h

// Where each allocation of a BufferAssignment lives during one run.
struct BufferAllocations {
  std::vector<runtime::DeviceMemory> bases;  // per allocation index
  runtime::DeviceMemory Get(const BufferSlice& s) const {
    if (!s.valid() || s.allocation >= static_cast<int64_t>(bases.size())) return {};
    const runtime::DeviceMemory& b = bases[s.allocation];
    if (b.is_null()) return {};
    return runtime::DeviceMemory{static_cast<char*>(b.ptr) + s.offset, static_cast<uint64_t>(s.size)};
  }
};

struct ThunkInitParams {
  CudaDevice* device = nullptr;
  runtime::Stream* stream = nullptr;  // the stream runs will use (library handles bind to it)
  // Loops of device-side trip count and conditionals may become CUDA graph conditional nodes
  // (Notes [Device-side loops] and [Device-side conditionals] in control_flow_thunks.h).
  bool graph_conditionals = true;
  // Conditionals become one SWITCH node where the driver has them (CUDA 12.8); off: a chain of
  // IF nodes, as on older drivers (Note [Device-side conditionals]).
  bool graph_switch_nodes = true;
};

struct ThunkExecuteParams {
  const BufferAllocations* buffers = nullptr;
  runtime::Stream* stream = nullptr;
  // Note [Side stream]: a second stream and two events (fork, join) for the pairs a sequence
  // planned to run concurrently (ThunkSequence::PlanSideStream); null: everything on `stream`.
  runtime::Stream* side_stream = nullptr;
  runtime::Event* fork = nullptr;
  runtime::Event* join = nullptr;
  // Scratch shared by every thunk (they run one after another on one stream): at least the
  // largest workspace_bytes() of the executable's thunks.
  runtime::DeviceMemory workspace;
  ThunkProfiler* profiler = nullptr;  // null: no profiling
  // The run's state of the stateful RNG ops that run on the host (HostThunk), seeded by
  // GpuRunOptions::seed; null: each starts from 0. Thunks run one after another: no atomics.
  uint64_t* rng_state = nullptr;
  // The run is being captured into a CUDA graph (GpuExecutable::Capture): loops of device-side
  // trip count and conditionals build conditional nodes instead of reading their predicate.
  bool capturing = false;
  // This participant of the run (collective_thunks.h); null: a run of one without NCCL.
  GpuParticipant* participant = nullptr;
  // Note [Collective streams] (collective_thunks.h): where asynchronous collectives run; null:
  // on `stream`.
  runtime::Stream* collective_stream = nullptr;
};

class GpuThunk {
 public:
  enum class Kind : uint8_t { kKernel, kGemm, kConv, kCopy, kSort, kFft, kHost, kWhile, kConditional, kAttention, kCollective, kSolver };

  virtual ~GpuThunk() = default;
  GpuThunk(const GpuThunk&) = delete;
  GpuThunk& operator=(const GpuThunk&) = delete;

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }  // the HLO instruction's name
  // Work done by one execution, for profiles: bytes the thunk must move at least, and
  // floating-point operations (0 for pure data movement).
  int64_t bytes() const { return bytes_; }
  int64_t flops() const { return flops_; }
  // Unique within an executable (set by the emitter), indexes profiles.
  int64_t id() const { return id_; }
  void set_id(int64_t id) { id_ = id; }

  virtual Status Initialize(const ThunkInitParams& params) {
    (void)params;
    return OkStatus();
  }
  virtual Status Execute(const ThunkExecuteParams& params) const = 0;
  // Whether Execute makes the host wait for the device (control flow, host fallbacks).
  virtual bool SyncsHost() const { return false; }
  // Workspace (bytes) an execution needs; final after Initialize.
  virtual uint64_t workspace_bytes() const { return 0; }
  // Thunks owned by this one (control flow).
  virtual std::vector<const GpuThunk*> nested() const { return {}; }
  // Plans the side-stream pairs of the sequences this thunk owns (Note [Side stream]); returns
  // how many. Default: none (loops of known trip count: Note [Pairs across iterations]).
  virtual int64_t PlanNestedSideStreams() { return 0; }
  // Operations one execution enqueues (kernels, library calls, copies; a loop of known trip
  // count its body's times the trips): the size of a CUDA graph capturing it.
  virtual int64_t EnqueuedOps() const { return 1; }
  // The device's peak rate (FLOP/s) for this thunk's arithmetic (0: no arithmetic worth a
  // roofline; the floor is then bytes / bandwidth). For profiles.
  virtual double PeakFlops(const runtime::DeviceDescription& device) const {
    (void)device;
    return 0;
  }
  // One line: "kernel %fusion.3 row_reduction b256.v4 ..." .
  virtual std::string ToString() const;

  // The buffer slices one execution reads and writes, set by the thunk emitter for kernels and
  // library calls (the instruction's operand and result leaves); unknown for the others, which
  // then never run beside another thunk (Note [Side stream]).
  void set_buffer_uses(std::vector<BufferSlice> reads, std::vector<BufferSlice> writes) {
    reads_ = std::move(reads);
    writes_ = std::move(writes);
    uses_known_ = true;
  }
  bool buffer_uses_known() const { return uses_known_; }
  const std::vector<BufferSlice>& reads() const { return reads_; }
  const std::vector<BufferSlice>& writes() const { return writes_; }

 protected:
  GpuThunk(Kind kind, std::string name, int64_t bytes = 0, int64_t flops = 0)
      : kind_(kind), name_(std::move(name)), bytes_(bytes), flops_(flops) {}

 private:
  Kind kind_;
  std::string name_;
  int64_t bytes_, flops_;
  int64_t id_ = -1;
  std::vector<BufferSlice> reads_, writes_;
  bool uses_known_ = false;
};

// Whether two thunks may run at the same time: both have known buffer uses and no slice one of
// them writes overlaps a slice the other reads or writes.
bool IndependentThunks(const GpuThunk& a, const GpuThunk& b);
// The two kinds a side-stream pair is made of (Note [Side stream]): a library call (GEMM,
// convolution) on the main stream and a kernel without workspace on the side one.
bool SideStreamLibraryCall(const GpuThunk& t);
bool SideStreamKernel(const GpuThunk& t);
// Runs `library` on params.stream and `kernel` on params.side_stream concurrently, forked from
// and joined back into params.stream with params.fork / params.join.
Status RunSideStreamPair(const GpuThunk& library, const GpuThunk& kernel, const ThunkExecuteParams& params);

std::string_view ThunkKindName(GpuThunk::Kind kind);

class ThunkSequence {
 public:
  ThunkSequence() = default;
  explicit ThunkSequence(std::vector<std::unique_ptr<GpuThunk>> thunks) : thunks_(std::move(thunks)) {}
  ThunkSequence(ThunkSequence&&) = default;
  ThunkSequence& operator=(ThunkSequence&&) = default;

  const std::vector<std::unique_ptr<GpuThunk>>& thunks() const { return thunks_; }
  std::vector<std::unique_ptr<GpuThunk>> TakeThunks() && { return std::move(thunks_); }
  Status Initialize(const ThunkInitParams& params);
  // Runs every thunk in order (with profiling events around each when params.profiler is set);
  // planned pairs concurrently when params.side_stream is set (Note [Side stream]).
  Status Execute(const ThunkExecuteParams& params) const;
  // Thunks [begin, end) only, as Execute runs them (a planned pair must not straddle a bound).
  Status ExecuteRange(const ThunkExecuteParams& params, size_t begin, size_t end) const;

  // Note [Side stream]
  //   After Initialize (workspace sizes are final), marks adjacent pairs of a library call (GEMM,
  //   convolution) and a kernel that are independent (IndependentThunks) and where the kernel
  //   needs no workspace (the library call may use it): Execute then forks the side stream
  //   from the main one with an event, runs the kernel there and the library call on the main
  //   stream, and joins back with a second event, so everything before the pair happens before
  //   both and everything after waits for both. Library calls stay on the main stream (their
  //   handles are bound to it). Inside a CUDA graph capture the events become the graph's fork
  //   and join edges. Returns the number of pairs, those of nested thunks included (a loop of
  //   known trip count may pair a tiny kernel across iterations: Note [Pairs across
  //   iterations] in control_flow_thunks.h); loop bodies and branches are otherwise not
  //   planned and run on one stream.
  int64_t PlanSideStream();
  int64_t side_pairs() const;
  bool SyncsHost() const;
  int64_t EnqueuedOps() const;  // sum over the thunks (GpuThunk::EnqueuedOps)
  uint64_t WorkspaceBytes() const;  // max over the thunks, nested ones included
  // Every thunk, nested ones after their owner, depth first.
  std::vector<const GpuThunk*> Flatten() const;

 private:
  std::vector<std::unique_ptr<GpuThunk>> thunks_;
  // side_[i]: thunks i and i+1 run concurrently, the kernel of the two on the side stream.
  std::vector<bool> side_;
};

// Per-thunk device times of profiled runs (events recorded around each thunk). The first
// collected run is left out of the totals (it pays for lazy initialization: module loading,
// library handles); its timeline is still kept for traces.
class ThunkProfiler {
 public:
  // `stream`'s device makes the events.
  static StatusOr<std::unique_ptr<ThunkProfiler>> Create(runtime::Device& device);
  // Called by ThunkSequence::Execute around each thunk.
  Status Begin(const GpuThunk& thunk, runtime::Stream& stream);
  Status End(const GpuThunk& thunk, runtime::Stream& stream);
  // After the stream has synchronized: folds the recorded events into the totals.
  Status Collect();

  struct Entry {
    const GpuThunk* thunk = nullptr;
    double total_ms = 0;
    int64_t count = 0;
  };
  // Totals per thunk, in first-execution order.
  const std::vector<Entry>& entries() const { return entries_; }
  // Timeline of the last collected run: (thunk, start ms, duration ms) relative to its start.
  struct Span {
    const GpuThunk* thunk;
    double start_ms, duration_ms;
    int lane = 0;  // 0: the run's main stream, 1: the side stream
  };
  const std::vector<Span>& last_run() const { return last_run_; }
  void Reset();

 private:
  explicit ThunkProfiler(runtime::Device& device) : device_(device) {}
  StatusOr<runtime::Event*> NextEvent();

  runtime::Device& device_;
  std::vector<std::unique_ptr<runtime::Event>> events_;
  size_t used_ = 0;
  struct Pending {
    const GpuThunk* thunk;
    runtime::Event* begin;
    runtime::Event* end;
    const runtime::Stream* stream = nullptr;
  };
  std::vector<Pending> pending_, open_;
  std::vector<Entry> entries_;
  std::vector<Span> last_run_;
  int64_t runs_ = 0;
};

}  // namespace kiln::cuda
