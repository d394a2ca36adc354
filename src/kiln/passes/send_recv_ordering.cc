#include "kiln/passes/send_recv_ordering.h"

#include <unordered_set>
#include <vector>

#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

// Whether `to` is reachable from `from` through users and control successors.
bool Reaches(const HloInstruction* from, const HloInstruction* to) {
  std::vector<const HloInstruction*> stack = {from};
  std::unordered_set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (i == to) return true;
    if (!seen.insert(i).second) continue;
    for (const HloInstruction* u : i->users()) stack.push_back(u);
    for (const HloInstruction* s : i->control_successors()) stack.push_back(s);
  }
  return false;
}

// Adds before -> after unless either already reaches the other.
bool Order(HloInstruction* before, HloInstruction* after) {
  if (Reaches(before, after) || Reaches(after, before)) return false;
  before->AddControlDependencyTo(after);
  return true;
}

}  // namespace

StatusOr<bool> OrderSendsBeforeRecvDones(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations()) {
    std::vector<HloInstruction*> sends, send_dones, recv_dones;
    for (HloInstruction* i : c->instructions()) {
      if (i->attrs().is_host_transfer) continue;
      if (i->opcode() == HloOpcode::kSend) sends.push_back(i);
      if (i->opcode() == HloOpcode::kSendDone) send_dones.push_back(i);
      if (i->opcode() == HloOpcode::kRecvDone) recv_dones.push_back(i);
    }
    for (HloInstruction* r : recv_dones) {
      for (HloInstruction* s : sends)
        if (s->attrs().channel_id == r->attrs().channel_id) changed |= Order(s, r);
      for (HloInstruction* d : send_dones)
        if (d->attrs().channel_id == r->attrs().channel_id) changed |= Order(r, d);
    }
  }
  return changed;
}

}  // namespace kiln
