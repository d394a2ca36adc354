// Expanding kiln's library custom calls (__kiln$gemm, __kiln$conv) back into plain HLO that
// computes the same values (dot / convolution plus the epilogue's elementwise ops).
//
// Two uses: tests check the GEMM and convolution rewriters by evaluating the expanded module
// against the original with the reference evaluator; and the GPU compiler's host fallback
// evaluates a library call that no library on the device accepts. The expansion computes the
// epilogue in the result type after rounding the product (the library rounds once at the
// end), so compare with tolerances.
#pragma once

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln::cuda {

// Replaces `call` (a GEMM or convolution custom call) by equivalent HLO in its computation;
// returns the instruction that now holds its value. `call` is left dead.
StatusOr<HloInstruction*> ExpandLibraryCall(HloInstruction* call);

// Expands every library call of the module (then removes the dead instructions).
Status ExpandLibraryCalls(HloModule& module);

}  // namespace kiln::cuda
