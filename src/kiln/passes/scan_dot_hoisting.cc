#include "kiln/passes/scan_dot_hoisting.h"

#include <optional>
#include <vector>

#include "kiln/hlo/clone.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln {
namespace {

constexpr int64_t kMaxHoistedBytes = int64_t{2} << 30;
constexpr int64_t kMaxInflation = 8;

// The tuple index when `h` is get-tuple-element of `c`'s parameter 0.
std::optional<int64_t> ParamElement(const HloInstruction* h, const HloComputation* c) {
  if (h->opcode() != HloOpcode::kGetTupleElement || c->num_parameters() != 1) return std::nullopt;
  if (h->operand(0) != c->parameter_instruction(0)) return std::nullopt;
  return h->attrs().tuple_index;
}

// Whether state element j passes through the body unchanged.
bool Invariant(const HloComputation* body, int64_t j) {
  const HloInstruction* root = body->root_instruction();
  if (j < 0 || j >= root->operand_count()) return false;
  return ParamElement(root->operand(j), body) == j;
}

struct Candidate {
  HloInstruction* dot = nullptr;
  int side = 0;                    // which dot operand is the slice
  HloInstruction* slice = nullptr; // the dynamic-slice
  bool reshaped = false;           // the dot reads reshape(slice), which drops dimension a
  int64_t a = 0;                   // the sliced dimension of xs
  int64_t xs = 0;                  // state element of xs
  int64_t w = -1;                  // state element of W, or -1: W is `w_constant`
  const HloInstruction* w_constant = nullptr;
};

// `s`'s dimensions with dimension a erased.
std::vector<int64_t> Without(const Shape& s, int64_t a) {
  std::vector<int64_t> d = s.dimensions();
  d.erase(d.begin() + a);
  return d;
}

std::optional<Candidate> Match(HloInstruction* dot, const HloComputation* body) {
  if (dot->opcode() != HloOpcode::kDot || dot->operand_count() != 2 || !dot->attrs().sparsity.empty() ||
      !dot->attrs().dot_dimension_numbers || !dot->control_predecessors().empty() ||
      !dot->control_successors().empty())
    return std::nullopt;
  const DotDimensionNumbers& dn = *dot->attrs().dot_dimension_numbers;
  if (!dn.lhs_batch_dimensions.empty() || !dn.rhs_batch_dimensions.empty()) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Candidate c;
    c.dot = dot;
    c.side = side;
    HloInstruction* s = dot->operand(side);
    c.reshaped = s->opcode() == HloOpcode::kReshape;
    c.slice = c.reshaped ? s->operand(0) : s;
    const HloInstruction* ds = c.slice;
    if (ds->opcode() != HloOpcode::kDynamicSlice) continue;
    const Shape& xs = ds->operand(0)->shape();
    if (!xs.IsArray() || xs.is_dynamic() || ds->operand_count() != 1 + xs.rank()) continue;
    std::optional<int64_t> j = ParamElement(ds->operand(0), body);
    if (!j || !Invariant(body, *j)) continue;
    c.xs = *j;
    // Exactly one dimension sliced to 1 row out of several; the rest taken whole.
    const std::vector<int64_t>& sizes = ds->attrs().dynamic_slice_sizes;
    if (static_cast<int64_t>(sizes.size()) != xs.rank()) continue;
    int64_t sliced = 0;
    for (int64_t d = 0; d < xs.rank(); ++d) {
      if (sizes[d] == xs.dimensions(d)) continue;
      ++sliced;
      c.a = d;
    }
    if (sliced != 1 || sizes[c.a] != 1 || xs.dimensions(c.a) < 2) continue;
    const std::vector<int64_t>& contracting = side == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
    if (c.reshaped) {
      if (s->shape().dimensions() != Without(ds->shape(), c.a)) continue;
    } else {
      bool contracted = false;
      for (int64_t q : contracting) contracted |= q == c.a;
      if (contracted) continue;
    }
    const HloInstruction* w = dot->operand(1 - side);
    if (std::optional<int64_t> k = ParamElement(w, body); k && Invariant(body, *k)) {
      c.w = *k;
    } else if (w->opcode() == HloOpcode::kConstant && w->has_literal() && !w->literal_elided()) {
      c.w_constant = w;
    } else {
      continue;
    }
    return c;
  }
  return std::nullopt;
}

