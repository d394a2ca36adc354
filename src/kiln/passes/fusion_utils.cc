#include "kiln/passes/fusion_utils.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/hlo/clone.h"

namespace kiln {

bool IsFusion(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kFusion && !instr.called_computations().empty() &&
         instr.fused_computation() != nullptr &&
         instr.fused_computation()->root_instruction() != nullptr;
}

bool IsMultiOutputFusion(const HloInstruction& instr) {
  return IsFusion(instr) &&
         instr.fused_computation()->root_instruction()->opcode() == HloOpcode::kTuple;
}

const HloInstruction* FusedRoot(const HloInstruction& fusion) {
  return IsFusion(fusion) ? fusion.fused_computation()->root_instruction() : nullptr;
}

int64_t FusedInstructionCount(const HloInstruction& instr) {
  if (!IsFusion(instr)) return 1;
  int64_t n = 0;
  for (const HloInstruction* i : instr.fused_computation()->instructions())
    if (i->opcode() != HloOpcode::kParameter && i->opcode() != HloOpcode::kTuple) ++n;
  return n;
}

const HloInstruction* FusedParameter(const HloInstruction& fusion, int64_t operand_index) {
  if (!IsFusion(fusion)) return nullptr;
  const HloComputation* c = fusion.fused_computation();
  if (operand_index < 0 || operand_index >= c->num_parameters()) return nullptr;
  return c->parameter_instruction(operand_index);
}

std::string UniqueInstructionName(const HloComputation& computation, std::string_view base) {
  std::string name(base);
  for (int64_t i = 1; computation.GetInstructionWithName(name) != nullptr; ++i)
    name = StrCat(base, ".", i);
  return name;
}

std::string UniqueComputationName(const HloModule& module, std::string_view base) {
  std::string name(base);
  // Start numbering near the module's size: fusion passes create many computations.
  for (int64_t i = static_cast<int64_t>(module.computations().size());
       module.GetComputationWithName(name) != nullptr; ++i)
    name = StrCat(base, ".", i);
  return name;
}

namespace {

using InstrSet = std::unordered_set<const HloInstruction*>;

// Members in def-before-use order (a post order restricted to the set).
std::vector<HloInstruction*> TopologicalOrder(const std::vector<HloInstruction*>& members,
                                              const InstrSet& in_set) {
  std::vector<HloInstruction*> order;
  std::unordered_map<const HloInstruction*, int> state;
  std::vector<std::pair<HloInstruction*, int64_t>> stack;
  for (HloInstruction* m : members) {
    if (state[m] != 0) continue;
    stack.push_back({m, 0});
    state[m] = 1;
    while (!stack.empty()) {
      auto& [h, i] = stack.back();
      if (i < h->operand_count()) {
        HloInstruction* op = h->operand(i++);
        if (in_set.count(op) && state[op] == 0) {
          state[op] = 1;
          stack.push_back({op, 0});
        }
      } else {
        order.push_back(h);
        stack.pop_back();
      }
    }
  }
  return order;
}

// Names unique within one computation being built.
class NameSet {
 public:
  std::string Take(const std::string& base) {
    std::string name = base;
    for (int64_t i = 1; !used_.insert(name).second; ++i) name = StrCat(base, ".", i);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

// One value the fusion hands out: the whole value of `member` (index -1) or output `index`
// of a multi-output member fusion.
struct Export {
  HloInstruction* member;
  int64_t index;
  std::vector<HloInstruction*> users;  // outside users (index -1) or get-tuple-elements (>= 0)
  bool is_root = false;
};

}  // namespace

bool FusionWouldCreateCycle(std::span<HloInstruction* const> members,
                            std::span<HloInstruction* const> duplicated) {
  InstrSet in_set(members.begin(), members.end());
  InstrSet dup(duplicated.begin(), duplicated.end());
  // Nodes outside the set that depend on the fusion: users of members whose original values
  // come from the fusion (non-duplicated members, and duplicated ones that read such a value:
  // a duplicated member reading only duplicated members stays outside on the originals).
  std::unordered_map<const HloInstruction*, bool> from_fusion;
  std::function<bool(HloInstruction*)> depends = [&](HloInstruction* m) -> bool {
    if (!dup.count(m)) return true;
    auto it = from_fusion.find(m);
    if (it != from_fusion.end()) return it->second;
    from_fusion[m] = false;
    bool d = false;
    for (HloInstruction* op : m->operands()) d = d || (in_set.count(op) > 0 && depends(op));
    return from_fusion[m] = d;
  };
  std::vector<HloInstruction*> work;
  InstrSet seen;
  for (HloInstruction* m : members) {
    if (!depends(m)) continue;
    for (HloInstruction* u : m->users())
      if (!in_set.count(u) && seen.insert(u).second) work.push_back(u);
  }
  // If any of them feeds a member, the fusion would read a value that depends on itself.
  while (!work.empty()) {
    HloInstruction* x = work.back();
    work.pop_back();
    for (HloInstruction* u : x->users()) {
      if (in_set.count(u)) return true;
      if (seen.insert(u).second) work.push_back(u);
    }
  }
  return false;
}

StatusOr<HloInstruction*> FuseInstructions(const FuseSpec& spec) {
  if (spec.members.empty()) return InvalidArgument("FuseInstructions: no members");
  HloComputation* parent = spec.members[0]->parent();
  if (!parent || !parent->parent())
    return FailedPrecondition("FuseInstructions: ", spec.members[0]->name(),
                              " is not in a module's computation");
  HloModule* module = parent->parent();
  InstrSet in_set, dup(spec.duplicated.begin(), spec.duplicated.end());
  for (HloInstruction* m : spec.members) {
    if (m->parent() != parent)
      return FailedPrecondition("cannot fuse ", m->name(), ": members of one fusion must share a computation");
    if (m->opcode() == HloOpcode::kParameter)
      return FailedPrecondition("cannot fuse parameter ", m->name());
    if (!m->control_predecessors().empty() || !m->control_successors().empty())
      return FailedPrecondition("cannot fuse ", m->name(), ": it has control dependencies");
    if (m->opcode() == HloOpcode::kFusion && !IsFusion(*m))
      return FailedPrecondition("cannot fuse ", m->name(), ": fusion without a fused computation");
    if (!in_set.insert(m).second)
      return InvalidArgument("FuseInstructions: ", m->name(), " listed twice");
  }
  for (const HloInstruction* d : dup) {
    if (!in_set.count(d)) return InvalidArgument("duplicated ", d->name(), " is not a member");
    if (IsMultiOutputFusion(*d))
      return FailedPrecondition("cannot duplicate multi-output fusion ", d->name());
  }
  if (spec.reuse && (!in_set.count(spec.reuse) || !IsFusion(*spec.reuse) || dup.count(spec.reuse)))
    return InvalidArgument("FuseInstructions: reuse must be a non-duplicated member fusion");

  std::vector<HloInstruction*> order = TopologicalOrder(spec.members, in_set);

  // Outputs: values of non-duplicated members still needed by instructions that stay outside
  // (duplicated members stay outside too).
  auto outside = [&](const HloInstruction* u) { return !in_set.count(u) || dup.count(u); };
  std::vector<Export> exports;
  for (HloInstruction* m : order) {
    if (dup.count(m)) continue;
    std::vector<HloInstruction*> users;
    for (HloInstruction* u : m->users())
      if (outside(u)) users.push_back(u);
    bool is_root = parent->root_instruction() == m;
    if (users.empty() && !is_root) continue;
    bool all_gte = !is_root && IsMultiOutputFusion(*m) &&
                   std::all_of(users.begin(), users.end(), [](const HloInstruction* u) {
                     return u->opcode() == HloOpcode::kGetTupleElement;
                   });
    if (all_gte) {
      std::vector<int64_t> indices;
      for (HloInstruction* u : users) indices.push_back(u->attrs().tuple_index);
      std::sort(indices.begin(), indices.end());
      indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
      for (int64_t i : indices) {
        Export e{m, i, {}, false};
        for (HloInstruction* u : users)
          if (u->attrs().tuple_index == i) e.users.push_back(u);
        exports.push_back(std::move(e));
      }
    } else {
      exports.push_back(Export{m, -1, std::move(users), is_root});
    }
  }
  // Dead code: the fusion computes the last member (and stays unused, like the members).
  if (exports.empty()) {
    HloInstruction* last = nullptr;
    for (HloInstruction* m : order)
      if (!dup.count(m)) last = m;
    if (!last) return FailedPrecondition("FuseInstructions: every member is duplicated");
    exports.push_back(Export{last, -1, {}, false});
  }

  // Build the fused computation.
  auto fused = std::make_unique<HloComputation>(
      UniqueComputationName(*module, "fused_computation"));
  HloComputation* c = fused.get();
  NameSet names;
  std::unordered_map<const HloInstruction*, HloInstruction*> map;  // member -> value in c
  std::unordered_map<const HloInstruction*, HloInstruction*> params;  // outside value -> param
  std::vector<HloInstruction*> fusion_operands;
  auto value_of = [&](HloInstruction* op) -> HloInstruction* {
    if (in_set.count(op)) return map.at(op);
    auto it = params.find(op);
    if (it != params.end()) return it->second;
    int64_t n = static_cast<int64_t>(fusion_operands.size());
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, op->shape(),
                                              names.Take(StrCat("param_", n)));
    p->set_parameter_number(n);
    HloInstruction* raw = c->AddInstruction(std::move(p));
    params[op] = raw;
    fusion_operands.push_back(op);
    return raw;
  };
  // Clones `x` with the given operands into c; a get-tuple-element of a tuple built in c is
  // forwarded to the tuple's operand instead.
  auto clone_into = [&](const HloInstruction& x, std::vector<HloInstruction*> ops) {
    if (x.opcode() == HloOpcode::kGetTupleElement && ops.size() == 1 &&
        ops[0]->opcode() == HloOpcode::kTuple && ops[0]->parent() == c) {
      int64_t i = x.attrs().tuple_index;
      if (i >= 0 && i < ops[0]->operand_count()) return ops[0]->operand(i);
    }
    return c->AddInstruction(CloneInstruction(x, x.shape(), ops, names.Take(x.name())));
  };
  // A reused fusion keeps its parameter numbering for the operands it keeps.
  if (spec.reuse)
    for (HloInstruction* op : spec.reuse->operands())
      if (!in_set.count(op)) value_of(op);
  for (HloInstruction* m : order) {
    if (IsFusion(*m)) {
      // Inline the member fusion: its parameters are its operands' values.
      const HloComputation* inner = m->fused_computation();
      std::unordered_map<const HloInstruction*, HloInstruction*> inner_map;
      for (HloInstruction* x : inner->MakeInstructionPostOrder()) {
        if (x->opcode() == HloOpcode::kParameter) continue;
        std::vector<HloInstruction*> ops;
        for (HloInstruction* op : x->operands()) {
          if (op->opcode() == HloOpcode::kParameter && op->parent() == inner)
            ops.push_back(value_of(m->operand(op->parameter_number())));
          else
            ops.push_back(inner_map.at(op));
        }
        inner_map[x] = clone_into(*x, std::move(ops));
      }
      const HloInstruction* r = inner->root_instruction();
      map[m] = r->opcode() == HloOpcode::kParameter ? value_of(m->operand(r->parameter_number()))
                                                    : inner_map.at(r);
    } else {
      std::vector<HloInstruction*> ops;
      for (HloInstruction* op : m->operands()) ops.push_back(value_of(op));
      map[m] = clone_into(*m, std::move(ops));
    }
  }
  std::vector<HloInstruction*> outputs;
  for (const Export& e : exports) {
    HloInstruction* v = map.at(e.member);
    if (e.index >= 0) {
      if (v->opcode() != HloOpcode::kTuple || e.index >= v->operand_count())
        return Internal("FuseInstructions: output ", e.index, " of ", e.member->name(),
                        " is not a tuple element");
      v = v->operand(e.index);
    }
    outputs.push_back(v);
  }
  HloInstruction* root = outputs[0];
  if (outputs.size() > 1) {
    std::vector<Shape> shapes;
    for (HloInstruction* o : outputs) shapes.push_back(o->shape());
    auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(std::move(shapes)),
                                              names.Take("tuple"));
    for (HloInstruction* o : outputs) t->AppendOperand(o);
    root = c->AddInstruction(std::move(t));
  }
  c->set_root_instruction(root);

