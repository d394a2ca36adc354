// Parallel loops of the evaluator's heavy kernels (dot, convolution), so that the oracle keeps
// up with what the backends run (issue 16: a 232 GFLOP bf16 x s4 dot took 74 s on one thread).
//
//   EvalParallelFor(evaluator, items, work_per_item, [&](int64_t begin, int64_t end) { ... });
//
// Runs fn over disjoint chunks covering [0, items) on a process-wide pool shared by every
// evaluator (participants of a multi-device run included), with at most
// EvaluatorOptions::threads chunks running at once (0: every core). Loops whose total work
// (items * work_per_item, in multiply-adds) is small run inline on the calling thread, as does
// everything when threads == 1. fn must only write what its items own: the kernels give each
// item its own output elements, computed in the same order as the serial loop, so results are
// bit-identical whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>

#include "kiln/eval/evaluator.h"

namespace kiln::eval_internal {

// Below this many multiply-adds a loop runs on the calling thread.
inline constexpr int64_t kEvalParallelMinWork = int64_t{1} << 22;

void EvalParallelFor(const Evaluator& evaluator, int64_t items, int64_t work_per_item,
                     const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace kiln::eval_internal
