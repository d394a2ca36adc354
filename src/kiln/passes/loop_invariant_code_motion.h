// LoopInvariantCodeMotion: work a while body repeats with the same inputs every trip, done once
// before the loop.
//
// Note [Loop-invariant code motion]
//   A value of a while body is invariant when it depends only on state elements the body passes
//   through unchanged (root element j is get-tuple-element(param, j)), constants and iotas. JAX
//   writes such values inside loops all the time: a weight cast to bf16 each step of a
//   mixed-precision scan, a transposed or reshaped weight, a bias combined with a constant, the
//   same slice of a pass-through array. The pass computes each such value once before the loop,
//   in the loop's computation, and carries it in the loop state (a new element appended to the
//   state and passed through), so the body reads it instead of computing it.
//
//   What is hoisted. An instruction is movable when it has no side effect (HasSideEffect), no
//   control dependencies, is not a parameter, tuple, while, conditional, call, custom-call, async
//   or collective op, and all its operands are invariant. Of the movable instructions the pass
//   moves the "boundaries": movable values read by something that stays in the body. Cheap ops
//   that only rearrange or replicate data (broadcast, iota, reshape, bitcast, constant,
//   get-tuple-element) are never a boundary on their own: they stay in the body, where they fuse
//   into their users for free, and their movable operands become the boundaries instead. A
//   boundary is also left in the body (its operands tried instead) when it is larger than the
//   state elements and constants its computation reads (an elementwise op of broadcasts would
//   otherwise turn a fused per-step computation into a large array in memory), or larger than
//   1 GiB. Nothing moves unless the moved values include an op that does work (not one of the
//   cheap ops above).
//
//   Exactness. The moved instructions are the same instructions applied to the same values (the
//   init values of pass-through elements equal their value in every trip), so every trip reads
//   bit-identical values. A loop that runs zero times now computes the moved values once; they
//   are pure, so only time is spent. The pass needs the loop's body and condition to be called
//   by this loop alone, the body's root to be a tuple, and the loop's users to be
//   get-tuple-elements (the state grows). Nested loops: inner loops are processed first, so a
//   value invariant in both moves out of both.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class LoopInvariantCodeMotion : public HloPass {
 public:
  std::string_view name() const override { return "loop-invariant-code-motion"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
