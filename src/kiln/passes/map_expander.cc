#include "kiln/passes/map_expander.h"

#include <unordered_map>
#include <vector>

#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {

namespace {

// Whether f's instructions are all expandable (Note [Map expansion]).
bool Expandable(const HloComputation& f) {
  for (const HloInstruction* i : f.instructions()) {
    if (!i->shape().IsArray() || i->shape().rank() != 0) return false;
    if (i->opcode() == HloOpcode::kParameter || i->opcode() == HloOpcode::kConstant) continue;
    if (!IsElementwiseOpcode(i->opcode()) || i->opcode() == HloOpcode::kMap) return false;
    if (!i->called_computations().empty() || !i->control_predecessors().empty()) return false;
  }
  return true;
}

StatusOr<HloInstruction*> Expand(HloEditor& e, HloInstruction* map) {
  const HloComputation& f = *map->called_computations()[0];
  const std::vector<int64_t> dims = map->shape().dimensions();
  std::unordered_map<const HloInstruction*, HloInstruction*> value;
  for (const HloInstruction* i : f.MakeInstructionPostOrder()) {
    HloInstruction* v = nullptr;
    if (i->opcode() == HloOpcode::kParameter) {
      const int64_t p = i->parameter_number();
      if (p < 0 || p >= map->operand_count()) return InvalidArgument("map %", map->name(), ": parameter out of range");
      v = map->operand(p);
    } else if (i->opcode() == HloOpcode::kConstant) {
      HloInstruction* c = e.Constant(i->literal(), map);
      KILN_ASSIGN_OR_RETURN(v, e.BroadcastScalar(c, ArrayShapeLike(i->shape().element_type(), dims, map->shape()), map));
    } else {
      std::vector<HloInstruction*> ops;
      for (const HloInstruction* o : i->operands()) ops.push_back(value.at(o));
      const Shape s = ArrayShapeLike(i->shape().element_type(), dims, map->shape());
      v = e.Add(CloneInstruction(*i, s, ops, ""), map);
    }
    value[i] = v;
  }
  HloInstruction* root = value.at(f.root_instruction());
  // The map's own layout for the result (a constant or parameter root keeps its producer's).
  if (root->shape().element_type() != map->shape().element_type())
    return Internal("map %", map->name(), ": expansion has type ", root->shape().ToString(false));
  return root;
}

}  // namespace

StatusOr<bool> MapExpander::Run(HloModule& module) {
  bool changed = false;
  // Post order over the call graph is not needed: Expandable refuses a body that still maps,
  // so iterate until nothing changes (inner maps expand first).
  for (bool again = true; again;) {
    again = false;
    for (HloComputation* c : module.computations()) {
      std::vector<HloInstruction*> maps;
      for (HloInstruction* i : c->instructions())
        if (i->opcode() == HloOpcode::kMap && i->called_computations().size() == 1 &&
            i->shape().IsArray() && Expandable(*i->called_computations()[0]))
          maps.push_back(i);
      if (maps.empty()) continue;
      HloEditor e(c);
      for (HloInstruction* m : maps) {
        KILN_ASSIGN_OR_RETURN(HloInstruction * r, Expand(e, m));
        if (!CanReplace(*m, *r)) continue;  // e.g. the entry root in another layout
        MoveControlDependencies(m, r);
        KILN_RETURN_IF_ERROR(ReplaceInstruction(m, r));
        again = changed = true;
      }
      KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    }
  }
  return changed;
}

}  // namespace kiln
