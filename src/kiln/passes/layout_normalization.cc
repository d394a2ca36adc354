#include "kiln/passes/layout_normalization.h"

#include <numeric>

#include "kiln/hlo/computation.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {

namespace {

bool IsPermutation(const std::vector<int64_t>& v, int64_t rank) {
  if (static_cast<int64_t>(v.size()) != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : v) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// Only the minor_to_major part of `shape`'s layout (default when absent or invalid).
Layout LeafLayout(const Shape& shape) {
  if (shape.has_layout() && IsPermutation(shape.layout().minor_to_major(), shape.rank()))
    return Layout(shape.layout().minor_to_major());
  return Layout::Default(shape.rank());
}

bool IsIdentity(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Shape RowMajor(PrimitiveType type, std::vector<int64_t> dims) {
  return Shape::ArrayWithDefaultLayout(type, std::move(dims));
}

// Bits per element as a bitcast sees them (pred a byte; s4/u4/f4 their width, not the byte a
// Literal stores them in: s4[16]{0:E(4)} -> s8[8] is a bitcast across widths, not a reshape).
int ElementBits(PrimitiveType t) { return t == PrimitiveType::kPred ? 8 : PrimitiveBitWidth(t); }

HloInstruction* AddUnary(HloEditor& editor, HloOpcode op, HloInstruction* operand, Shape shape,
                         const HloInstruction* like) {
  auto instr = std::make_unique<HloInstruction>(op, std::move(shape));
  instr->AppendOperand(operand);
  return editor.Add(std::move(instr), like);
}

// Rewrites one bitcast (see the header); returns the instruction that replaces it, or the
// bitcast itself when it stays.
StatusOr<HloInstruction*> RewriteBitcast(HloEditor& editor, HloInstruction* bitcast) {
  HloInstruction* operand = bitcast->operand(0);
  const Shape& in = operand->shape();
  const Shape& out = bitcast->shape();
  if (!in.IsArray() || !out.IsArray()) return bitcast;
  const std::vector<int64_t> in_order = MajorToMinor(LeafLayout(in), in.rank());
  const std::vector<int64_t> out_order = MajorToMinor(LeafLayout(out), out.rank());
  const PrimitiveType in_type = in.element_type(), out_type = out.element_type();
  const bool same_width = ElementBits(in_type) == ElementBits(out_type);
  const bool sub_byte = ElementBits(in_type) % 8 != 0 || ElementBits(out_type) % 8 != 0;
  if (IsIdentity(in_order) && IsIdentity(out_order) && in_type != out_type && !same_width &&
      !sub_byte)
    return bitcast;  // a row-major view of the same bytes at another width

  HloInstruction* cur = operand;
  // 1. The operand in its physical order, as a row-major array.
  std::vector<int64_t> physical_in;
  for (int64_t d : in_order) physical_in.push_back(in.dimensions(d));
  if (!IsIdentity(in_order)) {
    Shape t = RowMajor(in_type, physical_in);
    KILN_ASSIGN_OR_RETURN(cur, editor.Transpose(cur, in_order, &t, bitcast));
  }
  // 2. The same bytes as the result's physical dimensions.
  std::vector<int64_t> physical_out;
  for (int64_t d : out_order) physical_out.push_back(out.dimensions(d));
  if (in_type == out_type || same_width) {
    if (physical_in != physical_out) {
      Shape r = RowMajor(in_type, physical_out);
      cur = AddUnary(editor, HloOpcode::kReshape, cur, r, bitcast);
    }
    if (in_type != out_type)
      cur = AddUnary(editor, HloOpcode::kBitcastConvert, cur, RowMajor(out_type, physical_out), bitcast);
  } else if (sub_byte) {
    // Across widths with a sub-byte side (a packed array, E(n)): bitcast-convert's minor
    // dimension of the width ratio, between flat row-major views.
    const int64_t wi = ElementBits(in_type), wo = ElementBits(out_type);
    const int64_t n_in = in.num_elements(), n_out = out.num_elements();
    if (wi * n_in != wo * n_out || (wi > wo ? wi % wo : wo % wi) != 0)
      return InvalidArgument("bitcast %", bitcast->name(), ": ", in.ToString(false),
                             " and ", out.ToString(false), " have different bit sizes");
    if (wi > wo) {
      cur = AddUnary(editor, HloOpcode::kReshape, cur, RowMajor(in_type, {n_in}), bitcast);
      cur = AddUnary(editor, HloOpcode::kBitcastConvert, cur, RowMajor(out_type, {n_in, wi / wo}),
                     bitcast);
    } else {
      cur = AddUnary(editor, HloOpcode::kReshape, cur, RowMajor(in_type, {n_out, wo / wi}), bitcast);
      cur = AddUnary(editor, HloOpcode::kBitcastConvert, cur, RowMajor(out_type, {n_out}), bitcast);
    }
    cur = AddUnary(editor, HloOpcode::kReshape, cur, RowMajor(out_type, physical_out), bitcast);
  } else {
    cur = AddUnary(editor, HloOpcode::kBitcast, cur, RowMajor(out_type, physical_out), bitcast);
  }
  // 3. Back to the result's logical order: result dimension out_order[k] is dimension k.
  if (!IsIdentity(out_order)) {
    std::vector<int64_t> perm(out.rank());
    for (int64_t k = 0; k < out.rank(); ++k) perm[out_order[k]] = k;
    Shape t = RowMajor(out_type, out.dimensions());
    KILN_ASSIGN_OR_RETURN(cur, editor.Transpose(cur, perm, &t, bitcast));
  }
  if (cur == operand) {
    // Nothing changes the bytes' meaning (same dims, default layouts, same type): a no-op
    // reshape keeps the instruction count honest for the users.
    cur = AddUnary(editor, HloOpcode::kReshape, cur, RowMajor(out_type, out.dimensions()), bitcast);
  }
  return cur;
}

bool NeedsRewrite(const HloInstruction& bitcast) {
  if (bitcast.opcode() != HloOpcode::kBitcast || bitcast.operand_count() != 1) return false;
  const Shape& in = bitcast.operand(0)->shape();
  const Shape& out = bitcast.shape();
  if (!in.IsArray() || !out.IsArray()) return false;
  // Different widths with default layouts stay bitcasts (RewriteBitcast returns them as they
  // are); everything else becomes logical operations.
  // A sub-byte side is rewritten too (bitcast-convert; the backends' bitcast is a byte view).
  const int wi = ElementBits(in.element_type()), wo = ElementBits(out.element_type());
  return !(IsDefaultOrder(LeafLayout(in), in.rank()) && IsDefaultOrder(LeafLayout(out), out.rank()) &&
           in.element_type() != out.element_type() && wi != wo && wi % 8 == 0 && wo % 8 == 0);
}

Shape DefaultLayouts(Shape s) {
  s.clear_layout();
  s.set_default_layouts();
  return s;
}

}  // namespace

std::vector<int64_t> MajorToMinor(const Layout& layout, int64_t rank) {
  std::vector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  const auto& m2m = layout.minor_to_major();
  if (!IsPermutation(m2m, rank)) return order;
  for (int64_t i = 0; i < rank; ++i) order[i] = m2m[rank - 1 - i];
  return order;
}

bool IsDefaultOrder(const Layout& layout, int64_t rank) { return IsIdentity(MajorToMinor(layout, rank)); }

EntryLayouts GetEntryLayouts(const HloModule& module) {
  EntryLayouts out;
  const HloComputation* entry = module.entry_computation();
  if (!entry) return out;
  const auto& ecl = module.header().entry_computation_layout;
  auto leaves = [](const Shape& declared, const Shape& actual) {
    std::vector<Layout> v;
    // entry_computation_layout wins where it matches the entry's shapes.
    const Shape& s = Shape::Compatible(declared, actual) ? declared : actual;
    for (const ShapeIndex& leaf : ArrayLeafIndices(s)) v.push_back(LeafLayout(s.Subshape(leaf)));
    return v;
  };
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    const Shape& actual = entry->parameter_instruction(i)->shape();
    const bool have = ecl && i < static_cast<int64_t>(ecl->parameters.size());
    out.parameters.push_back(leaves(have ? ecl->parameters[i] : actual, actual));
  }
  const Shape& root = entry->root_instruction()->shape();
  out.result = leaves(ecl ? ecl->result : root, root);
  return out;
}

StatusOr<bool> LayoutNormalization::Run(HloModule& module) {
  bool changed = false;
  // 1. Bitcasts, while the layouts they depend on are still there.
  for (HloComputation* c : module.computations()) {
    std::vector<HloInstruction*> bitcasts;
    for (HloInstruction* instr : c->MakeInstructionPostOrder())
      if (NeedsRewrite(*instr)) bitcasts.push_back(instr);
    if (bitcasts.empty()) continue;
    HloEditor editor(c);
    for (HloInstruction* b : bitcasts) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * replacement, RewriteBitcast(editor, b));
      if (replacement == b) continue;
      MoveControlDependencies(b, replacement);
      b->ReplaceAllUsesWith(replacement);
      KILN_RETURN_IF_ERROR(c->RemoveInstruction(b));
      changed = true;
    }
  }
  // 2. Every shape row-major.
  for (HloComputation* c : module.computations()) {
    for (HloInstruction* instr : c->instructions()) {
      Shape s = DefaultLayouts(instr->shape());
      if (s != instr->shape()) {
        instr->set_shape(std::move(s));
        changed = true;
      }
    }
  }
  if (auto& ecl = module.header().entry_computation_layout) {
    for (Shape& p : ecl->parameters) {
      Shape s = DefaultLayouts(p);
      changed |= s != p;
      p = std::move(s);
    }
    Shape r = DefaultLayouts(ecl->result);
    changed |= r != ecl->result;
    ecl->result = std::move(r);
  }
  return changed;
}

}  // namespace kiln