  // The fusion instruction.
  HloInstruction* fusion = spec.reuse;
  std::vector<HloInstruction*> old_reuse_users;
  if (fusion) {
    old_reuse_users = fusion->users();
    fusion->DetachFromOperands();
    for (HloInstruction* op : fusion_operands) fusion->AppendOperand(op);
    fusion->set_shape(root->shape());
    fusion->attrs().fusion_kind = spec.kind;
    module->AddComputation(std::move(fused));
    fusion->set_called_computation(0, c);
  } else {
    auto f = std::make_unique<HloInstruction>(
        HloOpcode::kFusion, root->shape(),
        UniqueInstructionName(*parent, spec.name.empty() ? "fusion" : spec.name));
    f->attrs().fusion_kind = spec.kind;
    for (HloInstruction* op : fusion_operands) f->AppendOperand(op);
    // Metadata of the last exported member (the fusion's "main" instruction).
    f->metadata() = exports.back().member->metadata();
    module->AddComputation(std::move(fused));
    f->AppendCalledComputation(c);
    fusion = parent->AddInstruction(std::move(f));
  }

  // Rewire the outside users.
  auto redirect = [&](HloInstruction* user, HloInstruction* from, HloInstruction* to) {
    for (int64_t i = 0; i < user->operand_count(); ++i)
      if (user->operand(i) == from) user->ReplaceOperand(i, to);
  };
  std::vector<HloInstruction*> dead_gtes;
  const bool multi = exports.size() > 1;
  for (int64_t k = 0; k < static_cast<int64_t>(exports.size()); ++k) {
    const Export& e = exports[k];
    if (e.index >= 0) {
      for (HloInstruction* g : e.users) {
        if (!multi) {
          g->ReplaceAllUsesWith(fusion);
          dead_gtes.push_back(g);
        } else {
          if (g->operand(0) != fusion) g->ReplaceOperand(0, fusion);
          g->attrs().tuple_index = k;
        }
      }
      continue;
    }
    HloInstruction* value = fusion;
    if (multi) {
      auto g = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement, outputs[k]->shape(),
                                                UniqueInstructionName(*parent, "get-tuple-element"));
      g->attrs().tuple_index = k;
      g->AppendOperand(fusion);
      value = parent->AddInstruction(std::move(g));
    }
    if (e.member == fusion) {
      // The reused fusion's own users: move them onto the output (multi) or leave them.
      if (multi)
        for (HloInstruction* u : old_reuse_users)
          if (outside(u)) redirect(u, fusion, value);
    } else {
      for (HloInstruction* u : e.users) redirect(u, e.member, value);
    }
    if (e.is_root) parent->set_root_instruction(value);
  }

