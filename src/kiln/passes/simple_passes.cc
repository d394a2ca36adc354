#include "kiln/passes/simple_passes.h"

#include <unordered_map>
#include <unordered_set>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/clone.h"

namespace kiln {

bool HasSideEffect(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kSend: case HloOpcode::kSendDone: case HloOpcode::kRecv:
    case HloOpcode::kRecvDone: case HloOpcode::kInfeed: case HloOpcode::kOutfeed:
    case HloOpcode::kRng: case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kAllReduceStart: case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllGatherStart: case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteStart: case HloOpcode::kCollectivePermuteDone:
    case HloOpcode::kAsyncStart: case HloOpcode::kAsyncUpdate: case HloOpcode::kAsyncDone:
      return true;
    case HloOpcode::kCustomCall:
      return instr.attrs().custom_call_has_side_effect;
    default:
      break;
  }
  if (IsCollectiveOpcode(instr.opcode())) return true;
  return !instr.control_successors().empty();
}

StatusOr<bool> DeadCodeElimination::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    // Walk in reverse post order so users go before their operands.
    std::vector<HloInstruction*> order = c->MakeInstructionPostOrder();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      HloInstruction* instr = *it;
      if (instr == c->root_instruction() || instr->user_count() > 0) continue;
      if (instr->opcode() == HloOpcode::kParameter || HasSideEffect(*instr)) continue;
      if (!instr->control_predecessors().empty()) continue;
      KILN_RETURN_IF_ERROR(c->RemoveInstruction(instr));
      changed = true;
    }
  }
  size_t before = module.computations().size();
  module.RemoveUnreachableComputations();
  return changed || module.computations().size() != before;
}

namespace {

bool SameValue(const HloInstruction& a, const HloInstruction& b) {
  if (a.opcode() != b.opcode() || a.operands() != b.operands() ||
      a.called_computations() != b.called_computations() || !(a.shape() == b.shape()))
    return false;
  if (a.opcode() == HloOpcode::kConstant) {
    if (a.has_literal() != b.has_literal() || a.literal_elided() || b.literal_elided()) return false;
    if (a.has_literal() && !a.literal().BitwiseEquals(b.literal())) return false;
  }
  return a.attrs() == b.attrs() && a.backend_config() == b.backend_config();
}

size_t ValueHash(const HloInstruction& instr) {
  size_t h = std::hash<int>()(static_cast<int>(instr.opcode()));
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (HloInstruction* op : instr.operands()) mix(std::hash<const void*>()(op));
  for (int64_t d : instr.shape().dimensions()) mix(std::hash<int64_t>()(d));
  if (instr.opcode() == HloOpcode::kConstant && instr.has_literal() && instr.literal().shape().IsArray()) {
    const Literal& l = instr.literal();
    size_t n = std::min<size_t>(l.size_bytes(), 64);
    mix(std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char*>(l.untyped_data()), n)));
  }
  return h;
}

}  // namespace

StatusOr<bool> CommonSubexpressionElimination::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations()) {
    std::unordered_multimap<size_t, HloInstruction*> seen;
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (instr->opcode() == HloOpcode::kParameter || HasSideEffect(*instr)) continue;
      if (!instr->control_predecessors().empty()) continue;
      size_t h = ValueHash(*instr);
      HloInstruction* match = nullptr;
      auto range = seen.equal_range(h);
      for (auto it = range.first; it != range.second; ++it) {
        if (SameValue(*it->second, *instr)) {
          match = it->second;
          break;
        }
      }
      if (!match) {
        seen.emplace(h, instr);
        continue;
      }
      instr->ReplaceAllUsesWith(match);
      changed = true;
    }
    // Remove what became dead.
    std::vector<HloInstruction*> order = c->MakeInstructionPostOrder();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      HloInstruction* instr = *it;
      if (instr != c->root_instruction() && instr->user_count() == 0 &&
          instr->opcode() != HloOpcode::kParameter && !HasSideEffect(*instr) &&
          instr->control_predecessors().empty()) {
        KILN_RETURN_IF_ERROR(c->RemoveInstruction(instr));
      }
    }
  }
  return changed;
}

