#include "kiln/codegen/emitter_common.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/hlo/computation.h"

namespace kiln::codegen {

Shape WithLayout(const Shape& shape) {
  Shape s = shape;
  if (s.IsArray() && (!s.has_layout() ||
                      static_cast<int64_t>(s.layout().minor_to_major().size()) != s.rank()))
    s.set_layout(Layout::Default(s.rank()));
  return s;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t FloorPow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

StatusOr<FusionView> MakeFusionView(const HloInstruction& instr) {
  FusionView view;
  view.instr = &instr;
  for (const HloInstruction* op : instr.operands())
    if (!op->shape().IsArray())
      return Unimplemented("%", instr.name(), ": operand %", op->name(), " is not an array (",
                           op->shape().ToString(false), ")");
  const HloInstruction* root = &instr;
  if (instr.opcode() == HloOpcode::kFusion) {
    const HloComputation* c = instr.fused_computation();
    if (c == nullptr) return InvalidArgument("fusion %", instr.name(), " has no computation");
    if (c->num_parameters() != instr.operand_count())
      return InvalidArgument("fusion %", instr.name(), ": ", instr.operand_count(),
                             " operands for ", c->num_parameters(), " parameters");
    view.computation = c;
    for (int64_t i = 0; i < c->num_parameters(); ++i) view.leaves.push_back(c->parameter_instruction(i));
    root = c->root_instruction();
  } else {
    for (const HloInstruction* op : instr.operands()) view.leaves.push_back(op);
  }
  // Outputs: the root's array leaves.
  if (root->opcode() == HloOpcode::kTuple && view.computation != nullptr) {
    for (const HloInstruction* op : root->operands()) {
      if (!op->shape().IsArray())
        return Unimplemented("%", instr.name(), ": nested tuple outputs");
      view.outputs.push_back(KernelOutput{op, -1, WithLayout(op->shape())});
    }
  } else if (root->shape().IsArray()) {
    view.outputs.push_back(KernelOutput{root, -1, WithLayout(root->shape())});
  } else if (root->shape().IsTuple()) {
    for (int64_t i = 0; i < root->shape().tuple_shapes_size(); ++i) {
      const Shape& s = root->shape().tuple_shapes(i);
      if (!s.IsArray()) return Unimplemented("%", instr.name(), ": nested tuple outputs");
      view.outputs.push_back(KernelOutput{root, i, WithLayout(s)});
    }
  } else {
    return Unimplemented("%", instr.name(), " has no array result");
  }
  // The computed instructions, operands first.
  std::unordered_set<const HloInstruction*> leaves(view.leaves.begin(), view.leaves.end());
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* i) {
    if (leaves.count(i) || !seen.insert(i).second) return;
    for (const HloInstruction* op : i->operands()) visit(op);
    view.body.push_back(i);
  };
  visit(root);
  return view;
}

KernelAssembler::KernelAssembler(const FusionView& view, std::string emitter,
                                 const KernelConfig& config, GpuDialect dialect)
    : view_(view), source_(emitter + " kernel for %" + view.instr->name()), dialect_(dialect) {
  spec_.name = view.instr->name();
  spec_.emitter = std::move(emitter);
  spec_.config = config;
  spec_.hlo = view.instr->ToString();
  if (view.computation != nullptr) spec_.hlo += "\n" + view.computation->ToString();
  // Index width from the largest array the kernel touches.
  int64_t largest = 0;
  for (const HloInstruction* l : view.leaves) largest = std::max(largest, l->shape().num_elements());
  for (const KernelOutput& o : view.outputs) largest = std::max(largest, o.shape.num_elements());
  for (const HloInstruction* b : view.body)
    if (b->shape().IsArray()) largest = std::max(largest, b->shape().num_elements());
  index_type_ = largest >= (int64_t{1} << 30) ? "long long" : "int";
  std::unordered_set<std::string> names;
  auto unique = [&](std::string base) {
    base = SanitizeIdentifier(base);
    std::string n = base;
    for (int i = 2; names.count(n); ++i) n = base + "_" + std::to_string(i);
    names.insert(n);
    return n;
  };
  for (int64_t i = 0; i < static_cast<int64_t>(view.leaves.size()); ++i) {
    std::string name = unique("in_" + view.leaves[i]->name());
    operand_ptrs_.push_back(name);
    KernelParam p;
    p.kind = KernelParam::Kind::kOperand;
    p.index = i;
    p.name = name;
    p.shape = WithLayout(view.instr->operand(i)->shape());
    spec_.params.push_back(std::move(p));
  }
  operand_read_.assign(view.leaves.size(), false);
  for (int64_t i = 0; i < static_cast<int64_t>(view.outputs.size()); ++i) {
    const KernelOutput& o = view.outputs[i];
    std::string base = "out_" + o.value->name();
    if (o.tuple_index >= 0) base += "_" + std::to_string(o.tuple_index);
    std::string name = unique(base);
    output_ptrs_.push_back(name);
    KernelParam p;
    p.kind = KernelParam::Kind::kOutput;
    p.index = i;
    p.name = name;
    p.shape = o.shape;
    p.written = true;
    spec_.params.push_back(std::move(p));
  }
}

void KernelAssembler::SetInPlace(int64_t output, int64_t operand) {
  spec_.in_place.push_back({output, operand});
}

std::string KernelAssembler::AddScratch(int64_t bytes) {
  scratch_ptr_ = "scratch";
  spec_.scratch_bytes = bytes;
  KernelParam p;
  p.kind = KernelParam::Kind::kScratch;
  p.name = scratch_ptr_;
  p.shape = Shape::ArrayWithDefaultLayout(PrimitiveType::kU8, {bytes});
  p.read = p.written = true;
  spec_.params.push_back(std::move(p));
  return scratch_ptr_;
}

void KernelAssembler::BindLeaves(ElementalEmitter& em) const {
  for (size_t i = 0; i < view_.leaves.size(); ++i) {
    // A leaf listed twice (add(x, x) as a single op) is read through its first pointer.
    bool first = true;
    for (size_t j = 0; j < i; ++j) first &= view_.leaves[j] != view_.leaves[i];
    if (first) em.BindBuffer(view_.leaves[i], operand_ptrs_[i], WithLayout(view_.instr->operand(i)->shape()));
  }
}

void KernelAssembler::NoteReads(const ElementalEmitter& em) {
  for (size_t i = 0; i < view_.leaves.size(); ++i)
    if (em.WasRead(view_.leaves[i])) operand_read_[i] = true;
}

std::string KernelAssembler::ParamList() const {
  std::vector<std::string> params;
  auto in_place_operand = [&](int64_t i) {
    for (const auto& [o, op] : spec_.in_place)
      if (op == i) return true;
    return false;
  };
  auto in_place_output = [&](int64_t i) {
    for (const auto& [o, op] : spec_.in_place)
      if (o == i) return true;
    return false;
  };
  for (size_t i = 0; i < operand_ptrs_.size(); ++i) {
    PrimitiveType t = view_.instr->operand(i)->shape().element_type();
    params.push_back("const " + StorageType(t) + "* " +
                     (in_place_operand(i) ? "" : "__restrict__ ") + operand_ptrs_[i]);
  }
  for (size_t i = 0; i < output_ptrs_.size(); ++i) {
    PrimitiveType t = view_.outputs[i].shape.element_type();
    params.push_back(StorageType(t) + "* " + (in_place_output(i) ? "" : "__restrict__ ") +
                     output_ptrs_[i]);
  }
  if (!scratch_ptr_.empty()) params.push_back("u8* __restrict__ " + scratch_ptr_);
  return StrJoin(params, ",\n    ");
}

void KernelAssembler::AddEntry(const std::string& entry, int max_threads, const std::string& body) {
  source_.AddEntry("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(max_threads) +
                   ") " + entry + "(\n    " + ParamList() + ") {\n" + body + "}\n");
}

void KernelAssembler::AddLaunch(const std::string& entry, runtime::LaunchDims dims) {
  spec_.launches.push_back(KernelLaunch{entry, dims});
}

StatusOr<KernelSpec> KernelAssembler::Finish() {
  for (KernelParam& p : spec_.params) {
    if (p.kind == KernelParam::Kind::kOperand) p.read = operand_read_[p.index];
  }
  // The floor: every operand read once, every output written once (in-place outputs: the
  // update window only, approximated by what the kernel reads).
  int64_t bytes = 0;
  for (const KernelParam& p : spec_.params) {
    if (p.kind == KernelParam::Kind::kOperand && p.read) bytes += p.shape.byte_size();
    if (p.kind == KernelParam::Kind::kOutput) {
      bool in_place = false;
      for (const auto& [o, op] : spec_.in_place) in_place |= o == p.index;
      if (!in_place) bytes += p.shape.byte_size();
    }
  }
  spec_.min_bytes = bytes;
  std::string launch_comment;
  for (const KernelLaunch& l : spec_.launches)
    launch_comment += "\nlaunch " + l.entry + ": grid " + l.dims.grid.ToString() + ", block " +
                      l.dims.block.ToString() + ", dynamic shared " +
                      std::to_string(l.dims.shared_memory_bytes);
  source_.AddHeaderComment("config " + spec_.config.ToString() + launch_comment);
  spec_.source = source_.Render();
  spec_.headers = {{CodegenPreludeName(),
                    dialect_ == GpuDialect::kHip ? CodegenHipPrelude() : CodegenPrelude()}};
  if (spec_.launches.empty()) return Internal("kernel %", spec_.name, " has no launch");
  return spec_;
}

int DeclareThreadVar(CodeBuilder& code, const std::string& name, const std::string& expr,
                     int64_t max, int64_t multiple_of) {
  code.Line("const " + code.index_type() + " " + name + " = " + expr + ";");
  return code.DeclareVar(name, code.depth(), 0, max, multiple_of);
}

IExpr DeclareIndex(CodeBuilder& code, const std::string& name, const std::string& expr,
                   int64_t min, int64_t max, int64_t multiple_of) {
  std::string n = code.UniqueName(name);
  code.Line("const " + code.index_type() + " " + n + " = " + expr + ";");
  return IExpr::Var(code.DeclareVar(n, code.depth(), min, max, multiple_of));
}

StorePlan PlanStore(ElementalEmitter& em, const std::string& ptr, const Shape& shape,
                    const Index& index, std::string_view name_hint) {
  StorePlan plan;
  const LaneContext& lane = em.lane();
  if (lane.var < 0 || lane.width <= 1) return plan;
  CodeBuilder& code = em.code();
  IExpr off = em.Offset(shape, index);
  IExpr base = off.Without(lane.var);
  const int bytes = StorageBytes(shape.element_type()) * lane.width;
  if (off.Coefficient(lane.var) != 1 || code.MultipleOf(base) % lane.width != 0 || bytes > 16 ||
      (bytes & (bytes - 1)) != 0 || code.DepthOf(base) >= lane.depth)
    return plan;
  plan.vector = true;
  plan.base_expr = base;
  plan.vec_name = code.UniqueName(std::string(name_hint) + "_vec");
  // Declared just outside the lane loop.
  code.LineAt(lane.depth - 1, "kiln_vec<" + StorageType(shape.element_type()) + ", " +
                                  std::to_string(lane.width) + "> " + plan.vec_name + ";");
  (void)ptr;
  return plan;
}

void EmitStore(ElementalEmitter& em, const StorePlan& plan, const std::string& ptr,
               const Shape& shape, const Index& index, const Value& value) {
  CodeBuilder& code = em.code();
  const PrimitiveType t = shape.element_type();
  if (plan.vector) {
    code.Line(plan.vec_name + ".v[" + code.var(em.lane().var).name + "] = " +
              StoreConvert(t, value.expr) + ";");
    return;
  }
  IExpr off = em.Offset(shape, index);
  code.Line(ptr + "[" + code.Render(off) + "] = " + StoreConvert(t, value.expr) + ";");
}

void FinishStore(CodeBuilder& code, const StorePlan& plan, const std::string& ptr,
                 const Shape& shape, int width) {
  if (!plan.vector) return;
  std::string vec_type = "kiln_vec<" + StorageType(shape.element_type()) + ", " + std::to_string(width) + ">";
  code.Line("*reinterpret_cast<" + vec_type + "*>(" + ptr + " + " + code.Render(plan.base_expr) +
            ") = " + plan.vec_name + ";");
}

}  // namespace kiln::codegen
