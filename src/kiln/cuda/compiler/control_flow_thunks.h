// Copies, loops, branches and host fallbacks.
//
//   CopyThunk         device-to-device copies between slices (an unfused `copy`, loop-state
//                     copies, in-place buffers that need the operand's value first).
//   WhileThunk        runs the condition's sequence, copies the predicate (one byte) into pinned
//                     host memory, waits for the stream, and runs the body while it is true;
//                     loop-state copies follow the buffer assignment's WhileCopyPlan. A loop
//                     with a known trip count (Note [Known trip counts] in
//                     passes/while_loop_simplifier.h) runs its body that many times without
//                     reading the predicate: it never makes the host wait, and is captured
//                     into the executable's CUDA graph with everything else.
//   ConditionalThunk  reads the predicate / branch index the same way and runs one branch, then
//                     copies its root into the conditional's result where they differ.
//   HostThunk         an instruction no device kernel or library implements (LAPACK-like custom
//                     calls, rng with the evaluator's generator, ...): waits for the stream,
//                     copies the operands to the host, evaluates the instruction with the
//                     reference evaluator, copies the result back. Correct and slow; the
//                     compiler warns once per opcode when it emits one.
// The host thunks make the host wait (SyncsHost): an executable holding one is never captured
// as a CUDA graph. So do loops of unknown trip count and conditionals, except as below (they
// become conditional nodes of the graph where the driver allows).
//
// Note [Device-side loops]
//   A loop whose trip count only the device knows becomes a CUDA graph conditional node of type
//   WHILE when the executable is captured: before the node, the init copies, the condition and
//   a one-thread kernel that sets the node's condition handle from the predicate byte
//   (cudaGraphSetConditional, from the toolkit's device runtime: the kernel is compiled by
//   NVRTC with -rdc at compile time and linked with libcudadevrt.a by the driver at
//   Initialize); the node's body graph holds the body, the loop-state copies, the condition
//   and the same kernel again. The stream's capture is switched to the body graph and back
//   (cuStreamEndCapture / cuStreamBeginCaptureToGraph on the same stream, so the library
//   handles bound to it stay right; nested loops and conditionals do the same inside the body,
//   so the switching nests). Eager runs (the first, profiled ones) still read the predicate on
//   the host. Needs CUDA >= 12.4 and a body that never waits on the host; without the device
//   runtime (no libcudadevrt.a found), with the flag cuda_graph_conditionals=0, or when the
//   link fails, the loop stays a host loop and the executable is not captured (one log line
//   says why).
//
// Note [Device-side conditionals]
//   A `conditional` becomes conditional nodes the same way (Note [Device-side loops]: the same
//   relocatable cubin, which also holds the set-branch kernel, the same link, the same
//   fallback and flag). When the executable is captured:
//   - with a driver of CUDA >= 12.8: one node of type SWITCH with one body graph per branch.
//     Before it, a one-thread kernel sets its handle to the branch to run; body k holds branch
//     k's sequence and the copies of its root into the conditional's result (where they
//     differ), as the host path runs them.
//   - with CUDA 12.4 to 12.7 (no SWITCH), or when adding the SWITCH node fails: a chain of IF
//     nodes, one per branch, each with its own handle. Before the first, one set-branch kernel
//     per branch sets handle k to (branch == k), all from the index as it is before any branch
//     runs (a branch may reuse the index's buffer); node k's body is branch k (and its copies),
//     node k+1 follows node k. Exactly one body runs.
//   The branch is XLA's (SelectConditionalBranch in passes/thunk_util.h, which the host path
//   uses): a pred index runs branch 0 (true_computation) when true, branch 1 when false; an s32
//   index outside [0, N) runs the last branch, N-1. The kernel's rule is one text compiled
//   both into the kernel and for the host (DeviceBranchRule), and a cpu test holds the host
//   copy to SelectConditionalBranch. Eager runs (the first, profiled ones) still read the index
//   on the host. A conditional is a device conditional when it linked and no branch waits on
//   the host (SyncsHost); nested in a loop body (or holding a loop), its nodes go into the
//   body graph being captured, as a nested loop's do. Every branch is in the graph, so the
//   graph's size (EnqueuedOps) counts all of them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/driver_api.h"
#include "kiln/hlo/module.h"
#include "kiln/runtime/allocator.h"

namespace kiln::cuda {

class CopyThunk : public GpuThunk {
 public:
  struct Copy {
    BufferSlice src, dst;
  };
  CopyThunk(std::string name, std::vector<Copy> copies);
  Status Execute(const ThunkExecuteParams& params) const override;
  std::string ToString() const override;

