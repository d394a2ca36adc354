#include "kiln/cuda/compiler/epilogue_matching.h"

#include <unordered_set>
#include <vector>

#include "kiln/hlo/literal.h"

namespace kiln::cuda::match {

bool EpilogueType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

bool RowMajor(const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); }

bool IsByteView(const HloInstruction* i) {
  if (i->opcode() != HloOpcode::kReshape && i->opcode() != HloOpcode::kBitcast) return false;
  const Shape& a = i->shape();
  const Shape& b = i->operand(0)->shape();
  if (!a.IsArray() || !b.IsArray() || a.element_type() != b.element_type()) return false;
  return RowMajor(a) && RowMajor(b);
}

HloInstruction* StripViews(HloInstruction* i) {
  while (IsByteView(i)) i = i->operand(0);
  return i;
}

std::optional<double> ScalarConstantValue(const HloInstruction* i) {
  while (i->opcode() == HloOpcode::kBroadcast || IsByteView(i)) i = i->operand(0);
  if (i->opcode() != HloOpcode::kConstant || !i->has_literal() || i->literal_elided()) return std::nullopt;
  const Literal& l = i->literal();
  if (!l.shape().IsArray() || l.element_count() < 1 || IsComplexType(l.shape().element_type()))
    return std::nullopt;
  double v = l.GetAsDouble(0);
  for (int64_t k = 1; k < l.element_count(); ++k)
    if (l.GetAsDouble(k) != v) return std::nullopt;
  return v;
}

bool DependsOn(HloInstruction* from, const HloInstruction* target) {
  std::unordered_set<const HloInstruction*> seen;
  std::vector<HloInstruction*> work = {from};
  while (!work.empty()) {
    HloInstruction* x = work.back();
    work.pop_back();
    if (x == target) return true;
    if (!seen.insert(x).second) continue;
    for (HloInstruction* o : x->operands()) work.push_back(o);
    for (HloInstruction* o : x->control_predecessors()) work.push_back(o);
  }
  return false;
}

}  // namespace kiln::cuda::match