  // Remove what was fused: forwarded get-tuple-elements first, then members (users before
  // operands).
  for (HloInstruction* g : dead_gtes) {
    if (g->user_count() != 0 || g->IsRoot()) continue;
    KILN_RETURN_IF_ERROR(parent->RemoveInstruction(g));
    if (spec.removed) spec.removed->push_back(g);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* m = *it;
    if (m == fusion || dup.count(m)) continue;
    KILN_RETURN_IF_ERROR(parent->RemoveInstruction(m).WithContext("FuseInstructions"));
    if (spec.removed) spec.removed->push_back(m);
  }
  return fusion;
}

StatusOr<HloInstruction*> CreateFusion(HloInstruction* instr, FusionKind kind,
                                       std::vector<const HloInstruction*>* removed) {
  FuseSpec spec;
  spec.removed = removed;
  spec.members = {instr};
  spec.kind = kind;
  return FuseInstructions(spec);
}

namespace {

Status CheckProducerOfFusion(const HloInstruction* producer, const HloInstruction* fusion) {
  if (!IsFusion(*fusion)) return FailedPrecondition(fusion->name(), " is not a fusion");
  if (producer->parent() != fusion->parent())
    return FailedPrecondition(producer->name(), " and ", fusion->name(), " are in different computations");
  const auto& ops = fusion->operands();
  if (std::find(ops.begin(), ops.end(), producer) == ops.end())
    return FailedPrecondition(producer->name(), " is not an operand of ", fusion->name());
  return OkStatus();
}

}  // namespace

