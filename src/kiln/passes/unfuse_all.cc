#include "kiln/passes/unfuse_all.h"

#include "kiln/hlo/computation.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln {

StatusOr<bool> UnfuseAll::Run(HloModule& module) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    CallGraph graph(module);
    for (HloComputation* c : module.computations()) {
      if (graph.context(c) != CallContext::kSequential) continue;
      for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
        if (instr->opcode() != HloOpcode::kFusion) continue;
        KILN_RETURN_IF_ERROR(Unfuse(instr));
        again = changed = true;
      }
    }
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

}  // namespace kiln