// The value state element `j` of `w` starts with, in w's computation.
StatusOr<HloInstruction*> InitElement(HloEditor& editor, HloInstruction* w, int64_t j) {
  HloInstruction* init = w->operand(0);
  if (init->opcode() == HloOpcode::kTuple) return init->operand(j);
  return editor.GetTupleElement(init, j, w);
}

bool CalledOnlyBy(const HloModule& module, const HloComputation* callee, const HloInstruction* w) {
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions())
      if (i != w)
        for (const HloComputation* called : i->called_computations())
          if (called == callee) return false;
  return true;
}

StatusOr<bool> Hoist(HloEditor& editor, HloInstruction* w, const Candidate& c, int64_t trips) {
  HloComputation* body = w->while_body();
  HloComputation* cond = w->while_condition();
  const DotDimensionNumbers& dn = *c.dot->attrs().dot_dimension_numbers;
  const Shape& xs_shape = c.slice->operand(0)->shape();
  const int64_t rows = xs_shape.dimensions(c.a);
  if (trips * 2 < rows) return false;

  // P = dot(xs, W) outside the loop; the slice side's contracting dimensions renumbered.
  DotDimensionNumbers pn = dn;
  std::vector<int64_t>& contracting = c.side == 0 ? pn.lhs_contracting_dimensions : pn.rhs_contracting_dimensions;
  if (c.reshaped)
    for (int64_t& q : contracting) q = q < c.a ? q : q + 1;
  const Shape& w_shape = c.dot->operand(1 - c.side)->shape();
  const Shape& lhs_shape = c.side == 0 ? xs_shape : w_shape;
  const Shape& rhs_shape = c.side == 0 ? w_shape : xs_shape;
  KILN_ASSIGN_OR_RETURN(Shape inferred, InferDotShape(lhs_shape, rhs_shape, pn, c.dot->shape().element_type()));
  const Shape p_shape = Shape::ArrayWithDefaultLayout(inferred.element_type(), inferred.dimensions());
  if (p_shape.byte_size() > kMaxHoistedBytes || p_shape.byte_size() > kMaxInflation * xs_shape.byte_size())
    return false;
  KILN_ASSIGN_OR_RETURN(HloInstruction * xs, InitElement(editor, w, c.xs));
  HloInstruction* weight = nullptr;
  if (c.w >= 0) {
    KILN_ASSIGN_OR_RETURN(weight, InitElement(editor, w, c.w));
  } else {
    weight = editor.Constant(Literal(c.w_constant->literal()), c.w_constant);
  }
  HloInstruction* lhs = c.side == 0 ? xs : weight;
  HloInstruction* rhs = c.side == 0 ? weight : xs;
  // Where xs's sliced dimension lands in P: free dimensions, lhs's first, in order.
  int64_t pos = 0;
  if (c.side == 1) pos += lhs_shape.rank() - static_cast<int64_t>(pn.lhs_contracting_dimensions.size());
  for (int64_t d = 0; d < c.a; ++d) {
    bool contracted = false;
    for (int64_t q : contracting) contracted |= q == d;
    pos += !contracted;
  }

  std::vector<HloInstruction*> ops = {lhs, rhs};
  auto p_instr = CloneInstruction(*c.dot, p_shape, ops, "");
  p_instr->attrs().dot_dimension_numbers = pn;
  HloInstruction* p = editor.Add(std::move(p_instr), c.dot);

  // P joins the loop state (last element, passed through).
  const Shape& old_state = w->shape();
  const int64_t n = old_state.tuple_shapes_size();
  std::vector<HloInstruction*> init_elems;
  for (int64_t j = 0; j < n; ++j) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * e, InitElement(editor, w, j));
    init_elems.push_back(e);
  }
  init_elems.push_back(p);
  HloInstruction* new_init = editor.Tuple(init_elems, w->operand(0));
  std::vector<Shape> elems = old_state.tuple_shapes();
  elems.push_back(p_shape);
  const Shape new_state = Shape::Tuple(elems);
  w->ReplaceOperand(0, new_init);
  w->set_shape(new_state);
  cond->parameter_instruction(0)->set_shape(new_state);
  body->parameter_instruction(0)->set_shape(new_state);
  HloEditor be(body);
  KILN_ASSIGN_OR_RETURN(HloInstruction * carried, be.GetTupleElement(body->parameter_instruction(0), n, c.dot));
  HloInstruction* root = body->root_instruction();
  root->AppendOperand(carried);
  root->set_shape(new_state);

  // y_t = reshape(dynamic-slice(P, t at pos, 0 elsewhere)).
  HloInstruction* index = c.slice->operand(1 + c.a);
  std::vector<HloInstruction*> ds_ops = {carried};
  std::vector<int64_t> sizes = p_shape.dimensions();
  sizes[pos] = 1;
  HloInstruction* zero = be.ScalarConstant(index->shape().element_type(), 0, c.slice);
  for (int64_t d = 0; d < p_shape.rank(); ++d) ds_ops.push_back(d == pos ? index : zero);
  auto ds = std::make_unique<HloInstruction>(HloOpcode::kDynamicSlice,
                                             Shape::ArrayWithDefaultLayout(p_shape.element_type(), sizes));
  for (HloInstruction* o : ds_ops) ds->AppendOperand(o);
  ds->attrs().dynamic_slice_sizes = sizes;
  HloInstruction* row = be.Add(std::move(ds), c.slice);
  KILN_ASSIGN_OR_RETURN(HloInstruction * y, be.Reshape(row, c.dot->shape(), c.dot));
  KILN_RETURN_IF_ERROR(ReplaceInstruction(c.dot, y));
  return true;
}

}  // namespace

