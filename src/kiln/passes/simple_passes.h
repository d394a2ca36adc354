// Small neutral passes: dead code elimination, common subexpression elimination, tuple
// simplification, call inlining.
#pragma once

#include <span>
#include <string_view>

#include "kiln/passes/pass.h"

namespace kiln {

// True for instructions that must run even when nothing uses their value: side-effecting
// custom calls, send/recv, infeed/outfeed, the stateful rng, collectives (other replicas wait
// for them), and anything with control successors.
bool HasSideEffect(const HloInstruction& instr);

// Removes instructions whose values are unused (and that have no side effect), then
// computations no longer reachable from the entry. Parameters are never removed.
class DeadCodeElimination : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  StatusOr<bool> Run(HloModule& module) override;
};

// Merges instructions that compute the same value: same opcode, shape (with layout),
// operands, attributes, called computations, and (constants) literal. Side-effecting
// instructions and parameters are never merged.
class CommonSubexpressionElimination : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  StatusOr<bool> Run(HloModule& module) override;
};

// get-tuple-element(tuple(a0, a1, ...), i) -> ai;
// tuple(gte(x, 0), ..., gte(x, n-1)) -> x when x has exactly n elements and the same shape.
class TupleSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "tuple-simplifier"; }
  StatusOr<bool> Run(HloModule& module) override;
};

// Copies `callee`'s instructions into `into`, its parameters replaced by `operands` (clone
// names get ".<suffix>"; control edges between the callee's instructions are kept), and returns
// the copy of its root. The callee is left as it is.
StatusOr<HloInstruction*> InlineComputation(HloComputation* into, const HloComputation& callee,
                                            std::span<HloInstruction* const> operands,
                                            std::string_view suffix);

// Replaces every `call` with the body of the computation it calls (composite calls too: they
// mean the same thing), then drops computations no longer reachable.
class CallInliner : public HloPass {
 public:
  std::string_view name() const override { return "call-inliner"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
