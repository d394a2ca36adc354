// The algebraic simplifier's shape-op rewrites: chains of reshape, transpose, broadcast, slice,
// concatenate, pad, reverse, convert, copy, dynamic-slice and dynamic-update-slice.
#include <algorithm>

#include "kiln/passes/algebraic_simplifier_internal.h"

namespace kiln::algsimp {
namespace {

bool IsScalarBroadcast(const HloInstruction* h) {
  return h->opcode() == HloOpcode::kBroadcast && h->operand(0)->shape().IsScalar();
}

bool IsIdentityPermutation(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// scalar-bcast: a shape op applied to broadcast(scalar) is a broadcast of the scalar.
StatusOr<HloInstruction*> ScalarBroadcastThrough(Context& ctx, HloInstruction* instr) {
  HloInstruction* op = instr->operand(0);
  if (!IsScalarBroadcast(op)) return nullptr;
  return ctx.editor.Broadcast(op->operand(0), instr->shape(), {}, instr);
}

StatusOr<HloInstruction*> SimplifyReshape(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  if (x->shape().dimensions() == instr->shape().dimensions()) return x;  // reshape-noop
  if (x->opcode() == HloOpcode::kReshape)                               // reshape-reshape
    return ctx.editor.Reshape(x->operand(0), instr->shape(), instr);
  return ScalarBroadcastThrough(ctx, instr);
}

StatusOr<HloInstruction*> SimplifyTranspose(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  const std::vector<int64_t>& perm = instr->attrs().dimensions;
  if (IsIdentityPermutation(perm)) return x;  // transpose-id
  if (x->opcode() == HloOpcode::kTranspose) {  // transpose-transpose
    const std::vector<int64_t>& inner = x->attrs().dimensions;
    std::vector<int64_t> composed(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) composed[i] = inner[perm[i]];
    return ctx.editor.Transpose(x->operand(0), composed, &instr->shape(), instr);
  }
  // transpose-degenerate: the dimensions of size > 1 keep their order.
  int64_t last = -1;
  bool degenerate = true;
  for (int64_t p : perm) {
    if (x->shape().dimensions(p) == 1) continue;
    if (p < last) degenerate = false;
    last = p;
  }
  if (degenerate) return ctx.editor.Reshape(x, instr->shape(), instr);
  return ScalarBroadcastThrough(ctx, instr);
}

StatusOr<HloInstruction*> SimplifyBroadcast(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  const std::vector<int64_t>& dims = instr->attrs().dimensions;
  if (x->shape().dimensions() == instr->shape().dimensions() && IsIdentityPermutation(dims))
    return x;  // broadcast-id
  if (x->opcode() == HloOpcode::kBroadcast) {  // broadcast-broadcast
    std::vector<int64_t> composed;
    for (int64_t d : x->attrs().dimensions) composed.push_back(dims[d]);
    return ctx.editor.Broadcast(x->operand(0), instr->shape(), composed, instr);
  }
  return nullptr;
}

StatusOr<HloInstruction*> SimplifySlice(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  const std::vector<SliceDimension>& slice = instr->attrs().slice;
  const int64_t rank = x->shape().rank();
  if (static_cast<int64_t>(slice.size()) != rank) return nullptr;
  bool full = true;
  for (int64_t d = 0; d < rank; ++d)
    full &= slice[d].start == 0 && slice[d].stride == 1 && slice[d].limit == x->shape().dimensions(d);
  if (full) return x;  // slice-full

  if (x->opcode() == HloOpcode::kSlice) {  // slice-slice
    const std::vector<SliceDimension>& inner = x->attrs().slice;
    std::vector<SliceDimension> composed(rank);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = instr->shape().dimensions(d);
      composed[d].stride = inner[d].stride * slice[d].stride;
      composed[d].start = inner[d].start + slice[d].start * inner[d].stride;
      composed[d].limit = n == 0 ? composed[d].start : composed[d].start + (n - 1) * composed[d].stride + 1;
    }
    return ctx.editor.Slice(x->operand(0), composed, &instr->shape(), instr);
  }

  if (x->opcode() == HloOpcode::kConcatenate && !x->attrs().dimensions.empty()) {  // slice-concat
    const int64_t cd = x->attrs().dimensions[0];
    const int64_t n = instr->shape().dimensions(cd);
    if (n == 0) return nullptr;
    const int64_t first = slice[cd].start;
    const int64_t last = first + (n - 1) * slice[cd].stride;
    int64_t offset = 0;
    for (HloInstruction* part : x->operands()) {
      const int64_t size = part->shape().dimensions(cd);
      if (first >= offset && last < offset + size) {
        std::vector<SliceDimension> s = slice;
        s[cd].start -= offset;
        s[cd].limit = s[cd].start + (n - 1) * s[cd].stride + 1;
        return ctx.editor.Slice(part, s, &instr->shape(), instr);
      }
      offset += size;
    }
    return nullptr;
  }
  return ScalarBroadcastThrough(ctx, instr);
}

StatusOr<HloInstruction*> SimplifyConcatenate(Context& ctx, HloInstruction* instr) {
  if (instr->operand_count() == 1) return instr->operand(0);  // concat-single
  std::vector<HloInstruction*> kept;
  for (HloInstruction* op : instr->operands())
    if (op->shape().num_elements() != 0) kept.push_back(op);
  if (kept.empty() || kept.size() == static_cast<size_t>(instr->operand_count())) return nullptr;
  if (kept.size() == 1) return kept[0];
  auto c = std::make_unique<HloInstruction>(HloOpcode::kConcatenate, instr->shape());
  c->attrs().dimensions = instr->attrs().dimensions;
  for (HloInstruction* op : kept) c->AppendOperand(op);
  return ctx.editor.Add(std::move(c), instr);
}

StatusOr<HloInstruction*> SimplifyReverse(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  std::vector<int64_t> dims;
  for (int64_t d : instr->attrs().dimensions)
    if (x->shape().dimensions(d) > 1) dims.push_back(d);
  if (dims.empty()) return x;  // reverse-degenerate
  if (x->opcode() == HloOpcode::kReverse) {  // reverse-reverse
    std::vector<int64_t> inner;
    for (int64_t d : x->attrs().dimensions)
      if (x->shape().dimensions(d) > 1) inner.push_back(d);
    std::vector<int64_t> outer = dims;
    std::sort(inner.begin(), inner.end());
    std::sort(outer.begin(), outer.end());
    if (inner == outer) return x->operand(0);
  }
  if (dims.size() != instr->attrs().dimensions.size()) {  // reverse-degenerate
    auto r = std::make_unique<HloInstruction>(HloOpcode::kReverse, instr->shape());
    r->attrs().dimensions = dims;
    r->AppendOperand(x);
    return ctx.editor.Add(std::move(r), instr);
  }
  return ScalarBroadcastThrough(ctx, instr);
}

bool IsIntOrPred(PrimitiveType t) { return IsIntegralType(t) || t == PrimitiveType::kPred; }

StatusOr<HloInstruction*> SimplifyConvert(Context& ctx, HloInstruction* instr) {
  HloInstruction* inner = instr->operand(0);
  if (inner->opcode() != HloOpcode::kConvert) return nullptr;
  HloInstruction* x = inner->operand(0);
  const PrimitiveType a = x->shape().element_type();
  const PrimitiveType b = inner->shape().element_type();
  const PrimitiveType c = instr->shape().element_type();
  if (!IsLosslessConvert(a, b)) return nullptr;
  // The outer conversion must be of the kind a -> c would be: a float -> int conversion
  // saturates where an int -> int conversion wraps.
  if (IsIntOrPred(a) && IsFloatingPointType(b) && IsIntOrPred(c)) return nullptr;
  if ((IsComplexType(a) || IsComplexType(b) || IsComplexType(c)) &&
      !(IsComplexType(a) && IsComplexType(b) && IsComplexType(c)))
    return nullptr;
  return ctx.editor.Convert(x, c, &instr->shape(), instr);  // convert-convert
}

// The value of a scalar integer constant, clamped into [lo, hi].
std::optional<int64_t> ClampedConstantIndex(const HloInstruction* h, int64_t lo, int64_t hi) {
  if (h->opcode() != HloOpcode::kConstant || !h->has_literal() || h->literal_elided()) return {};
  const Literal& l = h->literal();
  if (!l.shape().IsArray() || l.element_count() != 1) return {};
  const PrimitiveType t = l.shape().element_type();
  if (!IsIntegralType(t)) return {};
  int64_t v = l.GetAsInt64(0);
  // An unsigned 64-bit index above INT64_MAX reads as negative; it clamps to the top.
  if (IsUnsignedIntegralType(t) && v < 0) v = hi;
  return std::clamp(v, lo, hi);
}

StatusOr<HloInstruction*> SimplifyDynamicSlice(Context& ctx, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  const int64_t rank = x->shape().rank();
  if (instr->operand_count() != rank + 1) return nullptr;  // the rank-1 index-vector form
  if (instr->shape().dimensions() == x->shape().dimensions()) return x;  // dynamic-slice-full
  std::vector<SliceDimension> slice(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = instr->shape().dimensions(d);
    std::optional<int64_t> start =
        ClampedConstantIndex(instr->operand(d + 1), 0, x->shape().dimensions(d) - size);
    if (!start) return nullptr;
    slice[d] = {*start, *start + size, 1};
  }
  return ctx.editor.Slice(x, slice, &instr->shape(), instr);  // dynamic-slice-const
}

StatusOr<HloInstruction*> SimplifyDynamicUpdateSlice(Context&, HloInstruction* instr) {
  HloInstruction* x = instr->operand(0);
  HloInstruction* update = instr->operand(1);
  if (update->shape().num_elements() == 0) return x;  // dus-empty
  if (update->shape().dimensions() == x->shape().dimensions() &&
      update->shape().element_type() == x->shape().element_type())
    return update;  // dus-full
  return nullptr;
}

}  // namespace

StatusOr<HloInstruction*> SimplifyShapeOp(Context& ctx, HloInstruction* instr) {
  if (!instr->shape().IsArray() || instr->operand_count() == 0 ||
      !instr->operand(0)->shape().IsArray())
    return nullptr;
  switch (instr->opcode()) {
    case HloOpcode::kReshape: return SimplifyReshape(ctx, instr);
    case HloOpcode::kTranspose: return SimplifyTranspose(ctx, instr);
    case HloOpcode::kBroadcast: return SimplifyBroadcast(ctx, instr);
    case HloOpcode::kSlice: return SimplifySlice(ctx, instr);
    case HloOpcode::kConcatenate: return SimplifyConcatenate(ctx, instr);
    case HloOpcode::kPad: {  // pad-noop
      for (const PaddingDimension& p : instr->attrs().padding)
        if (p.low != 0 || p.high != 0 || p.interior != 0) return nullptr;
      return instr->operand(0);
    }
    case HloOpcode::kReverse: return SimplifyReverse(ctx, instr);
    case HloOpcode::kConvert: return SimplifyConvert(ctx, instr);
    case HloOpcode::kBitcastConvert:  // convert-same
      if (instr->operand(0)->shape().element_type() == instr->shape().element_type())
        return instr->operand(0);
      return nullptr;
    case HloOpcode::kCopy: {  // copy-same
      const Shape& s = instr->shape();
      const Shape& o = instr->operand(0)->shape();
      if (s.layout_or_default() == o.layout_or_default()) return instr->operand(0);
      return nullptr;
    }
    case HloOpcode::kDynamicSlice: return SimplifyDynamicSlice(ctx, instr);
    case HloOpcode::kDynamicUpdateSlice: return SimplifyDynamicUpdateSlice(ctx, instr);
    default:
      return nullptr;
  }
}

}  // namespace kiln::algsimp
