// Registration of the kernel files that RegisterMiscKernels gathers (internal to
// src/kiln/eval): misc.cc registers these alongside its own kernels, so kernels.h keeps one
// entry for the family.
#pragma once

#include "kiln/eval/kernels.h"

namespace kiln::eval_internal {

void RegisterRngKernels(KernelRegistry& r);     // rng-bit-generator, rng, rng-get-and-update-state
void RegisterFftKernels(KernelRegistry& r);     // fft
void RegisterLinalgKernels(KernelRegistry& r);  // cholesky, triangular-solve
void RegisterCollectiveKernels(KernelRegistry& r);  // one-participant collectives, async wrappers

}  // namespace kiln::eval_internal
