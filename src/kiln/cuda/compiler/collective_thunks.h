// Collective thunks: XLA's collectives on NCCL (docs/collectives.md), one thunk per collective
// instruction -- all-reduce and reduce-scatter (sum, product, min, max and and / or on pred on
// NCCL; any other reduction computation or type gathered and combined by a generated kernel:
// Note [Reductions NCCL lacks] in codegen/collective_lowering.h), all-gather, all-to-all (array and
// tuple forms), ragged-all-to-all (Note [Ragged all-to-all on NCCL]), collective-permute,
// collective-broadcast, send / recv / send-done / recv-done, replica-id, partition-id; the
// -start forms, the same ops inside async-start wrappers, and their -done / async-done.
//
// Groups are formed at run time from the participant's place in the grid (GpuParticipant), by
// eval/collective_groups.h as on every backend; communicators come from the run's NcclWorld
// (cuda/nccl_communicator.h: Note [NCCL communicators]). A participant that runs alone without
// NCCL (no libnccl: GpuParticipant::world null) gets the one-member results by copies, so a
// single-participant program keeps working on a machine without NCCL; with NCCL present even a
// run of one participant goes through a 1-rank communicator, the real code path.
//
// Note [Collective streams]
//   A synchronous collective enqueues its NCCL calls on the run's stream, in schedule order,
//   like any other thunk. A -start (all-reduce-start, all-gather-start, collective-permute-start,
//   async-start of a collective) runs on the executable's collective stream instead: on the main
//   stream it first copies the operands into buffers that live until the -done (the start's own
//   operand leaves; for all-reduce-start, the result, reduced in place), then records an event
//   the collective stream waits for, enqueues the NCCL calls there and records a second event;
//   the -done makes the main stream wait for that one and copies the result into its own buffer
//   where buffer assignment gave it another. Compute scheduled between the two overlaps the
//   collective. Inside a CUDA graph capture the events become the graph's fork and join edges.
//   A start whose data must be rearranged around the NCCL call (a dimension other than the
//   major one) uses the shared workspace and therefore runs synchronously, on the main stream.
//
// Note [Send and recv on NCCL]
//   A send stages its data in its own result (live until send-done) and queues the transfer on
//   the participant; the transfers are issued, in one NCCL group with the receive, at the next
//   recv-done of the same channel (or at the channel's send-done, when no recv-done comes
//   first). Every participant thus posts a channel's sends and its receive together, so two
//   participants that send to each other before receiving do not wait for each other; a
//   channel's transfers never go out with another channel's, whose receive may come later
//   (NCCL matches the messages between two ranks in order). Every participant runs the
//   channels' chains in its schedule's order, which passes/send_recv_ordering.h makes send ->
//   recv-done -> send-done per channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/collective_lowering.h"
#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/nccl_communicator.h"
#include "kiln/eval/collective_groups.h"
#include "kiln/eval/communicator.h"
#include "kiln/hlo/instruction.h"
#include "kiln/runtime/module.h"

namespace kiln::cuda {

// One participant of a run, as its thunks see it (ThunkExecuteParams::participant).
struct GpuParticipant {
  DeviceGrid grid;
  int64_t device = 0;                          // global device id = world rank
  std::shared_ptr<NcclWorld> world;            // null: alone without NCCL
  std::chrono::milliseconds timeout{60000};    // Note [Never a hang on NCCL]
  int64_t replica_id() const { return grid.ReplicaOf(device); }
  int64_t partition_id() const { return grid.PartitionOf(device); }

