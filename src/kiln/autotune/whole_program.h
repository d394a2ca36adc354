// Keeping, choice by choice, what the whole program says is faster.
//
// Note [Choices kept by the whole program]
//   The autotuner measures each instruction's candidates alone, outside the program they run
//   in (cold caches, no neighbours, no loop around them), so a choice that wins alone can lose
//   in place: an LSTM once ran 3.48 ms untuned and 4.17 ms tuned. After tuning, `kiln tune`
//   times the whole program untuned and tuned. When the tuned program is slower than the
//   untuned one by more than `margin`, each tuned choice in turn is put back to its default
//   config and the whole program timed again; the revert is kept where the program got faster
//   by more than half the margin, undone otherwise (greedy, one pass, choices tried in the
//   order given: the caller lists the least certain first). If the program is still slower
//   than untuned after the pass, every choice is put back. The result says which choices go
//   back to their default configs.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "kiln/base/status.h"

namespace kiln::autotune {

struct KeptChoices {
  std::vector<bool> reverted;  // per choice: back to its default config
  double ms = 0;               // the whole program's time with them (the last timing)
  int timings = 0;             // whole-program timings made
};

// `time_program(reverted)`: the whole program's time (ms) with the choices flagged reverted to
// their defaults and the others as tuned. `tuned_ms` and `untuned_ms`: the two timings already
// made. Errors from `time_program` end the search (returned). `only_when_slower` false: try the
// reverts even when the tuned program is not slower (`kiln tune --keep-faster always`).
StatusOr<KeptChoices> KeepFasterChoices(size_t choices, double tuned_ms, double untuned_ms,
                                        const std::function<StatusOr<double>(const std::vector<bool>&)>& time_program,
                                        double margin = 0.02, bool only_when_slower = true);

}  // namespace kiln::autotune