StatusOr<HloInstruction*> FuseInstructionIntoFusion(HloInstruction* producer, HloInstruction* fusion,
                                                    std::optional<FusionKind> kind,
                                                    std::vector<const HloInstruction*>* removed) {
  KILN_RETURN_IF_ERROR(CheckProducerOfFusion(producer, fusion));
  if (IsMultiOutputFusion(*producer))
    return FailedPrecondition("cannot duplicate or inline multi-output fusion ", producer->name(),
                              " into ", fusion->name());
  FuseSpec spec;
  spec.removed = removed;
  spec.members = {producer, fusion};
  spec.kind = kind.value_or(fusion->attrs().fusion_kind);
  spec.reuse = fusion;
  bool other_users = producer->IsRoot();
  for (HloInstruction* u : producer->users()) other_users |= u != fusion;
  if (other_users) spec.duplicated = {producer};
  return FuseInstructions(spec);
}

StatusOr<HloInstruction*> FuseInstructionIntoMultiOutputFusion(HloInstruction* producer,
                                                               HloInstruction* fusion,
                                                               std::optional<FusionKind> kind,
                                                               std::vector<const HloInstruction*>* removed) {
  KILN_RETURN_IF_ERROR(CheckProducerOfFusion(producer, fusion));
  FuseSpec spec;
  spec.removed = removed;
  spec.members = {producer, fusion};
  if (FusionWouldCreateCycle(spec.members))
    return FailedPrecondition("fusing ", producer->name(), " into ", fusion->name(),
                              " as a multi-output fusion would create a cycle");
  spec.kind = kind.value_or(fusion->attrs().fusion_kind);
  spec.reuse = fusion;
  return FuseInstructions(spec);
}

