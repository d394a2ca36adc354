#include "kiln/cpu/dot_transpose_folding.h"

#include <memory>
#include <utility>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cpu {

namespace {

// Whether `t` is a transpose that keeps its leading dimensions and swaps the last two.
bool SwapsMinorPair(const HloInstruction& t) {
  if (t.opcode() != HloOpcode::kTranspose || !t.shape().IsArray()) return false;
  const std::vector<int64_t>& p = t.attrs().dimensions;
  const int64_t r = static_cast<int64_t>(p.size());
  if (r < 2 || r != t.shape().rank()) return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (p[i] != i) return false;
  return p[r - 2] == r - 1 && p[r - 1] == r - 2;
}

// Whether `dot`'s operands and result are all [batch..., free, contracted-or-free] with the
// same leading batch dimensions: then transpose(dot(a, b)) over the two minor dimensions is
// dot(b, a).
bool SwappableDot(const HloInstruction& dot) {
  if (dot.opcode() != HloOpcode::kDot || !dot.attrs().dot_dimension_numbers) return false;
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t r = dot.shape().rank();
  if (r < 2 || dot.operand(0)->shape().rank() != r || dot.operand(1)->shape().rank() != r) return false;
  if (dn.lhs_contracting_dimensions.size() != 1 || dn.rhs_contracting_dimensions.size() != 1) return false;
  if (static_cast<int64_t>(dn.lhs_batch_dimensions.size()) != r - 2 ||
      static_cast<int64_t>(dn.rhs_batch_dimensions.size()) != r - 2)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (dn.lhs_batch_dimensions[i] != i || dn.rhs_batch_dimensions[i] != i) return false;
  return true;
}

}  // namespace

StatusOr<bool> DotTransposeFolding::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations()) {
    bool changed_here = false;
    for (HloInstruction* dot : c->MakeInstructionPostOrder()) {
      if (dot->opcode() != HloOpcode::kDot || !IsCanonicalDot(*dot) || !dot->attrs().dot_dimension_numbers)
        continue;
      DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
      const int64_t r = dot->operand(0)->shape().rank();
      if (SwapsMinorPair(*dot->operand(0))) {
        dot->ReplaceOperand(0, dot->operand(0)->operand(0));
        dn.lhs_contracting_dimensions = {r - 2};
        changed_here = true;
      }
      if (SwapsMinorPair(*dot->operand(1))) {
        dot->ReplaceOperand(1, dot->operand(1)->operand(0));
        dn.rhs_contracting_dimensions = {r - 1};
        changed_here = true;
      }
    }
    // transpose(dot(a, b)) -> dot(b, a): the transpose of a product is the product of the
    // transposes in the other order, and the kernel reads transposed operands in place.
    for (HloInstruction* t : c->MakeInstructionPostOrder()) {
      if (!SwapsMinorPair(*t)) continue;
      HloInstruction* dot = t->operand(0);
      if (!SwappableDot(*dot) || dot->user_count() != 1 || dot == c->root_instruction() ||
          !dot->control_predecessors().empty() || !dot->control_successors().empty())
        continue;
      auto swapped = std::make_unique<HloInstruction>(HloOpcode::kDot, t->shape());
      swapped->attrs() = dot->attrs();
      DotDimensionNumbers& dn = *swapped->attrs().dot_dimension_numbers;
      std::swap(dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions);
      std::swap(dn.lhs_batch_dimensions, dn.rhs_batch_dimensions);
      auto& precision = swapped->attrs().precision_config.operand_precision;
      if (precision.size() == 2) std::swap(precision[0], precision[1]);
      swapped->AppendOperand(dot->operand(1));
      swapped->AppendOperand(dot->operand(0));
      HloEditor editor(c);
      HloInstruction* added = editor.Add(std::move(swapped), dot);
      MoveControlDependencies(t, added);
      KILN_RETURN_IF_ERROR(ReplaceInstruction(t, added));
      changed_here = true;
    }
    if (changed_here) KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    changed |= changed_here;
  }
  return changed;
}

}  // namespace kiln::cpu
