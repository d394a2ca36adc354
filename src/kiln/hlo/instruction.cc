#include "kiln/hlo/instruction.h"

#include <algorithm>

#include "kiln/hlo/computation.h"

namespace kiln {

HloInstruction::HloInstruction(HloOpcode opcode, Shape shape, std::string name)
    : opcode_(opcode), shape_(std::move(shape)), name_(std::move(name)) {}

void HloInstruction::AppendOperand(HloInstruction* operand) {
  operands_.push_back(operand);
  if (std::find(operand->users_.begin(), operand->users_.end(), this) == operand->users_.end())
    operand->users_.push_back(this);
}

void HloInstruction::RemoveUser(HloInstruction* user) {
  // Only drop the user edge when no operand slot still refers to us.
  if (std::find(user->operands_.begin(), user->operands_.end(), this) != user->operands_.end())
    return;
  users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
}

void HloInstruction::ReplaceOperand(int64_t i, HloInstruction* new_operand) {
  HloInstruction* old = operands_[i];
  operands_[i] = new_operand;
  if (old != new_operand) {
    old->RemoveUser(this);
    if (std::find(new_operand->users_.begin(), new_operand->users_.end(), this) ==
        new_operand->users_.end())
      new_operand->users_.push_back(this);
  }
}

void HloInstruction::ReplaceAllUsesWith(HloInstruction* other) {
  std::vector<HloInstruction*> users = users_;
  for (HloInstruction* user : users) {
    for (int64_t i = 0; i < user->operand_count(); ++i)
      if (user->operands_[i] == this) user->ReplaceOperand(i, other);
  }
  if (parent_ && parent_->root_instruction() == this) parent_->set_root_instruction(other);
}

void HloInstruction::DetachFromOperands() {
  std::vector<HloInstruction*> ops = std::move(operands_);
  operands_.clear();
  for (HloInstruction* op : ops)
    op->users_.erase(std::remove(op->users_.begin(), op->users_.end(), this), op->users_.end());
}

void HloInstruction::AddControlDependencyTo(HloInstruction* successor) {
  if (std::find(control_succs_.begin(), control_succs_.end(), successor) != control_succs_.end())
    return;
  control_succs_.push_back(successor);
  successor->control_preds_.push_back(this);
}

void HloInstruction::DropAllControlDependencies() {
  for (HloInstruction* s : control_succs_) {
    auto& p = s->control_preds_;
    p.erase(std::remove(p.begin(), p.end(), this), p.end());
  }
  for (HloInstruction* p : control_preds_) {
    auto& s = p->control_succs_;
    s.erase(std::remove(s.begin(), s.end(), this), s.end());
  }
  control_succs_.clear();
  control_preds_.clear();
}

bool HloInstruction::IsRoot() const { return parent_ && parent_->root_instruction() == this; }

}  // namespace kiln
