// Buffer assignment: where every array value of an executable lives in memory.
//
// Shared by the CPU and GPU compilers. Input: a module after fusion and FlattenCallGraph (each
// while body/condition, branch and call target called from one place), and a schedule (the order
// the runtime runs each sequential computation's instructions; `BufferAssignmentOptions::
// schedule`, default PostOrderSchedule). Output: allocations and, for every array leaf of every
// value of a sequential computation (entry, while condition/body, conditional branches, call
// targets; see CallGraph), a slice (allocation, offset, size).
//
// Allocations:
//   kParameter -- one per entry parameter leaf; the caller's memory. Never written unless the
//                 parameter is donated (input_output_alias / buffer_donor) and
//                 use_donated_parameters is on.
//   kConstant  -- one per constant instruction of a sequential computation (read-only, filled at
//                 load time). Constants inside fusions belong to their kernels.
//   kTemp      -- ONE arena holding every other value; values whose live ranges do not overlap
//                 share bytes (best-fit interval packing, `alignment`-aligned offsets).
// Entry outputs live in the arena (or in a donated parameter's allocation when aliased, or in a
// constant/parameter allocation when the root returns one directly); the executable copies or
// hands them out as its result (output_slices()).
//
// Values that do not get storage of their own (they alias an operand's slice):
//   tuple (its leaves are its operands' slices), get-tuple-element, bitcast, reshape of a dense
//   row-major array of the same element type (a view), opt-barrier, domain, add-dependency
//   (operand 0), a call (its callee's root; callee parameters are the call's operands).
// In-place updates (the result takes over operand 0's / the aliased operand's slice) when the
// operand's buffer is writable (an arena value, a while state, or a donated parameter) and no
// other reader of the old value runs later (see Note [In-place updates]):
//   dynamic-update-slice; a fusion output that is a dynamic-update-slice whose buffer operand is
//   a fused parameter used by nothing else; custom-call / fusion output_to_operand_aliasing.
// Where an update is not in place, its output slice differs from the operand's and the kernel
// must copy the operand first.
//
// Note [In-place updates]
//   Value X may take over the buffer B of its operand when (1) B is writable: an arena value,
//   the state of a while loop, or a donated entry parameter, never a constant or an undonated
//   parameter, nor a value seen through a conditional branch's or a call's parameter; (2) every
//   instruction that reads any value held in B (through any alias: tuples, get-tuple-elements,
//   bitcasts, loop parameters) runs at or before X in the flattened schedule, B is no entry
//   output and no loop/branch root. A conditional or call reading B counts as running at its
//   end (its callee may read B anywhere).
//
// Note [While loop buffers]
//   A while's result leaves, its body's parameter leaves and its condition's parameter leaves
//   are one set of "state" slices, live for the whole loop. The init (operand) leaf is copied
//   into the state before the first iteration, unless the state takes over the operand's buffer
//   (Note [In-place updates] at the while; one state leaf per buffer). The body root's leaves
//   are copied into the state after each iteration, except:
//     * pass-through leaves (the root leaf is already the state leaf: the body returns its
//       parameter's element, or updated it in place), and
//     * leaves whose value the body computes into the state slice directly: the root leaf's
//       buffer is defined in the body and every reader of the old state leaf runs before its
//       definition -- or, with BufferAssignmentOptions::elementwise_state_updates, is the
//       defining instruction itself reading each element only to compute the same element
//       (an elementwise op or loop fusion: a loop counter i+1, an accumulator acc+x, an RNN's
//       new hidden state from the old one, ...).
//   Copies are simultaneous: when a root leaf's source is another state slice that is itself
//   overwritten (a permutation, e.g. swapping two state elements), the runtime first copies
//   those sources into `staging` slices, then everything into the state. `WhileCopyPlan` lists
//   the slices of every copy.
//
// Note [Conditional buffers]
//   A conditional's result leaves get slices of their own, live from the conditional's start.
//   Branch parameters are the conditional's operands (read-only). A branch root leaf whose
//   buffer the branch defines is computed directly into the result slice; any other root leaf
//   (a branch parameter, a constant, a value shared with another leaf) is copied into the
//   result: the runtime copies where GetSlice(branch root, leaf) != GetSlice(conditional, leaf).
//
// Note [Donated parameters]
//   input_output_alias {out}: (p, {i}) asks that output leaf `out` live in parameter p's leaf
//   i; buffer_donor (p, {i}) lets any output live there. With use_donated_parameters, such a
//   parameter leaf is writable (in-place updates may chain through it), and an output leaf whose
//   buffer is defined after the parameter's last read is placed in the parameter's allocation.
//   An alias that cannot be honoured is left out (output_slices() shows where the output
//   lives); for must-alias entries the executable copies the output into the parameter buffer
//   at the end, which is safe because the parameter's buffer then holds no other output.
//
// Liveness: the module is flattened into one sequential order (a while's condition then body, a
// conditional's branches one after another, a call's callee, each at the position of the
// instruction). A value is live from its definition to its last reader in that order; the
// state of a while is live for the whole loop; loop roots are read at the end of the body,
// branch roots at the end of their branch; entry outputs stay live to the end. Parameters and
// constants are not in the arena.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/memory_stats.h"
#include "kiln/passes/hlo_schedule.h"

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
  // kParameter: the program may write it (donated and used for an output or in-place update).
  bool written = false;
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
  std::string ToString() const;  // "a2[64:128)"
};