StatusOr<bool> TupleSimplifier::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations()) {
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (instr->opcode() == HloOpcode::kGetTupleElement) {
        HloInstruction* t = instr->operand(0);
        if (t->opcode() == HloOpcode::kTuple) {
          int64_t i = instr->attrs().tuple_index;
          if (i >= 0 && i < t->operand_count() && t->operand(i)->shape() == instr->shape()) {
            instr->ReplaceAllUsesWith(t->operand(i));
            changed = true;
          }
        }
      } else if (instr->opcode() == HloOpcode::kTuple && instr->operand_count() > 0) {
        HloInstruction* source = nullptr;
        bool ok = true;
        for (int64_t i = 0; i < instr->operand_count() && ok; ++i) {
          HloInstruction* op = instr->operand(i);
          if (op->opcode() != HloOpcode::kGetTupleElement || op->attrs().tuple_index != i) {
            ok = false;
          } else if (source == nullptr) {
            source = op->operand(0);
          } else if (source != op->operand(0)) {
            ok = false;
          }
        }
        if (ok && source && source->shape().IsTuple() &&
            source->shape().tuple_shapes_size() == instr->operand_count() &&
            source->shape() == instr->shape()) {
          instr->ReplaceAllUsesWith(source);
          changed = true;
        }
      }
    }
  }
  if (changed) {
    DeadCodeElimination dce;
    KILN_RETURN_IF_ERROR(dce.Run(module).status());
  }
  return changed;
}

StatusOr<HloInstruction*> InlineComputation(HloComputation* into, const HloComputation& callee,
                                            std::span<HloInstruction* const> operands,
                                            std::string_view suffix) {
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  std::vector<HloInstruction*> ops;
  for (HloInstruction* instr : callee.MakeInstructionPostOrder()) {
    if (instr->opcode() == HloOpcode::kParameter) {
      if (instr->parameter_number() < 0 || instr->parameter_number() >= static_cast<int64_t>(operands.size()))
        return InvalidArgument("inlining ", callee.name(), ": parameter ", instr->parameter_number(), " of ",
                               operands.size(), " operands");
      map[instr] = operands[instr->parameter_number()];
      continue;
    }
    ops.clear();
    for (HloInstruction* op : instr->operands()) ops.push_back(map.at(op));
    auto clone = CloneInstruction(*instr, instr->shape(), ops, StrCat(instr->name(), ".", suffix));
    map[instr] = into->AddInstruction(std::move(clone));
  }
  for (HloInstruction* instr : callee.instructions())
    for (HloInstruction* succ : instr->control_successors())
      if (map.count(instr) && map.count(succ) && instr->opcode() != HloOpcode::kParameter &&
          succ->opcode() != HloOpcode::kParameter)
        map.at(instr)->AddControlDependencyTo(map.at(succ));
  return map.at(callee.root_instruction());
}

StatusOr<bool> CallInliner::Run(HloModule& module) {
  bool changed = false;
  // Callers after callees: inlining a callee that itself had calls already inlined.
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    for (HloInstruction* call : c->MakeInstructionPostOrder()) {
      if (call->opcode() != HloOpcode::kCall || !call->to_apply()) continue;
      if (!call->control_predecessors().empty() || !call->control_successors().empty()) continue;
      const HloComputation* callee = call->to_apply();
      KILN_ASSIGN_OR_RETURN(HloInstruction * root, InlineComputation(c, *callee, call->operands(), call->name()));
      call->ReplaceAllUsesWith(root);
      KILN_RETURN_IF_ERROR(c->RemoveInstruction(call));
      changed = true;
    }
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

}  // namespace kiln
