// HloSchedule: the order in which a backend runs each sequential computation's instructions.
//
// HloComputation keeps instructions in insertion order, which rewrites (fusion) leave out of
// def-before-use order, so the order the runtime follows is a separate object: one sequence per
// sequential computation (entry, while condition/body, conditional branches, call targets; see
// CallGraph). Buffer assignment computes liveness over it and the executable must run
// instructions in exactly that order (or an order with the same live ranges).
//
// Schedulers:
//   PostOrderSchedule     -- each computation's MakeInstructionPostOrder() (the default).
//   MemoryAwareSchedule   -- a list scheduler that, among ready instructions, prefers the one
//                            that frees the most bytes (its operands' last uses) net of the
//                            bytes it allocates; ties keep post order. Lowers peak memory on
//                            wide graphs (e.g. many independent branches each producing a large
//                            temporary that a later reduction consumes).
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

class HloSchedule {
 public:
  // The sequence of `c` (empty if it has none).
  const std::vector<const HloInstruction*>& sequence(const HloComputation* c) const;
  void set_sequence(const HloComputation* c, std::vector<const HloInstruction*> seq) {
    sequences_[c] = std::move(seq);
  }
  bool has_sequence(const HloComputation* c) const { return sequences_.count(c) > 0; }

  // OK if every sequential computation of `module` has a sequence holding each of its
  // instructions exactly once, operands and control predecessors before users.
  Status Verify(const HloModule& module) const;
  // One line per computation: "main: p, c, fusion, ..." (names).
  std::string ToString(const HloModule& module) const;

 private:
  std::unordered_map<const HloComputation*, std::vector<const HloInstruction*>> sequences_;
};

HloSchedule PostOrderSchedule(const HloModule& module);

// `size_fn`: bytes of an array shape (default dense).
HloSchedule MemoryAwareSchedule(const HloModule& module,
                                std::function<int64_t(const Shape&)> size_fn = nullptr);

// Note [Sinking loop state updates]
//   A while body's new state value r (an operand of the root tuple read by nothing else) that
//   is scheduled before the last reader of the old value of the same state leaf (the
//   get-tuple-element of the body parameter) forces buffer assignment to compute r into a
//   buffer of its own and copy it into the state at the end of each trip (the old value is
//   still needed). Moving r to just after that last reader lets it be computed into the state
//   in place: a loop counter `i + 1` read by the step's dynamic slices is the common case, and
//   its copy is a graph node per trip on the GPU. Only r moves, and only later: nothing in the
//   body reads it, so the order stays valid.
void SinkLoopStateUpdates(const HloModule& module, HloSchedule& schedule);

}  // namespace kiln
