// ConstantFolding: replaces instructions whose operands are all constants by the constant they
// compute, using the reference evaluator's kernels (so folding has exactly XLA's semantics).
//
// Folded: any instruction whose operands are all constants with known values, except
//   * ops without operands (iota, rng-get-and-update-state, replica-id, ...) and broadcasts:
//     they are cheap to compute and folding them only makes big constants;
//   * side-effecting or nondeterministic ops: rng, rng-bit-generator, custom-call, infeed,
//     send/recv, collectives, async ops, anything HasSideEffect() names, and instructions that
//     call a computation containing one;
//   * ops whose meaning is not only their value: opt-barrier, domain, add-dependency, bitcast
//     (layout-dependent), copy-start/copy-done, set-dimension-size, after-all;
//   * instructions with control dependencies, dynamic shapes or token results;
//   * results over the size bounds in ConstantFoldingOptions;
//   * while loops that do not finish within max_while_iterations.
// A tuple-shaped result becomes a tuple instruction of array constants (no tuple constants are
// created). An evaluation error (an unsupported op, a loop that runs too long) means "do not
// fold"; it never fails the pass.
#pragma once

#include <cstdint>

#include "kiln/passes/pass.h"

namespace kiln {

struct ConstantFoldingOptions {
  // Results with more elements than this (over all leaves) are never folded.
  int64_t max_result_elements = 65536;
  // A result with more elements than all its constant operands together (folding would grow
  // the module: pad, concatenate of repeats, outer products...) is folded only up to this many
  // elements.
  int64_t max_growth_elements = 1024;
  // A while loop is folded only when it finishes within this many iterations.
  int64_t max_while_iterations = 1000;
};

class ConstantFolding : public HloPass {
 public:
  explicit ConstantFolding(ConstantFoldingOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "constant-folding"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  ConstantFoldingOptions options_;
};

}  // namespace kiln
