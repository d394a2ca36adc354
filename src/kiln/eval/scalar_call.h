// ScalarCall: runs a scalar computation (a scatter combiner, a sort comparator) on element
// values held in native storage, without the caller building Literals per element.
//
// Internal to src/kiln/eval. The computation takes scalar parameters of the given types and
// returns a scalar or a tuple of scalars. When the evaluator compiles it into a ScalarProgram
// (straight-line scalar ops), Run calls the program on the caller's storage directly; otherwise
// Run copies the argument bytes into scalar literals, evaluates the computation, and copies the
// result bytes out.
//
// Not thread-safe; one ScalarCall per kernel invocation.
#pragma once

#include <span>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/literal.h"

namespace kiln {
class ScalarProgram;
}

namespace kiln::eval_internal {

class ScalarCall {
 public:
  // Checks that `computation` has one scalar parameter per entry of `param_types` (of that
  // element type) and a root of `num_results` scalars.
  static StatusOr<ScalarCall> Create(Evaluator& evaluator, const HloComputation& computation,
                                     std::span<const PrimitiveType> param_types, int num_results);

  // args[i] points to the native value of parameter i (PrimitiveByteWidth bytes); results[j]
  // receives result j. Results may alias arguments.
  Status Run(std::span<const void* const> args, std::span<void* const> results);

  // Runs a computation with one pred result and returns it.
  StatusOr<bool> RunPredicate(std::span<const void* const> args);

  int num_results() const { return num_results_; }

 private:
  ScalarCall(Evaluator& e, const HloComputation& c) : evaluator_(&e), computation_(&c) {}

  Evaluator* evaluator_;
  const HloComputation* computation_;
  const ScalarProgram* program_ = nullptr;  // owned by the evaluator
  std::vector<Literal> params_;
  std::vector<const Literal*> param_ptrs_;
  std::vector<int> widths_;
  std::vector<int> result_widths_;
  int num_results_ = 1;
};

}  // namespace kiln::eval_internal
