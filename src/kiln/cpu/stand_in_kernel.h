// A stand-in CpuKernel that runs the reference evaluator's kernel for an instruction, used by
// the CPU runtime until src/kiln/cpu/kernel.cc (CreateCpuKernel) lands. It converts the input
// views to literals, evaluates, and copies the result leaves out, so it supports every in-place
// update (inputs are read completely before anything is written). Slow; correct.
#pragma once

#include <memory>

#include "kiln/cpu/kernel.h"

namespace kiln::cpu {

StatusOr<std::unique_ptr<CpuKernel>> CreateStandInKernel(const HloInstruction& instr);

}  // namespace kiln::cpu
