// The algebraic simplifier's rewrites of trivial dots and reductions.
#include <algorithm>

#include "kiln/hlo/computation.h"
#include "kiln/passes/algebraic_simplifier_internal.h"

namespace kiln::algsimp {
namespace {

bool IsSorted(const std::vector<int64_t>& v) { return std::is_sorted(v.begin(), v.end()); }

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One dot operand with its contracting dimensions (all of size 1) dropped and broadcast into
// the dot's result: its batch dimensions go to result dimensions 0..nb-1 (in batch order), its
// free dimensions (in order) to result dimensions free_offset, free_offset+1, ...
StatusOr<HloInstruction*> BroadcastDotOperand(Context& ctx, HloInstruction* dot,
                                              HloInstruction* operand,
                                              const std::vector<int64_t>& batch,
                                              const std::vector<int64_t>& contracting,
                                              int64_t free_offset) {
  const Shape& s = operand->shape();
  std::vector<int64_t> kept_dims, bdims;
  int64_t free_index = 0;
  for (int64_t d = 0; d < s.rank(); ++d) {
    if (Contains(contracting, d)) continue;
    kept_dims.push_back(s.dimensions(d));
    auto it = std::find(batch.begin(), batch.end(), d);
    if (it != batch.end()) {
      bdims.push_back(it - batch.begin());
    } else {
      bdims.push_back(free_offset + free_index++);
    }
  }
  const PrimitiveType rt = dot->shape().element_type();
  KILN_ASSIGN_OR_RETURN(HloInstruction * reshaped,
                        ctx.editor.Reshape(operand, ArrayShapeLike(s.element_type(), kept_dims, s),
                                           dot));
  if (!IsSorted(bdims)) {
    // Batch dimensions out of order: transpose so that the broadcast keeps dimension order.
    std::vector<int64_t> perm(bdims.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return bdims[x] < bdims[y]; });
    KILN_ASSIGN_OR_RETURN(reshaped, ctx.editor.Transpose(reshaped, perm, nullptr, dot));
    std::sort(bdims.begin(), bdims.end());
  }
  KILN_ASSIGN_OR_RETURN(HloInstruction * converted, ctx.editor.Convert(reshaped, rt, nullptr, dot));
  return ctx.editor.Broadcast(converted, ArrayShapeLike(rt, dot->shape().dimensions(), dot->shape()),
                              bdims, dot);
}

StatusOr<HloInstruction*> SimplifyDot(Context& ctx, HloInstruction* dot) {
  if (dot->operand_count() != 2 || !dot->attrs().sparsity.empty() ||
      !dot->attrs().dot_dimension_numbers)
    return nullptr;
  for (Precision p : dot->attrs().precision_config.operand_precision)
    if (p == Precision::kPackedNibble) return nullptr;
  const DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
  HloInstruction* lhs = dot->operand(0);
  HloInstruction* rhs = dot->operand(1);
  if (!lhs->shape().IsArray() || !rhs->shape().IsArray()) return nullptr;
  int64_t k = 1;
  for (int64_t d : dn.lhs_contracting_dimensions) k *= lhs->shape().dimensions(d);
  const PrimitiveType rt = dot->shape().element_type();
  if (k == 0) return MakeSplat(ctx, dot->shape(), Splat::kZero, dot);  // dot-empty
  if (k != 1 || !ctx.options.enable_dot_strength_reduction) return nullptr;
  // dot-k1: one product per result element.
  if (!(IsIntegralType(rt) || IsFloatingPointType(rt))) return nullptr;
  if (!IsLosslessConvert(lhs->shape().element_type(), rt) ||
      !IsLosslessConvert(rhs->shape().element_type(), rt))
    return nullptr;
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  const int64_t lhs_free = lhs->shape().rank() - nb -
                           static_cast<int64_t>(dn.lhs_contracting_dimensions.size());
  KILN_ASSIGN_OR_RETURN(HloInstruction * a,
                        BroadcastDotOperand(ctx, dot, lhs, dn.lhs_batch_dimensions,
                                            dn.lhs_contracting_dimensions, nb));
  KILN_ASSIGN_OR_RETURN(HloInstruction * b,
                        BroadcastDotOperand(ctx, dot, rhs, dn.rhs_batch_dimensions,
                                            dn.rhs_contracting_dimensions, nb + lhs_free));
  return ctx.editor.Binary(HloOpcode::kMultiply, a, b, &dot->shape(), dot);
}

// The opcode of a reducer that is exactly `op(param0, param1)` or `op(param1, param0)` on
// scalars of `type`; `swapped` tells which.
std::optional<HloOpcode> SimpleReducer(const HloComputation* f, PrimitiveType type, bool& swapped) {
  if (!f || f->num_parameters() != 2) return std::nullopt;
  const HloInstruction* root = f->root_instruction();
  if (!root || root->operand_count() != 2) return std::nullopt;
  switch (root->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: case HloOpcode::kAnd: case HloOpcode::kOr:
      break;
    default:
      return std::nullopt;
  }
  const HloInstruction* p0 = f->parameter_instruction(0);
  const HloInstruction* p1 = f->parameter_instruction(1);
  for (const HloInstruction* h : {root, p0, p1})
    if (!h->shape().IsScalar() || h->shape().element_type() != type) return std::nullopt;
  if (root->operand(0) == p0 && root->operand(1) == p1) {
    swapped = false;
  } else if (root->operand(0) == p1 && root->operand(1) == p0) {
    swapped = true;
  } else {
    return std::nullopt;
  }
  return root->opcode();
}

StatusOr<HloInstruction*> SimplifyReduce(Context& ctx, HloInstruction* reduce) {
  if (reduce->operand_count() != 2 || !reduce->shape().IsArray()) return nullptr;
  HloInstruction* x = reduce->operand(0);
  HloInstruction* init = reduce->operand(1);
  if (!x->shape().IsArray() || !init->shape().IsScalar()) return nullptr;
  const Shape& xs = x->shape();
  const std::vector<int64_t>& dims = reduce->attrs().dimensions;
  if (xs.num_elements() == 0)  // reduce-empty
    return ctx.editor.Broadcast(init, reduce->shape(), {}, reduce);

  std::vector<int64_t> unit, other;
  for (int64_t d : dims) (xs.dimensions(d) == 1 ? unit : other).push_back(d);
  if (!other.empty() && !unit.empty()) {  // reduce-degenerate
    std::vector<int64_t> kept_dims, new_dims;
    int64_t removed = 0;
    for (int64_t d = 0; d < xs.rank(); ++d) {
      if (Contains(unit, d)) {
        ++removed;
        continue;
      }
      kept_dims.push_back(xs.dimensions(d));
      if (Contains(other, d)) new_dims.push_back(d - removed);
    }
    KILN_ASSIGN_OR_RETURN(HloInstruction * reshaped,
                          ctx.editor.Reshape(x, ArrayShapeLike(xs.element_type(), kept_dims, xs),
                                             reduce));
    auto r = std::make_unique<HloInstruction>(HloOpcode::kReduce, reduce->shape());
    r->attrs().dimensions = new_dims;
    r->AppendOperand(reshaped);
    r->AppendOperand(init);
    r->AppendCalledComputation(reduce->to_apply());
    return ctx.editor.Add(std::move(r), reduce);
  }
  if (!other.empty()) return nullptr;
  // reduce-trivial: every output element folds exactly one input element.
  bool swapped = false;
  std::optional<HloOpcode> op = SimpleReducer(reduce->to_apply(), xs.element_type(), swapped);
  if (!op) return nullptr;
  KILN_ASSIGN_OR_RETURN(HloInstruction * reshaped, ctx.editor.Reshape(x, reduce->shape(), reduce));
  KILN_ASSIGN_OR_RETURN(HloInstruction * acc, ctx.editor.BroadcastScalar(init, reduce->shape(), reduce));
  return swapped ? ctx.editor.Binary(*op, reshaped, acc, &reduce->shape(), reduce)
                 : ctx.editor.Binary(*op, acc, reshaped, &reduce->shape(), reduce);
}

}  // namespace

StatusOr<HloInstruction*> SimplifyDotOrReduce(Context& ctx, HloInstruction* instr) {
  switch (instr->opcode()) {
    case HloOpcode::kDot: return SimplifyDot(ctx, instr);
    case HloOpcode::kReduce: return SimplifyReduce(ctx, instr);
    default: return nullptr;
  }
}

}  // namespace kiln::algsimp
