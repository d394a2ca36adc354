#include "kiln/cpu/divide_to_multiply.h"

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cpu {

namespace {

bool Applies(const HloInstruction& div) {
  if (div.opcode() != HloOpcode::kDivide || !div.shape().IsArray()) return false;
  const PrimitiveType t = div.shape().element_type();
  if (t != PrimitiveType::kF32 && t != PrimitiveType::kF64) return false;
  const HloInstruction* b = div.operand(1);
  if (b->opcode() != HloOpcode::kBroadcast) return false;
  const HloInstruction* y = b->operand(0);
  return y->shape().IsArray() && y->shape().element_type() == t &&
         4 * y->shape().num_elements() <= div.shape().num_elements();
}

}  // namespace

StatusOr<bool> DivideByBroadcastToMultiply::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations()) {
    HloEditor editor(c);
    for (HloInstruction* div : c->MakeInstructionPostOrder()) {
      if (!Applies(*div)) continue;
      HloInstruction* b = div->operand(1);
      HloInstruction* y = b->operand(0);
      const PrimitiveType t = div->shape().element_type();
      KILN_ASSIGN_OR_RETURN(HloInstruction * ones,
                            editor.BroadcastScalar(editor.ScalarConstant(t, 1.0, div), y->shape(), div));
      KILN_ASSIGN_OR_RETURN(HloInstruction * r, editor.Binary(HloOpcode::kDivide, ones, y, &y->shape(), div));
      KILN_ASSIGN_OR_RETURN(HloInstruction * rb,
                            editor.Broadcast(r, b->shape(), b->attrs().dimensions, div));
      KILN_ASSIGN_OR_RETURN(HloInstruction * m,
                            editor.Binary(HloOpcode::kMultiply, div->operand(0), rb, &div->shape(), div));
      KILN_RETURN_IF_ERROR(ReplaceInstruction(div, m));
      changed = true;
    }
    if (changed) KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
  }
  return changed;
}

}  // namespace kiln::cpu
