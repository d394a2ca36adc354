// ThunkSequence: the thunks of one sequential computation (the entry, a loop body, a branch) in
// schedule order, plus the dependency graph that says which may run concurrently.
//
// Dependencies come from buffer slices alone (ComputeThunkDependencies): thunk B depends on an
// earlier thunk A when their slices overlap and at least one of them writes -- read after
// write, write after read (the arena reuses bytes once a value is dead), write after write.
// Any order that respects those edges computes what schedule order computes. The thunks that
// always run on the calling thread (cost INT64_MAX: control flow, collectives, send / recv)
// also keep their schedule order among themselves, so participants meet in the same order.
//
// Note [Nested parallelism]
//   kiln::ThreadPool::ParallelFor called from one of the pool's own workers runs its whole
//   range on that worker: nested parallel loops never deadlock, but a kernel that runs on a
//   worker runs serially. A big kernel (a GEMM, a reduction over megabytes) must therefore run
//   on a thread outside the pool -- the thread that called Execute -- so that its ParallelFor
//   fans out over every worker. The executor follows from that:
//     * the calling thread walks the graph: it takes the ready thunk earliest in schedule order
//       and runs it itself when it is tiny (cost < min_offload_cost: handing it over would cost
//       more) or big (cost >= min_inline_parallel_cost: it parallelizes inside);
//     * medium thunks (in between: too small to split, big enough to be worth a hand-off) are
//       given to workers when something else is ready or running, so independent medium
//       thunks overlap; a worker finishing one releases its successors to the calling thread;
//     * control-flow thunks always run on the calling thread, and their nested sequences are
//       executed the same way from there.
//   A sequence with fewer than two medium thunks, or `sequential`, or no pool, runs in
//   schedule order on the calling thread with no synchronization at all.
//   The pool has as many workers as the run has threads (CpuCompileOptions::threads), not one
//   fewer: Eigen's contraction (kernels/gemm.h) blocks the calling thread while only the
//   workers compute, and the kernels split their loops by the worker count. ParallelFor loops
//   then have one participant more than there are cores (the calling thread); their chunks
//   are claimed dynamically, so that costs little.
//
// Errors: the first failing thunk's status is returned after every thunk already started has
// finished; nothing new starts after a failure.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/cpu/thunk.h"

namespace kiln::cpu {

// For each thunk (by position), the earlier thunks it must wait for, in increasing order and
// without duplicates. uses[i] are thunk i's slice uses; zero-size slices are ignored.
std::vector<std::vector<int32_t>> ComputeThunkDependencies(
    std::span<const std::vector<BufferUse>> uses);

class ThunkSequence {
 public:
  ThunkSequence() = default;
  explicit ThunkSequence(std::vector<std::unique_ptr<Thunk>> thunks,
                         const ExecutorOptions& options = {});
  ThunkSequence(ThunkSequence&&) = default;
  ThunkSequence& operator=(ThunkSequence&&) = default;

  int64_t size() const { return static_cast<int64_t>(thunks_.size()); }
  bool empty() const { return thunks_.empty(); }
  const Thunk& thunk(int64_t i) const { return *thunks_[i]; }
  const std::vector<std::unique_ptr<Thunk>>& thunks() const { return thunks_; }
  // predecessors(i): the thunks i waits for (ComputeThunkDependencies).
  const std::vector<int32_t>& predecessors(int64_t i) const { return predecessors_[i]; }
  const std::vector<int32_t>& successors(int64_t i) const { return successors_[i]; }
  // Every slice used by any thunk (for a control-flow thunk that owns this sequence).
  std::vector<BufferUse> CollectUses() const;
  // Whether the executor would run anything concurrently (see the Note).
  bool concurrent() const { return concurrent_; }

  // Runs the sequence (see the Note). The order in which thunks start is recorded into
  // `trace` when it is not null (tests).
  Status Execute(const ExecuteParams& params, std::vector<int32_t>* trace = nullptr) const;

 private:
  Status ExecuteInOrder(const ExecuteParams& params, std::vector<int32_t>* trace) const;
  Status ExecuteConcurrently(const ExecuteParams& params, std::vector<int32_t>* trace) const;

  std::vector<std::unique_ptr<Thunk>> thunks_;
  std::vector<std::vector<int32_t>> predecessors_, successors_;
  bool concurrent_ = false;
};

// Runs one thunk, timing it into params.profile when profiling.
Status RunThunk(const Thunk& thunk, const ExecuteParams& params);

}  // namespace kiln::cpu