  // Note [Send and recv on NCCL]: transfers queued by sends of this run.
  struct PendingSend {
    const void* data = nullptr;
    uint64_t bytes = 0;
    int64_t peer = 0;  // world rank
    int64_t channel = 0;
  };
  std::vector<PendingSend> pending_sends;
};

// NcclReduces, CollectiveThunkApplies, IsCollectiveThunkOp, IsCollectiveDoneOp: which
// collectives become the thunks below, shared with the rocm compiler
// (codegen/collective_lowering.h).
using codegen::CollectiveThunkApplies;
using codegen::IsCollectiveDoneOp;
using codegen::IsCollectiveThunkOp;
using codegen::NcclReduces;

struct CollectiveThunkOptions {
  // The largest group this op has in the run's grid (the thunk emitter takes the module
  // header's): how many members' data a gathering op (a reduction NCCL lacks,
  // ragged-all-to-all) has room for in the workspace. A larger group at run time is a
  // FailedPrecondition. Default 1.
  int64_t max_group = 1;
  // collective_kernels.h's kernels for the op, compiled (required where CollectiveKernelsFor
  // gives some; empty otherwise).
  std::string cubin;
};

class CollectiveThunk : public GpuThunk {
 public:
  // `instr`: the collective (or its -start / async-start); `operands`: its array operands'
  // slices; `leaves`: every array leaf of its result (the module must outlive the thunk).
  static StatusOr<std::unique_ptr<CollectiveThunk>> Create(const HloInstruction& instr,
                                                           std::vector<BufferSlice> operands,
                                                           std::vector<BufferSlice> leaves,
                                                           CollectiveThunkOptions options = {});
  Status Initialize(const ThunkInitParams& params) override;
  Status Execute(const ThunkExecuteParams& params) const override;
  uint64_t workspace_bytes() const override { return workspace_; }
  std::string ToString() const override;
  bool async() const { return async_; }
  // The start's result leaves (what its -done returns).
  const std::vector<BufferSlice>& results() const { return results_; }
  // After an async start: the event its -done waits for.
  runtime::Event* done_event() const { return done_event_.get(); }
  HloOpcode op() const { return op_; }

 private:
  CollectiveThunk(const HloInstruction& instr, const HloInstruction& op_instr, HloOpcode op);
  Status Run(const ThunkExecuteParams& params, runtime::Stream& stream) const;
  Status RunAlone(const ThunkExecuteParams& params, runtime::Stream& stream) const;
  Status GatherAndCombine(const ThunkExecuteParams& params, runtime::Stream& stream, const NcclWorld& w,
                          nccl::ncclComm_t comm, size_t k, int64_t n, int64_t rank) const;
  Status RaggedCopy(const ThunkExecuteParams& params, runtime::Stream& stream, const void* const* gathered, int64_t n,
                    int64_t rank) const;

  const HloInstruction& instr_;     // as scheduled (a -start or async-start included)
  const HloInstruction& op_instr_;  // the collective itself (async-start: the wrapped root)
  HloOpcode op_;                    // the synchronous opcode
  std::optional<ReductionKind> reduction_;
  std::vector<BufferSlice> operands_;       // read by the op
  std::vector<BufferSlice> staged_;         // start forms: where the operands are copied first
  std::vector<BufferSlice> results_;        // written by the op
  std::vector<BufferSlice> contexts_;       // start forms' context leaves (zeroed)
  std::vector<Shape> operand_shapes_;
  bool async_ = false;
  bool in_place_ = false;  // all-reduce-start: operands copied into the results, reduced there
  uint64_t workspace_ = 0;
  std::unique_ptr<runtime::Event> ready_event_, done_event_;
  bool device_reduction_ = false;  // Note [Reductions NCCL lacks]
  int64_t max_group_ = 1;
  std::string cubin_;                       // collective_kernels.h
  std::unique_ptr<runtime::Module> module_;  // loaded from cubin_ at Initialize
  std::vector<runtime::Kernel*> kernels_;    // kiln_combine_<k> per operand, or kiln_ragged
};

// all-reduce-done, all-gather-done, collective-permute-done, async-done (of a CollectiveThunk
// start), async-update; send-done and recv-done (Note [Send and recv on NCCL]).
class CollectiveDoneThunk : public GpuThunk {
 public:
  // `start`: the start's thunk (null for send-done / recv-done); `sources`: the start's
  // result leaves the done returns; `leaves`: the done's own.
  CollectiveDoneThunk(const HloInstruction& instr, const CollectiveThunk* start, std::vector<BufferSlice> sources,
                      std::vector<BufferSlice> leaves);
  Status Execute(const ThunkExecuteParams& params) const override;
  std::string ToString() const override;

 private:
  const HloInstruction& instr_;
  const CollectiveThunk* start_;
  std::vector<BufferSlice> sources_, leaves_;
};

}  // namespace kiln::cuda
