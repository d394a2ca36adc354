#include "kiln/passes/hlo_editor.h"

#include "kiln/base/strings.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {
namespace {

// The declared shape `want` (when given) must agree with the inferred one in type and
// dimensions; the result carries want's layout, or a default layout when the operand has one.
StatusOr<Shape> Checked(StatusOr<Shape> inferred, const Shape* want, const Shape& layout_source,
                        std::string_view what) {
  if (!inferred.ok()) return Internal("HloEditor: ", what, ": ", inferred.status().message());
  if (want) {
    if (!Shape::Compatible(*want, *inferred))
      return Internal("HloEditor: ", what, " gives ", inferred->ToString(false), ", not ",
                      want->ToString(false));
    return *want;
  }
  Shape s = std::move(inferred).value();
  if (layout_source.has_layout() || (layout_source.IsTuple() && layout_source.tuple_shapes_size() &&
                                     layout_source.tuple_shapes(0).has_layout()))
    s.set_default_layouts();
  return s;
}

}  // namespace

HloEditor::HloEditor(HloComputation* computation) : computation_(computation) {
  for (HloInstruction* i : computation->instructions()) names_.insert(i->name());
}

std::string HloEditor::UniqueName(std::string_view base) {
  std::string b(base);
  // Strip a previous ".kN" suffix so names do not grow with repeated rewrites.
  size_t pos = b.rfind(".k");
  if (pos != std::string::npos && pos + 2 < b.size() &&
      b.find_first_not_of("0123456789", pos + 2) == std::string::npos)
    b.resize(pos);
  if (b.empty()) b = "x";
  for (;;) {
    std::string name = StrCat(b, ".k", counter_++);
    if (names_.insert(name).second) return name;
  }
}

HloInstruction* HloEditor::Add(std::unique_ptr<HloInstruction> instr, const HloInstruction* like) {
  if (instr->name().empty() || names_.count(instr->name()))
    instr->set_name(UniqueName(HloOpcodeString(instr->opcode())));
  else
    names_.insert(instr->name());
  if (like) instr->metadata() = like->metadata();
  return computation_->AddInstruction(std::move(instr));
}

HloInstruction* HloEditor::Constant(Literal literal, const HloInstruction* like) {
  Shape shape = literal.shape();
  if (!shape.has_layout() && shape.IsArray()) {
    shape.set_default_layouts();
    literal.set_layout(shape.layout());
  }
  auto c = std::make_unique<HloInstruction>(HloOpcode::kConstant, shape);
  c->set_literal(std::move(literal));
  return Add(std::move(c), like);
}

HloInstruction* HloEditor::ScalarConstant(PrimitiveType t, double v, const HloInstruction* like) {
  Literal l(Shape::ArrayWithDefaultLayout(t, {}));
  l.SetFromDouble(0, v);
  return Constant(std::move(l), like);
}

StatusOr<HloInstruction*> HloEditor::Broadcast(HloInstruction* operand, const Shape& shape,
                                               std::vector<int64_t> dimensions,
                                               const HloInstruction* like) {
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferBroadcastShape(operand->shape(), shape.dimensions(),
                                                             dimensions),
                                         &shape, operand->shape(), "broadcast"));
  auto b = std::make_unique<HloInstruction>(HloOpcode::kBroadcast, s);
  b->attrs().dimensions = std::move(dimensions);
  b->AppendOperand(operand);
  return Add(std::move(b), like);
}

StatusOr<HloInstruction*> HloEditor::BroadcastScalar(HloInstruction* scalar, const Shape& shape,
                                                     const HloInstruction* like) {
  if (shape.rank() == 0 && scalar->shape().IsScalar()) return scalar;
  return Broadcast(scalar, shape, {}, like);
}

StatusOr<HloInstruction*> HloEditor::Reshape(HloInstruction* operand, const Shape& shape,
                                             const HloInstruction* like) {
  if (operand->shape().dimensions() == shape.dimensions()) return operand;
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferReshapeShape(operand->shape(), shape.dimensions()),
                                         &shape, operand->shape(), "reshape"));
  auto r = std::make_unique<HloInstruction>(HloOpcode::kReshape, s);
  r->AppendOperand(operand);
  return Add(std::move(r), like);
}

StatusOr<HloInstruction*> HloEditor::Transpose(HloInstruction* operand,
                                               std::vector<int64_t> permutation,
                                               const Shape* shape, const HloInstruction* like) {
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == static_cast<int64_t>(i);
  if (identity) return operand;
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferTransposeShape(operand->shape(), permutation), shape,
                                         operand->shape(), "transpose"));
  auto t = std::make_unique<HloInstruction>(HloOpcode::kTranspose, s);
  t->attrs().dimensions = std::move(permutation);
  t->AppendOperand(operand);
  return Add(std::move(t), like);
}

StatusOr<HloInstruction*> HloEditor::Slice(HloInstruction* operand,
                                           std::vector<SliceDimension> slice, const Shape* shape,
                                           const HloInstruction* like) {
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferSliceShape(operand->shape(), slice), shape,
                                         operand->shape(), "slice"));
  auto t = std::make_unique<HloInstruction>(HloOpcode::kSlice, s);
  t->attrs().slice = std::move(slice);
  t->AppendOperand(operand);
  return Add(std::move(t), like);
}

