// WhileLoopSimplifier: removes loops that never run, inlines loops that run once, and drops
// loop state nobody needs. ComputeWhileTripCount is exposed for the backends (unrolling,
// thunk planning).
//
// Rewrites, per while instruction (in this order; the first that applies wins):
//   * trip count 0: while(init) -> init. Needs a side-effect-free condition (it would have run
//     once).
//   * trip count 1: the body is inlined with its parameter bound to init. Needs a
//     side-effect-free condition (it would have run twice); the body may have side effects (it
//     runs exactly once either way).
//   * dead state: tuple element j of the loop state is dead when nothing observable depends on
//     it: the while's users (all get-tuple-elements) do not read j, the condition does not
//     read j, and in the body j only feeds dead elements (a pass-through element, an
//     accumulator nobody reads). Side-effecting body instructions keep what they read alive.
//     Dead elements are removed from the state: new condition and body computations (the old
//     ones are dropped when unreachable), a smaller init tuple and while, renumbered
//     get-tuple-elements. Loops whose state is not a tuple, whose users or parameters are used
//     other than through get-tuple-element, whose body root is not a tuple instruction, or that
//     carry a tuple sharding are left alone.
// Loops with control dependencies are left alone.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/hlo/instruction.h"
#include "kiln/passes/pass.h"

namespace kiln {

// The number of times the body of `while_instr` runs, when it is a compile-time constant of
// the common (JAX) form:
//   * an integer scalar element i of the loop state (a tuple) is initialized to a constant
//     (the init is a tuple instruction whose operand i is a constant, or a constant tuple);
//   * the body root is a tuple instruction whose element i is gte(param, i) + c or
//     gte(param, i) - c (either operand order for +) with a constant c;
//   * the condition's root is compare(gte(param, i), bound) (or with the operands swapped) with
//     direction LT, LE, GT, GE, EQ or NE, where the bound is a constant or a loop-invariant
//     state element (passed through unchanged by the body) initialized to a constant.
// Arithmetic follows the element type (signed or unsigned, its own width). nullopt when the
// pattern does not match, the loop would not terminate, or the induction variable would wrap
// around before the loop ends.
std::optional<int64_t> ComputeWhileTripCount(const HloInstruction& while_instr);

// Note [Known trip counts]
//   A while whose trip count is known at compile time records it in its backend_config, in
//   XLA's form ({"known_trip_count":{"n":"128"}}, other fields kept), so that it survives the
//   passes that clone or fuse around the loop and shows in dumps. WhileTripCountAnnotator
//   writes ComputeWhileTripCount's result there (overriding a recorded value it disagrees
//   with); where the pattern does not match, a count XLA recorded is kept and trusted, as XLA
//   does. The backends run such a loop without reading its predicate: the GPU backend
//   without a host round trip per iteration (the whole loop inside one CUDA graph), the cpu
//   backend without the condition's kernels. A loop whose condition has side effects still
//   runs the condition every time (its result unread).

// The trip count recorded in `while_instr`'s backend_config; nullopt when there is none, it is
// malformed or negative.
std::optional<int64_t> KnownTripCount(const HloInstruction& while_instr);
// Records `trips` in `while_instr`'s backend_config (a JSON object; a non-JSON config is
// replaced).
void SetKnownTripCount(HloInstruction& while_instr, int64_t trips);

// Whether nothing in `c` (or what it calls) has a side effect.
bool IsSideEffectFreeComputation(const HloComputation& c);

class WhileTripCountAnnotator : public HloPass {
 public:
  std::string_view name() const override { return "while-trip-count"; }
  StatusOr<bool> Run(HloModule& module) override;
};

struct WhileLoopSimplifierOptions {
  bool remove_zero_trip_loops = true;
  bool inline_single_trip_loops = true;
  bool remove_dead_state = true;
};

class WhileLoopSimplifier : public HloPass {
 public:
  explicit WhileLoopSimplifier(WhileLoopSimplifierOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "while-loop-simplifier"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  WhileLoopSimplifierOptions options_;
};

}  // namespace kiln
