#include "kiln/passes/loop_invariant_code_motion.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/hlo/clone.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {
namespace {

constexpr int64_t kMaxMovedBytes = int64_t{1} << 30;

std::optional<int64_t> ParamElement(const HloInstruction* h, const HloComputation* c) {
  if (h->opcode() != HloOpcode::kGetTupleElement || c->num_parameters() != 1) return std::nullopt;
  if (h->operand(0) != c->parameter_instruction(0)) return std::nullopt;
  return h->attrs().tuple_index;
}

bool PassesThrough(const HloComputation* body, int64_t j) {
  const HloInstruction* root = body->root_instruction();
  if (j < 0 || j >= root->operand_count()) return false;
  return ParamElement(root->operand(j), body) == j;
}

bool HasToken(const Shape& s) {
  if (s.IsToken()) return true;
  if (s.IsTuple())
    for (const Shape& e : s.tuple_shapes())
      if (HasToken(e)) return true;
  return false;
}

// Ops that only rearrange or replicate data: never moved on their own (Note [Loop-invariant
// code motion]).
bool Cheap(const HloInstruction& i) {
  switch (i.opcode()) {
    case HloOpcode::kBroadcast: case HloOpcode::kIota: case HloOpcode::kReshape:
    case HloOpcode::kBitcast: case HloOpcode::kConstant: case HloOpcode::kGetTupleElement:
      return true;
    default:
      return false;
  }
}

bool Movable(const HloInstruction& i) {
  switch (i.opcode()) {
    case HloOpcode::kParameter: case HloOpcode::kTuple: case HloOpcode::kWhile:
    case HloOpcode::kConditional: case HloOpcode::kCall: case HloOpcode::kCustomCall:
    case HloOpcode::kFusion: case HloOpcode::kAfterAll: case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier: case HloOpcode::kDomain:
      return false;
    default:
      break;
  }
  if (IsAsyncOpcode(i.opcode()) || IsCollectiveOpcode(i.opcode()) || HasSideEffect(i)) return false;
  if (!i.control_predecessors().empty() || !i.control_successors().empty()) return false;
  if (HasToken(i.shape()) || i.shape().is_dynamic() || i.sharding()) return false;
  return true;
}

bool CalledOnlyBy(const HloModule& module, const HloComputation* callee, const HloInstruction* w) {
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions())
      if (i != w)
        for (const HloComputation* called : i->called_computations())
          if (called == callee) return false;
  return true;
}

class Mover {
 public:
  Mover(HloComputation* parent, HloInstruction* w) : parent_(parent), editor_(parent), w_(w), body_(w->while_body()) {}

  StatusOr<bool> Run() {
    FindInvariant();
    std::vector<HloInstruction*> roots;
    std::unordered_set<const HloInstruction*> visited;
    for (HloInstruction* i : order_) {
      if (!invariant_.count(i) || leaves_.count(i)) continue;
      bool read_outside = false;
      for (const HloInstruction* u : i->users()) read_outside |= !invariant_.count(u);
      if (read_outside) Select(i, visited, roots);
    }
    if (roots.empty()) return false;
    // Post order, so the new state elements follow the body's order.
    std::unordered_set<const HloInstruction*> chosen(roots.begin(), roots.end());
    roots.clear();
    for (HloInstruction* i : order_)
      if (chosen.count(i)) roots.push_back(i);
    return Move(roots);
  }

 private:
  void FindInvariant() {
    order_ = body_->MakeInstructionPostOrder();
    for (HloInstruction* i : order_) {
      if (std::optional<int64_t> j = ParamElement(i, body_); j && PassesThrough(body_, *j)) {
        invariant_.insert(i);
        leaves_.insert(i);
        continue;
      }
      if (i->operand_count() == 0) {
        if ((i->opcode() == HloOpcode::kConstant || i->opcode() == HloOpcode::kIota) && Movable(*i)) {
          invariant_.insert(i);
          leaves_.insert(i);
        }
        continue;
      }
      if (!Movable(*i)) continue;
      bool all = true;
      for (const HloInstruction* o : i->operands()) all &= invariant_.count(o) > 0;
      if (all) invariant_.insert(i);
    }
  }

  // Bytes of the distinct state elements and constants `i` is computed from.
  int64_t SourceBytes(const HloInstruction* i) {
    std::unordered_set<const HloInstruction*> seen;
    std::vector<const HloInstruction*> stack = {i};
    int64_t bytes = 0;
    while (!stack.empty()) {
      const HloInstruction* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      if (leaves_.count(x)) {
        if (x->opcode() != HloOpcode::kIota && x->shape().IsArray()) bytes += x->shape().byte_size();
        continue;
      }
      for (const HloInstruction* o : x->operands()) stack.push_back(o);
    }
    return bytes;
  }

