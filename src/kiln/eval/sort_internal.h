// Entry points of sort.cc used by other kernel files (internal to src/kiln/eval).
#pragma once

#include <span>

#include "kiln/base/status.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"

namespace kiln::eval_internal {

// custom-call(x), custom_call_target="TopK", to_apply=comparator: the form XLA's TopkRewriter
// produces (and JAX's CPU pipeline dumps). x is [batch..., n] (rank 1 or more); the result is
// the tuple (values [batch..., k], indices s32[batch..., k]) with k from the result shape: the
// first k elements of each row stably sorted by the comparator (which takes either (lhs, rhs)
// of the values or (value lhs, value rhs, index lhs, index rhs)). Without a comparator the order
// is XLA's total order, largest first.
StatusOr<Literal> EvalTopKCustomCall(const HloInstruction& instr,
                                     std::span<const Literal* const> operands,
                                     Evaluator& evaluator);

}  // namespace kiln::eval_internal