StatusOr<bool> ScanDotHoisting::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.MakeComputationPostOrder()) {
    HloEditor editor(comp);
    for (HloInstruction* w : comp->MakeInstructionPostOrder()) {
      if (w->opcode() != HloOpcode::kWhile || w->operand_count() != 1 || w->called_computations().size() != 2 ||
          !w->shape().IsTuple() || w->IsRoot() || w->sharding() || !w->control_predecessors().empty() ||
          !w->control_successors().empty())
        continue;
      bool gte_users = true;
      for (const HloInstruction* u : w->users()) gte_users &= u->opcode() == HloOpcode::kGetTupleElement;
      HloComputation* body = w->while_body();
      HloComputation* cond = w->while_condition();
      if (!gte_users || body->num_parameters() != 1 || cond->num_parameters() != 1 ||
          body->root_instruction()->opcode() != HloOpcode::kTuple || !CalledOnlyBy(module, body, w) ||
          !CalledOnlyBy(module, cond, w) || body == cond)
        continue;
      std::optional<int64_t> trips = ComputeWhileTripCount(*w);
      if (!trips) trips = KnownTripCount(*w);
      if (!trips) continue;
      std::vector<Candidate> candidates;
      for (HloInstruction* i : body->MakeInstructionPostOrder())
        if (std::optional<Candidate> c = Match(i, body)) candidates.push_back(*c);
      bool hoisted = false;
      for (const Candidate& c : candidates) {
        KILN_ASSIGN_OR_RETURN(bool h, Hoist(editor, w, c, *trips));
        hoisted |= h;
      }
      if (hoisted) {
        KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*body).status());
        changed = true;
      }
    }
    if (changed) KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*comp).status());
  }
  return changed;
}

}  // namespace kiln