  void Select(HloInstruction* b, std::unordered_set<const HloInstruction*>& visited,
              std::vector<HloInstruction*>& roots) {
    if (!visited.insert(b).second || leaves_.count(b)) return;
    bool keep_in_body = Cheap(*b) || !b->shape().IsArray();
    // A get-tuple-element of a moved multi-output op (a variadic reduce or sort) is the value
    // that moves; one of a pass-through element is a leaf (above).
    if (b->opcode() == HloOpcode::kGetTupleElement && b->shape().IsArray() && invariant_.count(b->operand(0)) &&
        !Cheap(*b->operand(0)))
      keep_in_body = false;
    if (!keep_in_body) {
      const int64_t bytes = b->shape().byte_size();
      keep_in_body = bytes > kMaxMovedBytes || bytes > SourceBytes(b);
    }
    if (!keep_in_body) {
      roots.push_back(b);
      return;
    }
    for (HloInstruction* o : b->operands())
      if (invariant_.count(o)) Select(o, visited, roots);
  }

  StatusOr<HloInstruction*> InitElement(int64_t j) {
    HloInstruction* init = w_->operand(0);
    if (init->opcode() == HloOpcode::kTuple) return init->operand(j);
    return editor_.GetTupleElement(init, j, w_);
  }

  // `i`'s value computed in the loop's computation.
  StatusOr<HloInstruction*> Outside(HloInstruction* i) {
    if (auto it = outside_.find(i); it != outside_.end()) return it->second;
    HloInstruction* result = nullptr;
    if (std::optional<int64_t> j = ParamElement(i, body_)) {
      KILN_ASSIGN_OR_RETURN(result, InitElement(*j));
    } else {
      std::vector<HloInstruction*> ops;
      for (HloInstruction* o : i->operands()) {
        KILN_ASSIGN_OR_RETURN(HloInstruction * x, Outside(o));
        ops.push_back(x);
      }
      result = editor_.Add(CloneInstruction(*i, i->shape(), ops, ""), i);
    }
    outside_[i] = result;
    return result;
  }

  StatusOr<bool> Move(const std::vector<HloInstruction*>& roots) {
    const Shape& old_state = w_->shape();
    const int64_t n = old_state.tuple_shapes_size();
    std::vector<HloInstruction*> init_elems;
    for (int64_t j = 0; j < n; ++j) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * e, InitElement(j));
      init_elems.push_back(e);
    }
    std::vector<Shape> elems = old_state.tuple_shapes();
    for (HloInstruction* r : roots) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * v, Outside(r));
      init_elems.push_back(v);
      elems.push_back(r->shape());
    }
    HloInstruction* new_init = editor_.Tuple(init_elems, w_->operand(0));
    const Shape new_state = Shape::Tuple(elems);
    w_->ReplaceOperand(0, new_init);
    w_->set_shape(new_state);
    w_->while_condition()->parameter_instruction(0)->set_shape(new_state);
    HloInstruction* param = body_->parameter_instruction(0);
    param->set_shape(new_state);
    HloEditor be(body_);
    HloInstruction* root = body_->root_instruction();
    for (size_t k = 0; k < roots.size(); ++k) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * g, be.GetTupleElement(param, n + static_cast<int64_t>(k), roots[k]));
      KILN_RETURN_IF_ERROR(ReplaceInstruction(roots[k], g));
      root->AppendOperand(g);
    }
    root->set_shape(new_state);
    KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*body_).status());
    return true;
  }

  HloComputation* parent_;
  HloEditor editor_;
  HloInstruction* w_;
  HloComputation* body_;
  std::vector<HloInstruction*> order_;
  std::unordered_set<const HloInstruction*> invariant_, leaves_;
  std::unordered_map<const HloInstruction*, HloInstruction*> outside_;
};

}  // namespace

StatusOr<bool> LoopInvariantCodeMotion::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.MakeComputationPostOrder()) {
    bool moved = false;
    for (HloInstruction* w : comp->MakeInstructionPostOrder()) {
      if (w->opcode() != HloOpcode::kWhile || w->operand_count() != 1 || w->called_computations().size() != 2 ||
          !w->shape().IsTuple() || w->IsRoot() || w->sharding() || !w->control_predecessors().empty() ||
          !w->control_successors().empty())
        continue;
      bool gte_users = true;
      for (const HloInstruction* u : w->users()) gte_users &= u->opcode() == HloOpcode::kGetTupleElement;
      HloComputation* body = w->while_body();
      HloComputation* cond = w->while_condition();
      if (!gte_users || body->num_parameters() != 1 || cond->num_parameters() != 1 || body == cond ||
          body->root_instruction()->opcode() != HloOpcode::kTuple ||
          body->root_instruction()->operand_count() != w->shape().tuple_shapes_size() ||
          !CalledOnlyBy(module, body, w) || !CalledOnlyBy(module, cond, w))
        continue;
      Mover mover(comp, w);
      KILN_ASSIGN_OR_RETURN(bool m, mover.Run());
      moved |= m;
    }
    if (moved) {
      KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*comp).status());
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln
