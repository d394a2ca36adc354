// How each computation of a module is called, for passes that treat them differently.
//
//   kSequential -- runs as a sequence of kernels/thunks: the entry, while condition and body,
//                  conditional branches, call targets. Fusion happens inside these, and buffer
//                  assignment gives their values slices.
//   kFused      -- the fused computation of a fusion instruction (runs inside one kernel).
//   kEmbedded   -- a computation run inside one op's thunk: reducers, comparators, map and
//                  scatter combiners, custom-call callees, and the computation an async-start
//                  wraps (the async op's thunk runs it whole; its values get no slices).
//   kUnreachable -- not called from the entry.
// A computation called in two ways gets the first of kSequential, kFused, kEmbedded.
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/hlo/module.h"
#include "kiln/passes/pass.h"

namespace kiln {

enum class CallContext : uint8_t { kSequential, kFused, kEmbedded, kUnreachable };

class CallGraph {
 public:
  explicit CallGraph(const HloModule& module);

  CallContext context(const HloComputation* c) const;
  // Sequential computations, callees before callers (the entry last).
  const std::vector<HloComputation*>& sequential_computations() const { return sequential_; }
  // The instructions calling `c` (empty for the entry and unreachable computations).
  const std::vector<const HloInstruction*>& callers(const HloComputation* c) const;

 private:
  std::unordered_map<const HloComputation*, CallContext> context_;
  std::unordered_map<const HloComputation*, std::vector<const HloInstruction*>> callers_;
  std::vector<HloComputation*> sequential_;
};

// Gives every sequential computation other than the entry exactly one calling site: a
// while body, branch or call target used by several instructions (or twice by one
// conditional) is cloned for each extra site, together with the sequential computations it
// calls. Buffer assignment needs this (a computation's values get one set of slices); fused
// and embedded computations stay shared.
class FlattenCallGraph : public HloPass {
 public:
  std::string_view name() const override { return "flatten-call-graph"; }
  StatusOr<bool> Run(HloModule& module) override;
};

// Whether `instr` calls its computations sequentially (while, conditional, call) rather than
// embedding them in its kernel or thunk.
bool CallsSequentially(const HloInstruction& instr);

}  // namespace kiln
