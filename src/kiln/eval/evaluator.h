// The reference evaluator: runs any HLO module directly on the host, slowly and exactly, with
// XLA's semantics. It is the oracle every backend is checked against.
//
// Accuracy over speed: arithmetic on narrow floats (f16, bf16, f8) is done in f32 and rounded
// back per operation, as XLA's own evaluator does; dots and convolutions accumulate in the
// wider of f32 and the operand type. Not absurdly slow: simple scalar computations (reducers,
// comparators, combiners) are recognized and run natively rather than interpreted per element.
//
// An opcode the evaluator cannot run is an Unimplemented error "unsupported: <op> at line L".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

class ScalarProgram;
class Rendezvous;

struct EvaluatorOptions {
  // Seed of the stateful `rng` op's generator (rng-bit-generator is stateless and ignores it).
  uint64_t rng_seed = 0;
  // This participant: the values of replica-id and partition-id.
  int64_t replica_id = 0;
  int64_t partition_id = 0;
  // The run this participant is part of (eval/participants.h sets these for each participant):
  // replica_count x num_partitions participants meeting at `rendezvous` (eval/rendezvous.h).
  // Without a rendezvous the evaluator is the only participant: a collective whose group has
  // another member is UnsupportedInstruction.
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  std::shared_ptr<Rendezvous> rendezvous = nullptr;
  // Stop a while loop after this many iterations with an error (-1 = no limit).
  int64_t max_loop_iterations = -1;
  // Threads of the large dot and convolution loops (eval/parallel.h): 0 = every core, 1 = the
  // calling thread only. The results do not depend on it: each output element is computed by
  // one thread in the same order.
  int threads = 0;
};

class Evaluator {
 public:
  explicit Evaluator(EvaluatorOptions options = {});

  // Runs the module's entry computation; one argument per entry parameter, shapes compatible
  // with the parameters' (layouts are ignored). Returns the root's value (a tuple literal for a
  // tuple root).
  StatusOr<Literal> Run(const HloModule& module, std::span<const Literal> args);

  // Evaluates one computation with the given arguments (used for called computations).
  StatusOr<Literal> Evaluate(const HloComputation& computation,
                             std::span<const Literal* const> args);

  // Evaluates a scalar computation of two (or 2N) scalar arguments -- a reducer, comparator or
  // combiner -- on the given scalars. Recognized simple computations (add, max, a single compare,
  // ...) take a fast native path.
  StatusOr<Literal> EvaluateScalar(const HloComputation& computation,
                                   std::span<const Literal* const> args);

  // The compiled native form of a scalar computation (see scalar_program.h), or nullptr when
  // `computation` is not a simple scalar computation. Compiled once per computation and cached
  // in this evaluator (the cache is cleared by Run, so the computation must outlive its use
  // within one run).
  const ScalarProgram* GetScalarProgram(const HloComputation& computation);

  const EvaluatorOptions& options() const { return options_; }
  // How many times `instr` has run before in this Run (a collective's meeting key: the k-th
  // execution of an op on one participant meets the k-th on the others). Counts this call.
  int64_t NextOccurrence(const HloInstruction& instr) { return occurrences_[&instr]++; }
  // The run's rendezvous: options().rendezvous, or (running alone) one of this evaluator's own
  // for one participant (a send to itself).
  Rendezvous& rendezvous();
  // State of the stateful rng op (advanced by each rng evaluation).
  uint64_t& rng_state() { return rng_state_; }

  // The runtime sizes of `instr`'s value, one per dimension (Note [Dynamic sizes] in
  // eval/dynamic_shapes.h): for a bounded dynamic array, the sizes its producer gave it
  // (SliceToDynamic, set-dimension-size, followed through SetBound and elementwise ops); the
  // bounds for a static array, an entry parameter or a constant. Unimplemented, naming the
  // instruction, when a dynamic size came from an op whose result size the evaluator does not
  // follow. Valid while `instr` has a value in the computation being evaluated.
  StatusOr<std::vector<int64_t>> DynamicSizes(const HloInstruction& instr) const;

 private:
  EvaluatorOptions options_;
  uint64_t rng_state_;
  int depth_ = 0;
  // Sizes of the bounded dynamic arrays evaluated so far (see DynamicSizes); set by Evaluate.
  std::unordered_map<const HloInstruction*, std::vector<int64_t>> dynamic_sizes_;
  const HloComputation* entry_ = nullptr;  // the entry computation of the module being Run
  // Compiled scalar programs (nullptr entries: tried, not compilable).
  std::unordered_map<const HloComputation*, std::shared_ptr<const ScalarProgram>> scalar_programs_;
  std::unordered_map<const HloInstruction*, int64_t> occurrences_;  // see NextOccurrence
  std::shared_ptr<Rendezvous> own_rendezvous_;                      // see rendezvous()
};

// Runs a module on arguments with default options.
StatusOr<Literal> EvaluateModule(const HloModule& module, std::span<const Literal> args);

}  // namespace kiln
