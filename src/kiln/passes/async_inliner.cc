#include "kiln/passes/async_inliner.h"

#include <algorithm>
#include <vector>

#include "kiln/hlo/module.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {
namespace {

// Whether `c` (or a computation it calls) has an instruction `pred` says.
template <class Pred>
bool Has(const HloComputation& c, Pred pred) {
  for (const HloInstruction* i : c.instructions()) {
    if (pred(i->opcode())) return true;
    for (const HloComputation* called : i->called_computations())
      if (Has(*called, pred)) return true;
  }
  return false;
}

bool IsSendRecv(HloOpcode op) {
  return op == HloOpcode::kSend || op == HloOpcode::kRecv || op == HloOpcode::kSendDone ||
         op == HloOpcode::kRecvDone;
}

bool Contains(const std::vector<HloInstruction*>& v, const HloInstruction* x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

StatusOr<bool> AsyncInliner::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    for (HloInstruction* start : c->MakeInstructionPostOrder()) {
      if (start->opcode() != HloOpcode::kAsyncStart || start->called_computations().size() != 1) continue;
      const HloComputation* wrapped = start->called_computations()[0];
      if (Has(*wrapped, IsSendRecv)) continue;
      if (!collectives_ && Has(*wrapped, IsCollectiveOpcode)) continue;
      // The chain start -> update* -> done, each link the only user of the one before.
      std::vector<HloInstruction*> chain = {start};
      bool linear = true;
      while (linear && chain.back()->opcode() != HloOpcode::kAsyncDone) {
        HloInstruction* link = chain.back();
        if (link->user_count() != 1) {
          linear = false;
          break;
        }
        HloInstruction* next = link->users()[0];
        if (next->opcode() != HloOpcode::kAsyncUpdate && next->opcode() != HloOpcode::kAsyncDone) {
          linear = false;
          break;
        }
        chain.push_back(next);
      }
      if (!linear) continue;
      HloInstruction* done = chain.back();
      const Shape& result = wrapped->root_instruction()->shape();
      if (!Shape::Compatible(done->shape(), result)) continue;
      KILN_ASSIGN_OR_RETURN(HloInstruction * root, InlineComputation(c, *wrapped, start->operands(), done->name()));
      // Control edges (Note [Async wrappers]).
      std::vector<HloInstruction*> preds, succs;
      for (HloInstruction* link : chain) {
        for (HloInstruction* p : link->control_predecessors())
          if (!Contains(chain, p) && !Contains(preds, p)) preds.push_back(p);
        for (HloInstruction* s : link->control_successors())
          if (!Contains(chain, s) && !Contains(succs, s)) succs.push_back(s);
      }
      std::vector<HloInstruction*> between;
      for (HloInstruction* s : start->control_successors())
        for (size_t k = 1; k < chain.size(); ++k)
          if (Contains(chain[k]->control_predecessors(), s) && !Contains(between, s)) between.push_back(s);
      for (HloInstruction* link : chain) link->DropAllControlDependencies();
      for (HloInstruction* p : preds)
        if (!Contains(between, p) && p != root) p->AddControlDependencyTo(root);
      for (HloInstruction* s : succs)
        if (!Contains(between, s) && s != root) root->AddControlDependencyTo(s);
      done->ReplaceAllUsesWith(root);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) KILN_RETURN_IF_ERROR(c->RemoveInstruction(*it));
      changed = true;
    }
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

}  // namespace kiln
