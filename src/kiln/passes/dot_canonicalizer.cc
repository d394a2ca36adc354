#include "kiln/passes/dot_canonicalizer.h"

#include <algorithm>

#include "kiln/hlo/clone.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {
namespace {

using Dims = std::vector<int64_t>;

bool Is(const Dims& v, std::initializer_list<int64_t> want) {
  return v.size() == want.size() && std::equal(v.begin(), v.end(), want.begin());
}

// The dimensions of a rank-`rank` operand that are neither batch nor contracting, in order.
Dims FreeDims(int64_t rank, const Dims& batch, const Dims& contracting) {
  Dims free;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      free.push_back(d);
  return free;
}

int64_t Product(const Shape& s, const Dims& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s.dimensions(d);
  return p;
}

Dims Concat(std::initializer_list<const Dims*> parts) {
  Dims out;
  for (const Dims* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// transpose(operand, order) reshaped to `dims`.
StatusOr<HloInstruction*> Canonicalize(HloEditor& editor, HloInstruction* operand,
                                       const Dims& order, Dims dims, const HloInstruction* dot) {
  KILN_ASSIGN_OR_RETURN(HloInstruction * t, editor.Transpose(operand, order, nullptr, dot));
  const Shape& s = operand->shape();
  return editor.Reshape(t, ArrayShapeLike(s.element_type(), std::move(dims), s), dot);
}

StatusOr<bool> CanonicalizeDot(HloEditor& editor, HloInstruction* dot) {
  const DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
  HloInstruction* lhs = dot->operand(0);
  HloInstruction* rhs = dot->operand(1);
  const Shape& ls = lhs->shape();
  const Shape& rs = rhs->shape();
  const Dims lhs_free = FreeDims(ls.rank(), dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions);
  const Dims rhs_free = FreeDims(rs.rank(), dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions);
  const bool batched = !dn.lhs_batch_dimensions.empty();
  const int64_t b = Product(ls, dn.lhs_batch_dimensions);
  const int64_t m = Product(ls, lhs_free);
  const int64_t k = Product(ls, dn.lhs_contracting_dimensions);
  const int64_t n = Product(rs, rhs_free);

  Dims lhs_dims = batched ? Dims{b, m, k} : Dims{m, k};
  Dims rhs_dims = batched ? Dims{b, k, n} : Dims{k, n};
  Dims out_dims = batched ? Dims{b, m, n} : Dims{m, n};
  KILN_ASSIGN_OR_RETURN(
      HloInstruction * a,
      Canonicalize(editor, lhs, Concat({&dn.lhs_batch_dimensions, &lhs_free, &dn.lhs_contracting_dimensions}),
                   lhs_dims, dot));
  KILN_ASSIGN_OR_RETURN(
      HloInstruction * c,
      Canonicalize(editor, rhs, Concat({&dn.rhs_batch_dimensions, &dn.rhs_contracting_dimensions, &rhs_free}),
                   rhs_dims, dot));

  DotDimensionNumbers canonical;
  if (batched) {
    canonical.lhs_batch_dimensions = {0};
    canonical.rhs_batch_dimensions = {0};
    canonical.lhs_contracting_dimensions = {2};
    canonical.rhs_contracting_dimensions = {1};
  } else {
    canonical.lhs_contracting_dimensions = {1};
    canonical.rhs_contracting_dimensions = {0};
  }
  const Shape out_shape = out_dims == dot->shape().dimensions()
                              ? dot->shape()
                              : ArrayShapeLike(dot->shape().element_type(), out_dims, dot->shape());
  HloInstruction* operands[] = {a, c};
  auto clone = CloneInstruction(*dot, out_shape, operands, "");
  clone->attrs().dot_dimension_numbers = canonical;
  HloInstruction* new_dot = editor.Add(std::move(clone), dot);
  KILN_ASSIGN_OR_RETURN(HloInstruction * result, editor.Reshape(new_dot, dot->shape(), dot));
  MoveControlDependencies(dot, result);
  if (!CanReplace(*dot, *result)) {
    MoveControlDependencies(result, dot);
    return false;
  }
  dot->ReplaceAllUsesWith(result);
  return true;
}

}  // namespace

bool IsCanonicalDot(const HloInstruction& dot) {
  if (dot.opcode() != HloOpcode::kDot || !dot.attrs().dot_dimension_numbers) return false;
  const DotDimensionNumbers& dn = *dot.attrs().dot_dimension_numbers;
  const int64_t lr = dot.operand(0)->shape().rank();
  const int64_t rr = dot.operand(1)->shape().rank();
  if (dn.lhs_batch_dimensions.empty())
    return lr == 2 && rr == 2 && dn.rhs_batch_dimensions.empty() &&
           Is(dn.lhs_contracting_dimensions, {1}) && Is(dn.rhs_contracting_dimensions, {0});
  return lr == 3 && rr == 3 && Is(dn.lhs_batch_dimensions, {0}) &&
         Is(dn.rhs_batch_dimensions, {0}) && Is(dn.lhs_contracting_dimensions, {2}) &&
         Is(dn.rhs_contracting_dimensions, {1});
}

StatusOr<bool> DotCanonicalizer::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    HloEditor editor(c);
    const int64_t before = c->instruction_count();
    bool computation_changed = false;
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (instr->opcode() != HloOpcode::kDot || instr->operand_count() != 2) continue;
      if (!instr->attrs().dot_dimension_numbers || !instr->attrs().sparsity.empty()) continue;
      if (!instr->shape().IsArray() || instr->shape().is_dynamic()) continue;
      if (!instr->operand(0)->shape().IsArray() || !instr->operand(1)->shape().IsArray() ||
          instr->operand(0)->shape().is_dynamic() || instr->operand(1)->shape().is_dynamic())
        continue;
      if (!instr->control_predecessors().empty() || !instr->control_successors().empty()) continue;
      if (IsCanonicalDot(*instr)) continue;
      KILN_ASSIGN_OR_RETURN(bool done, CanonicalizeDot(editor, instr));
      computation_changed |= done;
    }
    KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    changed |= computation_changed || c->instruction_count() < before;
  }
  return changed;
}

}  // namespace kiln
