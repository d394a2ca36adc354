#include "kiln/cuda/compiler/sort_dimension_rewriter.h"

#include <memory>
#include <vector>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cuda {
namespace {

// The operand dimensions in the order that puts `d` last, the others keeping their order.
std::vector<int64_t> ToMinor(int64_t rank, int64_t d) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d) perm.push_back(i);
  perm.push_back(d);
  return perm;
}

std::vector<int64_t> Inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

bool Eligible(const HloInstruction& sort) {
  if (sort.opcode() != HloOpcode::kSort || sort.operand_count() < 1) return false;
  if (sort.attrs().dimensions.size() != 1) return false;
  if (!sort.control_predecessors().empty() || !sort.control_successors().empty()) return false;
  const Shape& s0 = sort.operand(0)->shape();
  if (!s0.IsArray() || s0.is_dynamic()) return false;
  const int64_t rank = s0.rank();
  const int64_t d = sort.attrs().dimensions[0];
  if (d < 0 || d >= rank - 1) return false;
  for (const HloInstruction* o : sort.operands()) {
    if (!o->shape().IsArray() || o->shape().is_dynamic() || o->shape().dimensions() != s0.dimensions()) return false;
  }
  const bool tuple = sort.operand_count() > 1;
  if (tuple != sort.shape().IsTuple()) return false;
  if (tuple && static_cast<int64_t>(sort.shape().tuple_shapes().size()) != sort.operand_count()) return false;
  return true;
}

Status Rewrite(HloInstruction* sort) {
  HloComputation* comp = sort->parent();
  HloEditor ed(comp);
  const int64_t rank = sort->operand(0)->shape().rank();
  const std::vector<int64_t> perm = ToMinor(rank, sort->attrs().dimensions[0]);
  const std::vector<int64_t> back = Inverse(perm);

  std::vector<HloInstruction*> operands;
  std::vector<Shape> sorted_shapes;
  for (HloInstruction* o : sort->operands()) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * t, ed.Transpose(o, perm, nullptr, sort));
    operands.push_back(t);
    sorted_shapes.push_back(t->shape());
  }
  const bool tuple = sort->operand_count() > 1;
  Shape shape = tuple ? Shape::Tuple(sorted_shapes) : sorted_shapes[0];
  auto ns = std::make_unique<HloInstruction>(HloOpcode::kSort, std::move(shape));
  for (HloInstruction* t : operands) ns->AppendOperand(t);
  ns->attrs() = sort->attrs();
  ns->attrs().dimensions = {rank - 1};
  for (HloComputation* c : sort->called_computations()) ns->AppendCalledComputation(c);
  ns->frontend_attributes() = sort->frontend_attributes();
  HloInstruction* sorted = ed.Add(std::move(ns), sort);

  if (!tuple) {
    Shape result = sort->shape();
    KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Transpose(sorted, back, &result, sort));
    KILN_RETURN_IF_ERROR(ReplaceInstruction(sort, r));
    // Removed now (not left to DCE) so that a second run finds nothing to do.
    return comp->RemoveInstruction(sort);
  }
  std::vector<HloInstruction*> results;
  for (int64_t i = 0; i < sort->operand_count(); ++i) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * g, ed.GetTupleElement(sorted, i, sort));
    Shape result = sort->shape().tuple_shapes(i);
    KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Transpose(g, back, &result, sort));
    results.push_back(r);
  }
  HloInstruction* t = ed.Tuple(results, sort);
  // A tuple's layout lives in its elements, which keep the sort's; replace directly.
  sort->ReplaceAllUsesWith(t);
  return comp->RemoveInstruction(sort);
}

}  // namespace

StatusOr<bool> SortDimensionRewriter::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    for (HloInstruction* instr : comp->MakeInstructionPostOrder()) {
      if (!Eligible(*instr)) continue;
      KILN_RETURN_IF_ERROR(Rewrite(instr));
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::cuda
