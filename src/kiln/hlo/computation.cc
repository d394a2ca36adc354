#include "kiln/hlo/computation.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/hlo/module.h"

namespace kiln {

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instr) {
  HloInstruction* raw = instr.get();
  raw->set_parent(this);
  if (parent_ && raw->unique_id() < 0) raw->set_unique_id(parent_->NextUniqueId());
  if (raw->opcode() == HloOpcode::kParameter) {
    int64_t n = raw->parameter_number();
    // Parameter numbers beyond any real signature are left unregistered (the verifier reports
    // the gap) rather than allocating a huge table.
    if (n >= 0 && n < (int64_t{1} << 20)) {
      if (static_cast<int64_t>(parameters_.size()) <= n) parameters_.resize(n + 1, nullptr);
      parameters_[n] = raw;
    }
  }
  instructions_.push_back(std::move(instr));
  return raw;
}

Status HloComputation::RemoveInstruction(HloInstruction* instr) {
  if (instr == root_) return FailedPrecondition("cannot remove the root instruction ", instr->name());
  if (instr->user_count() > 0)
    return FailedPrecondition("cannot remove ", instr->name(), ": it still has users");
  if (instr->opcode() == HloOpcode::kParameter)
    return FailedPrecondition("cannot remove parameter ", instr->name());
  instr->DropAllControlDependencies();
  auto it = std::find_if(instructions_.begin(), instructions_.end(),
                         [&](const auto& p) { return p.get() == instr; });
  if (it == instructions_.end()) return NotFound(instr->name(), " is not in computation ", name_);
  instr->DetachFromOperands();
  instructions_.erase(it);
  return OkStatus();
}

std::vector<HloInstruction*> HloComputation::instructions() const {
  std::vector<HloInstruction*> out;
  out.reserve(instructions_.size());
  for (const auto& i : instructions_) out.push_back(i.get());
  return out;
}

std::vector<HloInstruction*> HloComputation::MakeInstructionPostOrder() const {
  std::vector<HloInstruction*> order;
  order.reserve(instructions_.size());
  std::unordered_map<const HloInstruction*, int> state;  // 1 = visiting, 2 = done
  std::vector<std::pair<HloInstruction*, size_t>> stack;
  auto deps = [](HloInstruction* h, size_t i) -> HloInstruction* {
    size_t n = h->operands().size();
    if (i < n) return h->operand(static_cast<int64_t>(i));
    return h->control_predecessors()[i - n];
  };
  for (const auto& root_ptr : instructions_) {
    HloInstruction* root = root_ptr.get();
    if (state[root] == 2) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [h, i] = stack.back();
      size_t total = h->operands().size() + h->control_predecessors().size();
      if (i < total) {
        HloInstruction* d = deps(h, i++);
        int& st = state[d];
        if (st == 0) {
          st = 1;
          stack.push_back({d, 0});
        }
      } else {
        state[h] = 2;
        order.push_back(h);
        stack.pop_back();
      }
    }
  }
  return order;
}

bool HloComputation::IsEntryComputation() const {
  return parent_ && parent_->entry_computation() == this;
}

HloInstruction* HloComputation::GetInstructionWithName(std::string_view name) const {
  for (const auto& i : instructions_)
    if (i->name() == name) return i.get();
  return nullptr;
}

ProgramShape HloComputation::ComputeProgramShape() const {
  ProgramShape ps;
  for (HloInstruction* p : parameters_) {
    ps.parameters.push_back(p ? p->shape() : Shape());
    ps.parameter_names.push_back(p ? p->name() : "");
  }
  if (root_) ps.result = root_->shape();
  return ps;
}

}  // namespace kiln