// For a while instruction: which state leaves need copies, and the slices involved (see
// Note [While loop buffers]). All vectors are indexed like `leaves`.
struct WhileCopyPlan {
  std::vector<ShapeIndex> leaves;       // the state's array leaves, in order
  std::vector<bool> copy_init;          // copy init -> state before the first iteration
  std::vector<bool> copy_body_result;   // copy body_result -> state after each iteration
  std::vector<BufferSlice> init;        // the operand's leaf slices
  std::vector<BufferSlice> state;       // state slices (= result, body and condition parameter)
  std::vector<BufferSlice> body_result; // the body root's leaf slices
  // Valid where a body result must be staged: copy body_result -> staging for all of those
  // first, then staging (or body_result) -> state.
  std::vector<BufferSlice> staging;
};

// Whether every element of `instr`'s result leaves is computed from the same element (same
// index) of operand k and from no other element of it: an elementwise instruction, or a loop
// fusion whose fused parameter k reaches the root only through elementwise instructions, with
// every result leaf of k's dimensions. Such an instruction may write its result over operand k
// (the loop-state updates of Note [While loop buffers]); kernels read each element before
// they write it.
bool ReadsOperandElementwise(const HloInstruction& instr, int64_t k);

struct BufferAssignmentOptions {
  // Bytes of an array shape (default: dense, PrimitiveByteWidth per element).
  std::function<int64_t(const Shape&)> size_fn;
  // Alignment of arena offsets (and of the arena size). Must be a power of two.
  int64_t alignment = 64;
  // The execution order (null: PostOrderSchedule(module)). Must outlive Run().
  const HloSchedule* schedule = nullptr;
  // Honour the module's input_output_alias / buffer_donor (Note [Donated parameters]).
  bool use_donated_parameters = true;
  // Update buffers in place (Note [In-place updates]) and let loop state take over init
  // buffers / receive body results directly. Off: every value gets its own buffer and loops
  // copy every leaf.
  bool in_place = true;
  // With in_place: a loop's body may compute a state leaf over the old one when the
  // instruction computing it reads that leaf elementwise (ReadsOperandElementwise), which
  // saves the per-iteration copy. For backends whose kernels read every input element before
  // writing the same output element (the GPU's) or that handle such outputs (the CPU's loop
  // kernels, Note [In-place loop kernels]).
  bool elementwise_state_updates = false;
  // Share arena bytes between values whose live ranges don't overlap (off: every value gets its
  // own bytes; for debugging).
  bool reuse_buffers = true;
};

class BufferAssignment {
 public:
  // Assigns buffers for `module` run in `options.schedule` order. Computations called from
  // fusions, reducers and other embedded scalar computations get no slices (the kernels that
  // run them own their temporaries).
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

  // The flattened schedule position range [first, last] during which the value in the slice of
  // (instr, index) is live (for tools and the checker's messages). NotFound like GetSlice.
  StatusOr<std::pair<int64_t, int64_t>> GetLiveRange(const HloInstruction& instr,
                                                     const ShapeIndex& index = {}) const;

  const MemoryStats& stats() const { return stats_; }
  // Readable dump: allocations, then every value's slice and live range.
  std::string ToString() const { return debug_string_; }

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
  struct SliceInfo {
    BufferSlice slice;
    int64_t live_start = 0, live_end = 0;
  };
  std::unordered_map<Key, SliceInfo, KeyHash> slices_;
  std::unordered_map<const HloInstruction*, WhileCopyPlan> while_plans_;
  std::vector<BufferSlice> output_slices_;
  MemoryStats stats_;
  std::string debug_string_;
};

// Array leaf indices of a shape in order ({} for an array; {0}, {1, 0}, ... for tuples).
std::vector<ShapeIndex> ArrayLeafIndices(const Shape& shape);

}  // namespace kiln
