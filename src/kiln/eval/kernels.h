// Evaluator kernels: one function per opcode family, registered explicitly (no static
// initializers) in one table. Adding an op means writing its kernel, registering it in its
// family's Register function, and adding a case to the tests.
#pragma once

#include <span>

#include "kiln/base/status.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/literal.h"

namespace kiln {

// Computes `instr` from its operands' values. Kernels may call back into the evaluator for
// called computations (evaluator.Evaluate / EvaluateScalar).
using EvalKernel = StatusOr<Literal> (*)(const HloInstruction& instr,
                                         std::span<const Literal* const> operands,
                                         Evaluator& evaluator);

class KernelRegistry {
 public:
  void Register(HloOpcode op, EvalKernel kernel);
  EvalKernel Find(HloOpcode op) const;
  // The registry with every family registered.
  static const KernelRegistry& Global();

 private:
  EvalKernel kernels_[256] = {};
};

// "unsupported: <op> at line L (%name)": the error for an instruction no kernel handles.
Status UnsupportedInstruction(const HloInstruction& instr, std::string_view detail = "");

// Families (each in its own file).
void RegisterControlFlowKernels(KernelRegistry& r);  // parameter-free structural ops, call, while,
                                                     // conditional, tuple, get-tuple-element, ...
void RegisterElementwiseKernels(KernelRegistry& r);  // unary/binary/ternary math, convert, compare
void RegisterShapeKernels(KernelRegistry& r);        // broadcast, reshape, transpose, slice, pad, shuffle, ...
void RegisterReduceKernels(KernelRegistry& r);       // reduce, reduce-window, select-and-scatter
void RegisterIndexingKernels(KernelRegistry& r);     // dynamic-slice, dynamic-update-slice
void RegisterGatherScatterKernels(KernelRegistry& r);  // gather, scatter
void RegisterDotConvKernels(KernelRegistry& r);      // dot, convolution, ragged-dot
void RegisterSortKernels(KernelRegistry& r);         // sort, topk
void RegisterFusionKernels(KernelRegistry& r);       // fusion (evaluates the fused computation)
void RegisterMiscKernels(KernelRegistry& r);         // rng, fft, cholesky, triangular-solve, scan,
                                                     // batch-norm, custom-call, collectives (1 replica)

}  // namespace kiln