StatusOr<HloInstruction*> MergeSiblingFusions(HloInstruction* a, HloInstruction* b,
                                              std::optional<FusionKind> kind,
                                              std::vector<const HloInstruction*>* removed) {
  if (a == b) return InvalidArgument("MergeSiblingFusions: same instruction");
  if (a->parent() != b->parent())
    return FailedPrecondition(a->name(), " and ", b->name(), " are in different computations");
  auto reads = [](const HloInstruction* user, const HloInstruction* x) {
    return std::find(user->operands().begin(), user->operands().end(), x) != user->operands().end();
  };
  if (reads(a, b) || reads(b, a))
    return FailedPrecondition(a->name(), " and ", b->name(), " are not siblings: one reads the other");
  FuseSpec spec;
  spec.removed = removed;
  spec.members = {a, b};
  if (FusionWouldCreateCycle(spec.members))
    return FailedPrecondition("merging ", a->name(), " and ", b->name(), " would create a cycle");
  spec.reuse = IsFusion(*a) ? a : (IsFusion(*b) ? b : nullptr);
  spec.kind = kind.value_or(spec.reuse ? spec.reuse->attrs().fusion_kind : FusionKind::kLoop);
  return FuseInstructions(spec);
}

Status Unfuse(HloInstruction* fusion) {
  if (!IsFusion(*fusion)) return FailedPrecondition(fusion->name(), " is not a fusion");
  HloComputation* parent = fusion->parent();
  // Control dependencies carry over to every instruction of the body: what had to run before
  // the fusion runs before each of them, what had to run after it after each (XLA's scheduled
  // modules order loop bodies this way).
  const std::vector<HloInstruction*> preds = fusion->control_predecessors();
  const std::vector<HloInstruction*> succs = fusion->control_successors();
  std::vector<HloInstruction*> clones;
  const HloComputation* c = fusion->fused_computation();
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  for (HloInstruction* x : c->MakeInstructionPostOrder()) {
    if (x->opcode() == HloOpcode::kParameter) {
      if (x->parameter_number() < 0 || x->parameter_number() >= fusion->operand_count())
        return FailedPrecondition("fusion ", fusion->name(), " has no operand for ", x->name());
      map[x] = fusion->operand(x->parameter_number());
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : x->operands()) ops.push_back(map.at(op));
    map[x] = parent->AddInstruction(
        CloneInstruction(*x, x->shape(), ops, UniqueInstructionName(*parent, x->name())));
    clones.push_back(map[x]);
  }
  fusion->DropAllControlDependencies();
  for (HloInstruction* x : clones) {
    if (x->opcode() == HloOpcode::kTuple) continue;  // a view of its elements, which carry them
    for (HloInstruction* p : preds) p->AddControlDependencyTo(x);
    for (HloInstruction* q : succs) x->AddControlDependencyTo(q);
  }
  HloInstruction* root = map.at(c->root_instruction());
  std::vector<HloInstruction*> dead;
  if (c->root_instruction()->opcode() == HloOpcode::kTuple) {
    for (HloInstruction* u : std::vector<HloInstruction*>(fusion->users())) {
      if (u->opcode() != HloOpcode::kGetTupleElement) continue;
      int64_t i = u->attrs().tuple_index;
      if (i < 0 || i >= root->operand_count()) continue;
      u->ReplaceAllUsesWith(root->operand(i));
      dead.push_back(u);
    }
  }
  fusion->ReplaceAllUsesWith(root);
  for (HloInstruction* g : dead)
    if (g->user_count() == 0 && !g->IsRoot()) KILN_RETURN_IF_ERROR(parent->RemoveInstruction(g));
  KILN_RETURN_IF_ERROR(parent->RemoveInstruction(fusion));
  if (c->root_instruction()->opcode() == HloOpcode::kTuple && root->user_count() == 0 &&
      !root->IsRoot())
    KILN_RETURN_IF_ERROR(parent->RemoveInstruction(root));
  return OkStatus();
}

}  // namespace kiln
