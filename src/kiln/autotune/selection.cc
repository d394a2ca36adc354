#include "kiln/autotune/selection.h"

namespace kiln::autotune {

Selection SelectCandidate(std::span<const CandidateRecord> records,
                          const SelectionOptions& options) {
  Selection s;
  const int n = static_cast<int>(records.size());
  auto valid = [&](int i) { return records[i].valid(); };
  auto time = [&](int i) { return records[i].measurement.median_us; };

  if (options.deterministic) {
    for (int i = 0; i < n && s.chosen < 0; ++i) {
      if (valid(i)) s.chosen = i;
    }
  } else {
    int fastest = -1;
    for (int i = 0; i < n; ++i) {
      if (valid(i) && (fastest < 0 || time(i) < time(fastest))) fastest = i;
    }
    if (fastest >= 0) {
      const double limit = time(fastest) * (1 + options.window);
      s.chosen = fastest;
      for (int i = 0; i < n; ++i) {
        if (!valid(i) || time(i) > limit) continue;
        uint64_t scratch = records[i].measurement.scratch_bytes;
        uint64_t best = records[s.chosen].measurement.scratch_bytes;
        if (scratch < best || (scratch == best && time(i) < time(s.chosen))) s.chosen = i;
      }
    }
  }
  if (s.chosen < 0) return s;
  for (int i = 0; i < n; ++i) {
    if (i == s.chosen || !valid(i)) continue;
    if (s.runner_up < 0 || time(i) < time(s.runner_up)) s.runner_up = i;
  }
  return s;
}

}  // namespace kiln::autotune
