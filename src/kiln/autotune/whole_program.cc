#include "kiln/autotune/whole_program.h"

namespace kiln::autotune {

StatusOr<KeptChoices> KeepFasterChoices(size_t choices, double tuned_ms, double untuned_ms,
                                        const std::function<StatusOr<double>(const std::vector<bool>&)>& time_program,
                                        double margin, bool only_when_slower) {
  KeptChoices out;
  out.reverted.assign(choices, false);
  out.ms = tuned_ms;
  if (choices == 0 || (only_when_slower && !(tuned_ms > untuned_ms * (1 + margin)))) return out;
  for (size_t i = 0; i < choices; ++i) {
    out.reverted[i] = true;
    KILN_ASSIGN_OR_RETURN(double t, time_program(out.reverted));
    ++out.timings;
    if (t < out.ms * (1 - margin / 2)) {
      out.ms = t;
    } else {
      out.reverted[i] = false;
    }
  }
  if (out.ms > untuned_ms * (1 + margin)) {
    out.reverted.assign(choices, true);
    KILN_ASSIGN_OR_RETURN(out.ms, time_program(out.reverted));
    ++out.timings;
  }
  return out;
}

}  // namespace kiln::autotune
