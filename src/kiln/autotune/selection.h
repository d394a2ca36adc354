// Choosing among profiled candidates.
//
//   fastest mode (default): the valid candidate with the smallest median time; among the valid
//     candidates within `window` of it (time <= fastest × (1 + window)) the one needing the least
//     scratch memory (the fastest of those; the earliest in candidate order on equal times).
//     Measurements of near-equal kernels differ by noise; memory does not.
//   deterministic mode: the first valid candidate in candidate order (the backends' preference
//     order, which is fixed), whatever its time, so that every machine picks the same config.
// The runner-up is the fastest valid candidate other than the chosen one.
#pragma once

#include <span>

#include "kiln/autotune/config.h"
#include "kiln/autotune/profiler.h"

namespace kiln::autotune {

// One candidate of one instruction, as the autotuner reports it.
struct CandidateRecord {
  Config config;
  Measurement measurement;
  double compile_ms = 0;
  bool is_default = false;    // the default config (of the first backend supporting the op)
  bool is_reference = false;  // its outputs were the reference
  bool trusted = false;       // its backend cannot produce wrong results
  bool profiled = false;      // `measurement` is real (the determinism mode stops early)

  bool valid() const { return profiled && measurement.ok(); }
};

struct SelectionOptions {
  // Relative time window inside which less scratch memory wins.
  double window = 0.02;
  bool deterministic = false;
};

struct Selection {
  int chosen = -1;     // index into the records, -1 when none is valid
  int runner_up = -1;  // -1 when there is no second valid candidate
};

Selection SelectCandidate(std::span<const CandidateRecord> records,
                          const SelectionOptions& options = {});

}  // namespace kiln::autotune
