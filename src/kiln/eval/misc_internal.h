// Registration of the kernel files that RegisterMiscKernels gathers (internal to
// src/kiln/eval): misc.cc registers these alongside its own kernels, so kernels.h keeps one
// entry for the family.
#pragma once

#include <optional>
#include <span>

#include "kiln/eval/kernels.h"

namespace kiln::eval_internal {

void RegisterRngKernels(KernelRegistry& r);     // rng-bit-generator, rng, rng-get-and-update-state
void RegisterFftKernels(KernelRegistry& r);     // fft
void RegisterLinalgKernels(KernelRegistry& r);  // cholesky, triangular-solve
void RegisterCollectiveKernels(KernelRegistry& r);  // one-participant collectives, async wrappers

// triangular-solve of a (batch..., k, k) and b (batch..., m, n) into `result_shape` (linalg.cc).
StatusOr<Literal> TriangularSolve(const HloInstruction& instr, const Literal& a, const Literal& b,
                                  const TriangularSolveOptions& options, const Shape& result_shape);

// The linear-algebra custom call `instr` names (LAPACK, cuSOLVER/hipSOLVER/cuSPARSE, hybrid:
// lapack.cc dispatches to lapack*.cc and gpu_solver.cc), or nullopt when its target is none of
// them.
std::optional<StatusOr<Literal>> EvalLapackCustomCall(const HloInstruction& instr,
                                                      std::span<const Literal* const> operands);

}  // namespace kiln::eval_internal
