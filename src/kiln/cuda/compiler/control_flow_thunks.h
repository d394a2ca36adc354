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
// The branch and host thunks and loops of unknown trip count make the host wait (SyncsHost): an
// executable holding one is never captured as a CUDA graph.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/cuda/compiler/gpu_thunk.h"
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
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override;
  std::vector<const GpuThunk*> nested() const override;
  std::string ToString() const override;
  int64_t EnqueuedOps() const override;
  const std::optional<TripCount>& trip_count() const { return trip_count_; }

 private:
  Status CopyBodyResults(const ThunkExecuteParams& params) const;
  ThunkSequence condition_, body_;
  BufferSlice predicate_;
  WhileCopyPlan plan_;
  std::optional<TripCount> trip_count_;
  runtime::OwnedDeviceMemory host_;  // pinned: the predicate's byte
};

class ConditionalThunk : public GpuThunk {
 public:
  struct Copy {
    BufferSlice src, dst;
  };
  // `index_type` pred (branch 0 when true) or s32 (out-of-range indices take the last branch).
  ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type, std::vector<ThunkSequence> branches,
                   std::vector<std::vector<Copy>> result_copies);
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  bool SyncsHost() const override { return true; }
  std::vector<const GpuThunk*> nested() const override;

 private:
  BufferSlice index_;
  PrimitiveType index_type_;
  std::vector<ThunkSequence> branches_;
  std::vector<std::vector<Copy>> result_copies_;
  runtime::OwnedDeviceMemory host_;
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
