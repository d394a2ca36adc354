#include "kiln/passes/call_graph.h"

#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/hlo/clone.h"

namespace kiln {

bool CallsSequentially(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
      return true;
    default:
      return false;
  }
}

CallGraph::CallGraph(const HloModule& module) {
  // Strongest context first: a computation reached sequentially anywhere is sequential.
  auto rank = [](CallContext c) { return static_cast<int>(c); };
  std::vector<std::pair<const HloComputation*, CallContext>> work;
  if (module.entry_computation()) work.push_back({module.entry_computation(), CallContext::kSequential});
  while (!work.empty()) {
    auto [c, ctx] = work.back();
    work.pop_back();
    auto it = context_.find(c);
    if (it != context_.end() && rank(it->second) <= rank(ctx)) continue;
    context_[c] = ctx;
    for (const HloInstruction* i : c->instructions()) {
      for (const HloComputation* callee : i->called_computations()) {
        if (!callee) continue;
        CallContext sub;
        if (ctx != CallContext::kSequential) sub = CallContext::kEmbedded;
        else if (i->opcode() == HloOpcode::kFusion) sub = CallContext::kFused;
        else if (CallsSequentially(*i)) sub = CallContext::kSequential;
        else sub = CallContext::kEmbedded;
        // A fused computation's inner calls (reducers) are embedded.
        if (ctx == CallContext::kFused) sub = CallContext::kEmbedded;
        work.push_back({callee, sub});
      }
    }
  }
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    if (context(c) == CallContext::kSequential) sequential_.push_back(c);
    for (const HloInstruction* i : c->instructions())
      for (const HloComputation* callee : i->called_computations())
        if (callee) {
          auto& v = callers_[callee];
          if (v.empty() || v.back() != i) v.push_back(i);
        }
  }
}

CallContext CallGraph::context(const HloComputation* c) const {
  auto it = context_.find(c);
  return it == context_.end() ? CallContext::kUnreachable : it->second;
}

const std::vector<const HloInstruction*>& CallGraph::callers(const HloComputation* c) const {
  static const std::vector<const HloInstruction*> kNone;
  auto it = callers_.find(c);
  return it == callers_.end() ? kNone : it->second;
}

StatusOr<bool> FlattenCallGraph::Run(HloModule& module) {
  if (!module.entry_computation()) return false;
  bool changed = false;
  std::unordered_set<const HloComputation*> seen = {module.entry_computation()};
  // Depth-first over sequential call sites from the entry: the first site of a computation
  // keeps it, later ones get a clone (whose own callees are then seen again and cloned).
  std::vector<HloComputation*> work = {module.entry_computation()};
  while (!work.empty()) {
    HloComputation* c = work.back();
    work.pop_back();
    for (HloInstruction* i : c->instructions()) {
      if (!CallsSequentially(*i)) continue;
      for (int64_t k = 0; k < static_cast<int64_t>(i->called_computations().size()); ++k) {
        HloComputation* callee = i->called_computations()[k];
        if (!callee) continue;
        if (seen.insert(callee).second) {
          work.push_back(callee);
          continue;
        }
        std::string name;
        for (int64_t n = 1;; ++n) {
          name = StrCat(callee->name(), ".clone", n > 1 ? StrCat(n) : "");
          if (!module.GetComputationWithName(name)) break;
        }
        HloComputation* clone = module.AddComputation(CloneComputation(*callee, name));
        i->set_called_computation(k, clone);
        seen.insert(clone);
        work.push_back(clone);
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace kiln