StatusOr<HloInstruction*> HloEditor::Convert(HloInstruction* operand, PrimitiveType type,
                                             const Shape* shape, const HloInstruction* like) {
  if (operand->shape().element_type() == type) return operand;
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferConvertShape(operand->shape(), type), shape,
                                         operand->shape(), "convert"));
  auto t = std::make_unique<HloInstruction>(HloOpcode::kConvert, s);
  t->AppendOperand(operand);
  return Add(std::move(t), like);
}

StatusOr<HloInstruction*> HloEditor::Unary(HloOpcode op, HloInstruction* operand,
                                           const Shape* shape, const HloInstruction* like) {
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferUnaryOpShape(op, operand->shape()), shape,
                                         operand->shape(), HloOpcodeString(op)));
  auto t = std::make_unique<HloInstruction>(op, s);
  t->AppendOperand(operand);
  return Add(std::move(t), like);
}

StatusOr<HloInstruction*> HloEditor::Binary(HloOpcode op, HloInstruction* lhs, HloInstruction* rhs,
                                            const Shape* shape, const HloInstruction* like) {
  KILN_ASSIGN_OR_RETURN(Shape s, Checked(InferBinaryOpShape(op, lhs->shape(), rhs->shape()), shape,
                                         lhs->shape(), HloOpcodeString(op)));
  auto t = std::make_unique<HloInstruction>(op, s);
  t->AppendOperand(lhs);
  t->AppendOperand(rhs);
  return Add(std::move(t), like);
}

HloInstruction* HloEditor::Tuple(std::span<HloInstruction* const> elements,
                                 const HloInstruction* like) {
  std::vector<Shape> shapes;
  for (HloInstruction* e : elements) shapes.push_back(e->shape());
  auto t = std::make_unique<HloInstruction>(HloOpcode::kTuple, Shape::Tuple(std::move(shapes)));
  for (HloInstruction* e : elements) t->AppendOperand(e);
  return Add(std::move(t), like);
}

StatusOr<HloInstruction*> HloEditor::GetTupleElement(HloInstruction* tuple, int64_t index,
                                                     const HloInstruction* like) {
  if (!tuple->shape().IsTuple() || index < 0 || index >= tuple->shape().tuple_shapes_size())
    return Internal("HloEditor: get-tuple-element ", index, " of ", tuple->shape().ToString(false));
  auto g = std::make_unique<HloInstruction>(HloOpcode::kGetTupleElement,
                                            tuple->shape().tuple_shapes(index));
  g->attrs().tuple_index = index;
  g->AppendOperand(tuple);
  return Add(std::move(g), like);
}

bool CanReplace(const HloInstruction& old, const HloInstruction& replacement) {
  if (&old == &replacement) return false;
  if (!Shape::Compatible(old.shape(), replacement.shape())) return false;
  if (!old.control_predecessors().empty() || !old.control_successors().empty()) return false;
  if (Shape::Equal(old.shape(), replacement.shape(), /*compare_layouts=*/true)) return true;
  // Layouts differ (or one side has none): fine unless the layout is observable.
  const HloComputation* c = old.parent();
  if (c && c->root_instruction() == &old && c->IsEntryComputation()) return false;
  for (const HloInstruction* u : old.users())
    if (u->opcode() == HloOpcode::kBitcast) return false;
  return true;
}

Status ReplaceInstruction(HloInstruction* old, HloInstruction* replacement) {
  if (!CanReplace(*old, *replacement))
    return FailedPrecondition("cannot replace ", old->name(), " (", old->shape().ToString(),
                              ") with ", replacement->name(), " (",
                              replacement->shape().ToString(), ")");
  old->ReplaceAllUsesWith(replacement);
  return OkStatus();
}

Shape ArrayShapeLike(PrimitiveType type, std::vector<int64_t> dims, const Shape& like) {
  if (like.has_layout()) return Shape::ArrayWithDefaultLayout(type, std::move(dims));
  return Shape::Array(type, std::move(dims));
}

StatusOr<bool> RemoveDeadInstructions(HloComputation& computation) {
  bool changed = false;
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* instr = *it;
    if (instr == computation.root_instruction() || instr->user_count() > 0) continue;
    if (instr->opcode() == HloOpcode::kParameter || HasSideEffect(*instr)) continue;
    if (!instr->control_predecessors().empty()) continue;
    KILN_RETURN_IF_ERROR(computation.RemoveInstruction(instr));
    changed = true;
  }
  return changed;
}

void MoveControlDependencies(HloInstruction* old, HloInstruction* replacement) {
  if (old == replacement) return;
  const std::vector<HloInstruction*> preds = old->control_predecessors();
  const std::vector<HloInstruction*> succs = old->control_successors();
  old->DropAllControlDependencies();
  for (HloInstruction* p : preds)
    if (p != replacement) p->AddControlDependencyTo(replacement);
  for (HloInstruction* q : succs)
    if (q != replacement) replacement->AddControlDependencyTo(q);
}

}  // namespace kiln
