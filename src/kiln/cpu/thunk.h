// Thunk: one unit of work of a CPU executable -- a kernel, a copy, a loop, a branch.
//
// An executable is a graph of thunks (ThunkSequence, thunk_sequence.h): the thunks of one
// sequential computation in schedule order, with dependency edges derived from the buffer
// slices each one reads and writes (uses()). Control-flow thunks own nested sequences (a while's
// condition and body, a conditional's branches, a call's callee) and report every slice those
// touch as their own, so the outer graph orders them correctly against their neighbours.
//
// Stages: a thunk is built once by the ThunkEmitter at compile time (kernels compiled,
// slices resolved and checked against their allocations); Execute() only runs. Execute is
// const and may be called concurrently from several runs of one executable, each with its own
// BufferAllocations: thunks keep no per-run state.
//
// Costs: each thunk carries an estimate of its work (cost(), in "element operations": bytes
// moved / 4, plus multiply-adds for dots and convolutions). The executor (Note [Nested
// parallelism] in thunk_sequence.h) runs big thunks on the calling thread, where their kernels
// can split across the pool, and offloads medium ones to the pool's workers when independent
// thunks are ready at the same time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/base/thread_pool.h"
#include "kiln/cpu/buffer_allocations.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu {

struct CollectiveContext;

struct BufferUse {
  enum class Access : uint8_t { kRead, kWrite };
  BufferSlice slice;
  Access access = Access::kRead;
  static BufferUse Read(BufferSlice s) { return {s, Access::kRead}; }
  static BufferUse Write(BufferSlice s) { return {s, Access::kWrite}; }
  bool is_write() const { return access == Access::kWrite; }
};

// Per-thunk wall time, accumulated over runs while profiling is on (CpuRunOptions::profile).
// Indexed by Thunk::id(); thread-safe.
class ThunkProfile {
 public:
  explicit ThunkProfile(int64_t num_thunks = 0)
      : nanos_(num_thunks), counts_(num_thunks) {}
  void Add(int64_t id, int64_t nanos) {
    nanos_[id].fetch_add(nanos, std::memory_order_relaxed);
    counts_[id].fetch_add(1, std::memory_order_relaxed);
  }
  int64_t nanos(int64_t id) const { return nanos_[id].load(std::memory_order_relaxed); }
  int64_t count(int64_t id) const { return counts_[id].load(std::memory_order_relaxed); }
  int64_t size() const { return static_cast<int64_t>(nanos_.size()); }
  void Reset() {
    for (auto& n : nanos_) n = 0;
    for (auto& c : counts_) c = 0;
  }

 private:
  std::vector<std::atomic<int64_t>> nanos_;
  std::vector<std::atomic<int64_t>> counts_;
};

// How the executor spreads a sequence over the pool (thunk_sequence.h).
struct ExecutorOptions {
  // Run every sequence in schedule order on the calling thread (kernels still split their
  // work across the pool). For debugging and for comparing against the concurrent executor.
  bool sequential = false;
  // Thunks cheaper than this always run on the thread that runs the sequence: handing them to
  // a worker costs more than running them.
  int64_t min_offload_cost = 4 * 1024;
  // Thunks at least this expensive run on the thread that runs the sequence, so that their
  // kernels can split across the whole pool (a kernel running on a worker runs serially).
  int64_t min_inline_parallel_cost = 64 * 1024;
};

struct ExecuteParams {
  const BufferAllocations* buffers = nullptr;
  ThreadPool* pool = nullptr;            // null: everything on the calling thread
  ThunkProfile* profile = nullptr;       // null: no profiling
  const ExecutorOptions* executor = nullptr;  // null: defaults
  // The run's state of the stateful RNG ops (rng, rng-get-and-update-state), seeded by
  // CpuRunOptions::seed; null: each op starts from 0.
  std::atomic<uint64_t>* rng_state = nullptr;
  // This participant of a multi-participant run (cpu/collective_context.h); null: alone.
  const CollectiveContext* collectives = nullptr;
};

class Thunk {
 public:
  enum class Kind : uint8_t { kKernel, kRowTiles, kCopy, kWhile, kConditional, kCall };

  virtual ~Thunk() = default;
  Thunk(const Thunk&) = delete;
  Thunk& operator=(const Thunk&) = delete;

  Kind kind() const { return kind_; }
  // The instruction it runs ("%fusion.3"), for errors and profiles.
  const std::string& name() const { return name_; }
  // Every slice it reads or writes, nested thunks included.
  const std::vector<BufferUse>& uses() const { return uses_; }
  // Estimated work (see above); control flow reports INT64_MAX (always on the calling thread).
  int64_t cost() const { return cost_; }
  // Index into the executable's ThunkProfile (unique per executable; -1 before numbering).
  int64_t id() const { return id_; }
  void set_id(int64_t id) { id_ = id; }
  // One line: "kernel %fusion.3 loop_fusion[f32[1024], 3 ops] cost 4096".
  virtual std::string ToString() const;
  // Nested thunks (control flow), for numbering and listings.
  virtual std::vector<const Thunk*> nested() const { return {}; }

  virtual Status Execute(const ExecuteParams& params) const = 0;

 protected:
  Thunk(Kind kind, std::string name, std::vector<BufferUse> uses, int64_t cost)
      : kind_(kind), name_(std::move(name)), uses_(std::move(uses)), cost_(cost) {}
  void AddUses(const std::vector<BufferUse>& more) { uses_.insert(uses_.end(), more.begin(), more.end()); }

 private:
  Kind kind_;
  std::string name_;
  std::vector<BufferUse> uses_;
  int64_t cost_;
  int64_t id_ = -1;
};

std::string_view ThunkKindName(Thunk::Kind kind);

// Copies `size` bytes from `src` to `dst` (no-op when they are equal), split across the pool
// when large.
void CopyBytes(void* dst, const void* src, int64_t size, ThreadPool* pool);

}  // namespace kiln::cpu
