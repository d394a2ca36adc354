// Buffer assignment: where every array value of an executable lives in memory.
//
// Shared by the CPU and GPU compilers. Input: a module after fusion, scheduled (each
// computation's instructions in the order the runtime will run them: the computation's
// instruction order after scheduling; see `BufferAssignmentOptions::schedule`). Output:
// allocations and, for every array leaf of every value the runtime materializes, a slice
// (allocation, offset, size).
//
// Allocations:
//   kParameter -- one per entry parameter leaf; the caller's memory. Never written unless the
//                 parameter is donated (input_output_alias / buffer_donor) and the alias is used.
//   kConstant  -- one per constant instruction (read-only, filled at load time).
//   kTemp      -- ONE arena holding every other value; values whose live ranges do not overlap
//                 share bytes (best-fit interval packing, `alignment`-aligned offsets).
// Entry outputs live in the arena (or in a donated parameter's allocation when aliased, or in a
// constant/parameter allocation when the root returns one directly); the executable copies or
// hands them out as its result.
//
// Values that do not get storage of their own (they alias an operand's slice):
//   tuple (its leaves are its operands' slices), get-tuple-element, bitcast, and reshape of a
//   dense row-major array (a view); a dynamic-update-slice (or a fusion whose root is one)
//   writes in place into operand 0's slice when that value dies there and is not a parameter
//   (unless donated) or a constant; see Note [While loop buffers] for while and conditional.
//
// Note [While loop buffers]
//   A while's result leaves, its body's parameter leaves and its condition's parameter leaves
//   are one set of "state" slices, live for the whole loop. The init (operand) is copied into
//   the state before the first iteration unless the operand leaf dies at the while and is an
//   arena value, in which case the state takes over its slice. The body root's leaves get their
//   own slices and are copied into the state after each iteration, except pass-through leaves
//   (body root leaf == body parameter leaf), which need no copy. `WhileCopyPlan` says which
//   leaves need the initial and per-iteration copies. Conditional branches read their operand's
//   slices; each branch root is copied into the conditional's own result slices.
//
// Liveness: the module is flattened into one sequential order (a while/conditional's called
// computations are placed at the while/conditional's position); a value is live from its
// definition to its last use in that order (a value used inside a loop body stays live for the
// whole loop). Entry outputs stay live to the end; parameters and constants are not in the
// arena.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

using ShapeIndex = std::vector<int64_t>;

struct BufferAllocation {
  enum class Kind : uint8_t { kParameter, kConstant, kTemp };
  int64_t index = 0;
  Kind kind = Kind::kTemp;
  int64_t size = 0;  // bytes
  // kParameter: which entry parameter leaf.
  int64_t parameter_number = -1;
  ShapeIndex parameter_index;
  // kConstant: the constant instruction.
  const HloInstruction* constant = nullptr;
  // Some entry output leaf may live here.
  bool maybe_live_out = false;
};

struct BufferSlice {
  int64_t allocation = -1;
  int64_t offset = 0;
  int64_t size = 0;
  bool valid() const { return allocation >= 0; }
  bool Overlaps(const BufferSlice& o) const {
    return allocation == o.allocation && offset < o.offset + o.size && o.offset < offset + size;
  }
  bool operator==(const BufferSlice&) const = default;
};

struct MemoryStats {
  int64_t argument_bytes = 0;  // all entry parameter leaves
  int64_t output_bytes = 0;    // all entry output leaves
  int64_t constant_bytes = 0;
  int64_t temp_bytes = 0;      // arena size
  int64_t peak_bytes = 0;      // max over time of live arena bytes (<= temp_bytes)
  int64_t aliased_bytes = 0;   // bytes saved by in-place updates and donated parameters
  std::string ToString() const;
};

// For a while instruction: which state leaves need copies (see Note [While loop buffers]).
struct WhileCopyPlan {
  std::vector<ShapeIndex> leaves;          // the state's array leaves, in order
  std::vector<bool> copy_init;             // per leaf: copy the operand into the state first
  std::vector<bool> copy_body_result;      // per leaf: copy body root leaf -> state per iteration
};

struct BufferAssignmentOptions {
  // Bytes of an array shape (default: dense, PrimitiveByteWidth per element).
  std::function<int64_t(const Shape&)> size_fn;
  int64_t alignment = 64;
  // Honour the module's input_output_alias / buffer_donor by updating donated parameters in
  // place.
  bool use_donated_parameters = true;
  // Share arena bytes between values whose live ranges don't overlap (off: every value gets its
  // own bytes; for debugging).
  bool reuse_buffers = true;
};

class BufferAssignment {
 public:
  // Assigns buffers for `module`, whose computations' instruction orders (instructions())
  // are the execution schedule. Computations called from fusions, reducers and other embedded
  // scalar computations get no slices (the kernels that run them own their temporaries).
  static StatusOr<std::unique_ptr<BufferAssignment>> Run(const HloModule& module,
                                                         const BufferAssignmentOptions& options = {});

  const std::vector<BufferAllocation>& allocations() const { return allocations_; }
  // Index of the one arena allocation (-1 if nothing lives in it).
  int64_t temp_allocation() const { return temp_allocation_; }

  // The slice holding the array leaf `index` of `instr`'s value. NotFound for values that have
  // no storage (embedded computations, tokens) -- a compiler bug if asked.
  StatusOr<BufferSlice> GetSlice(const HloInstruction& instr, const ShapeIndex& index = {}) const;
  bool HasSlice(const HloInstruction& instr, const ShapeIndex& index = {}) const;

  // The copy plan of a while instruction.
  StatusOr<WhileCopyPlan> GetWhileCopyPlan(const HloInstruction& while_instr) const;

  // For each entry output leaf (flattened order): its slice.
  const std::vector<BufferSlice>& output_slices() const { return output_slices_; }

  const MemoryStats& stats() const { return stats_; }
  // Readable dump: allocations, then every value's slice and live range.
  std::string ToString() const;

 private:
  BufferAssignment() = default;
  friend class BufferAssigner;

  std::vector<BufferAllocation> allocations_;
  int64_t temp_allocation_ = -1;
  struct Key {
    const HloInstruction* instr;
    ShapeIndex index;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, BufferSlice, KeyHash> slices_;
  std::unordered_map<const HloInstruction*, WhileCopyPlan> while_plans_;
  std::vector<BufferSlice> output_slices_;
  MemoryStats stats_;
  std::string debug_string_;
};

}  // namespace kiln
