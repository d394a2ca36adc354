// The fusion kernel: a fusion's value is its fused computation evaluated on its operands (see
// Note [Fusion representation] in passes/fusion_utils.h). Fusion kinds do not change meaning.
#include "kiln/eval/kernels.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

StatusOr<Literal> EvalFusion(const HloInstruction& instr, std::span<const Literal* const> ops,
                             Evaluator& e) {
  if (instr.called_computations().empty() || !instr.fused_computation())
    return InvalidArgument("fusion %", instr.name(), " has no fused computation");
  return e.Evaluate(*instr.fused_computation(), ops);
}

}  // namespace

void RegisterFusionKernels(KernelRegistry& r) { r.Register(HloOpcode::kFusion, EvalFusion); }

}  // namespace kiln