 private:
  std::vector<Copy> copies_;
};

// Enqueues src -> dst (nothing when they are the same slice).
Status CopySlice(const ThunkExecuteParams& params, const BufferSlice& src, const BufferSlice& dst);

class WhileThunk : public GpuThunk {
 public:
  struct TripCount {
    int64_t trips = 0;
    // Run the condition anyway (its result unread): it has side effects.
    bool run_condition = false;
  };
  // `trip_count`: the loop's known trip count, or nullopt (the predicate is read every time).
  WhileThunk(std::string name, ThunkSequence condition, ThunkSequence body, BufferSlice predicate,
             WhileCopyPlan plan, std::optional<TripCount> trip_count = std::nullopt);
  ~WhileThunk() override;
  // The relocatable cubin of the set-condition kernel (Note [Device-side loops]); without it
  // a loop of unknown trip count always reads its predicate on the host.
  void set_device_loop_cubin(std::string cubin) { device_loop_cubin_ = std::move(cubin); }
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override;
  std::vector<const GpuThunk*> nested() const override;
  std::string ToString() const override;
  int64_t EnqueuedOps() const override;
  const std::optional<TripCount>& trip_count() const { return trip_count_; }
  // Note [Pairs across iterations]
  //   A loop of known trip count may run one side-stream pair (Note [Side stream]) across
  //   iterations: when no state is copied at the end of a trip, the body's last thunk is a tiny
  //   kernel (at most 4 KiB moved), its first a library call, and the two are independent (a
  //   scan step's counter update and the next step's recurrent GEMM), trip k's last kernel runs
  //   on the side stream beside trip k+1's first library call. Everything before the pair
  //   happens before both, everything after waits for both, as within a sequence. Pairs inside
  //   a body are not planned: a full-size kernel beside a step's GEMM competes for the SMs
  //   (train_loop_f32 ran 3% slower with them).
  int64_t PlanNestedSideStreams() override;
  bool pairs_across_iterations() const { return wrap_pair_; }
  const ThunkSequence& body() const { return body_; }
  // Whether the loop runs as a conditional node when captured.
  bool device_loop() const { return set_condition_ != nullptr; }

 private:
  Status CopyBodyResults(const ThunkExecuteParams& params) const;
  Status CaptureDeviceLoop(const ThunkExecuteParams& params) const;
  Status LaunchSetCondition(const ThunkExecuteParams& params, uint64_t handle) const;
  std::string device_loop_cubin_;
  const DriverApi* api_ = nullptr;
  CUmodule set_module_ = nullptr;
  CUfunction set_condition_ = nullptr;
  CUcontext context_ = nullptr;
  ThunkSequence condition_, body_;
  BufferSlice predicate_;
  WhileCopyPlan plan_;
  std::optional<TripCount> trip_count_;
  bool wrap_pair_ = false;  // Note [Pairs across iterations]
  runtime::OwnedDeviceMemory host_;  // pinned: the predicate's byte
};

class NvrtcCompiler;
// The relocatable cubin of the set-condition kernels for `arch`: kiln_set_while_condition (Note
// [Device-side loops]) and kiln_set_branch (Note [Device-side conditionals]).
StatusOr<std::string> CompileSetConditionKernel(NvrtcCompiler& nvrtc, const std::string& arch);

// The set-branch kernel's rule, compiled for the host from the kernel's own text (Note
// [Device-side conditionals]): the branch a conditional of `num_branches` branches runs for the
// index bytes `index` (pred: one byte; s32: four). Tests hold it to SelectConditionalBranch.
int64_t DeviceBranchRule(PrimitiveType index_type, const uint8_t* index, int64_t num_branches);

class ConditionalThunk : public GpuThunk {
 public:
  struct Copy {
    BufferSlice src, dst;
  };
  // `index_type` pred (branch 0 when true) or s32 (out-of-range indices take the last branch).
  ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type, std::vector<ThunkSequence> branches,
                   std::vector<std::vector<Copy>> result_copies);
  ~ConditionalThunk() override;
  // The relocatable cubin of the set-condition kernels (CompileSetConditionKernel; Note
  // [Device-side conditionals]); without it the conditional always reads its index on the host.
  void set_device_conditional_cubin(std::string cubin) { cubin_ = std::move(cubin); }
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override;
  std::vector<const GpuThunk*> nested() const override;
  std::string ToString() const override;
  int64_t EnqueuedOps() const override;
  // Whether the conditional runs as conditional nodes when captured.
  bool device_conditional() const { return set_branch_ != nullptr; }
  // When captured: one SWITCH node (true) or a chain of IF nodes (false).
  bool switch_node() const { return use_switch_; }
  size_t branch_count() const { return branches_.size(); }

 private:
  Status CaptureDeviceConditional(const ThunkExecuteParams& params) const;
  Status CaptureIfChain(const ThunkExecuteParams& params) const;
  // Enqueues the set-branch kernel: `k` < 0 sets `handle` to the branch (SWITCH), else to
  // whether the branch is k (IF).
  Status LaunchSetBranch(const ThunkExecuteParams& params, uint64_t handle, int k) const;
  Status RunBranch(const ThunkExecuteParams& params, int64_t branch) const;
  BufferSlice index_;
  PrimitiveType index_type_;
  std::vector<ThunkSequence> branches_;
  std::vector<std::vector<Copy>> result_copies_;
  runtime::OwnedDeviceMemory host_;
  std::string cubin_;
  const DriverApi* api_ = nullptr;
  CUmodule set_module_ = nullptr;
  CUfunction set_branch_ = nullptr;
  CUcontext context_ = nullptr;
  bool use_switch_ = false;
};

class HostThunk : public GpuThunk {
 public:
  // Evaluates a copy of `instr` (library calls expanded to HLO first) on the host.
  // `operands`: per operand, the slices of its array leaves; `outputs`: the result's leaves.
  static StatusOr<std::unique_ptr<HostThunk>> Create(const HloInstruction& instr,
                                                     std::vector<std::vector<BufferSlice>> operands,
                                                     std::vector<BufferSlice> outputs);
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return true; }
  std::string ToString() const override;

 private:
  HostThunk(std::string name, std::unique_ptr<HloModule> module, std::vector<Shape> operand_shapes,
            std::vector<std::vector<BufferSlice>> operands, std::vector<BufferSlice> outputs, std::string what);
  std::unique_ptr<HloModule> module_;
  std::vector<Shape> operand_shapes_;
  std::vector<std::vector<BufferSlice>> operands_;
  std::vector<BufferSlice> outputs_;
  std::string what_;
};

}  // namespace kiln::cuda
