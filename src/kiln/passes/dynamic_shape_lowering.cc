#include "kiln/passes/dynamic_shape_lowering.h"

#include <optional>
#include <unordered_map>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {

namespace {

bool IsCustomCall(const HloInstruction& instr, std::string_view target) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == target;
}

bool IsStatic(const Shape& s) { return s.IsArray() && !s.is_dynamic(); }

bool IsStaticDynamicConvolution(const HloInstruction& instr) {
  return IsCustomCall(instr, "DynamicConvolutionForward") && instr.operand_count() == 2 &&
         IsStatic(instr.shape()) && IsStatic(instr.operand(0)->shape()) &&
         IsStatic(instr.operand(1)->shape()) && instr.attrs().convolution_dimension_numbers;
}

// One s32 size per dimension; nullptr: the bound.
using Sizes = std::vector<HloInstruction*>;

class Lowering {
 public:
  explicit Lowering(HloComputation* c) : c_(c), editor_(c) {}

  StatusOr<bool> Run() {
    bool changed = false;
    for (HloInstruction* instr : c_->MakeInstructionPostOrder()) {
      if (instr->shape().IsArray() && instr->shape().is_dynamic()) KILN_RETURN_IF_ERROR(Track(instr));
      if (IsCustomCall(*instr, "PadToStatic")) {
        KILN_RETURN_IF_ERROR(LowerPadToStatic(instr));
        changed = true;
      } else if (IsStaticDynamicConvolution(*instr)) {
        // XLA's DynamicConvolutionForward with static shapes: the convolution it describes.
        auto conv = std::make_unique<HloInstruction>(HloOpcode::kConvolution, instr->shape());
        conv->AppendOperand(instr->operand(0));
        conv->AppendOperand(instr->operand(1));
        const HloAttributes& a = instr->attrs();
        HloAttributes& b = conv->attrs();
        b.window = a.window;
        b.convolution_dimension_numbers = a.convolution_dimension_numbers;
        b.feature_group_count = a.feature_group_count;
        b.batch_group_count = a.batch_group_count;
        b.precision_config = a.precision_config;
        HloInstruction* replacement = editor_.Add(std::move(conv), instr);
        MoveControlDependencies(instr, replacement);
        KILN_RETURN_IF_ERROR(ReplaceInstruction(instr, replacement));
        changed = true;
      } else if (instr->opcode() == HloOpcode::kGetDimensionSize) {
        KILN_RETURN_IF_ERROR(LowerGetDimensionSize(instr));
        changed = true;
      }
    }
    // The producers last: their sizes were read above.
    for (HloInstruction* instr : c_->MakeInstructionPostOrder()) {
      const bool slice = IsCustomCall(*instr, "SliceToDynamic");
      const bool set_size = instr->opcode() == HloOpcode::kSetDimensionSize;
      if (!slice && !set_size && !IsCustomCall(*instr, "SetBound")) continue;
      if (instr->operand_count() < 1) continue;  // shape inference refuses it
      HloInstruction* data = instr->operand(0);
      HloInstruction* replacement = data;
      if (!Shape::Compatible(data->shape(), instr->shape())) replacement = Copy(data, instr->shape(), instr);
      MoveControlDependencies(instr, replacement);
      KILN_RETURN_IF_ERROR(ReplaceInstruction(instr, replacement));
      changed = true;
    }
    return changed;
  }

 private:
  HloInstruction* Add(HloOpcode op, Shape shape, std::initializer_list<HloInstruction*> operands,
                      const HloInstruction* like) {
    auto i = std::make_unique<HloInstruction>(op, std::move(shape));
    for (HloInstruction* o : operands) i->AppendOperand(o);
    return editor_.Add(std::move(i), like);
  }
  HloInstruction* Copy(HloInstruction* x, Shape shape, const HloInstruction* like) {
    return Add(HloOpcode::kCopy, std::move(shape), {x}, like);
  }
  HloInstruction* S32(int64_t v, const HloInstruction* like) {
    return editor_.ScalarConstant(PrimitiveType::kS32, static_cast<double>(v), like);
  }
  // clamp(0, s, bound) as s32.
  StatusOr<HloInstruction*> ClampedSize(HloInstruction* s, int64_t bound, const HloInstruction* like) {
    if (s->shape().element_type() != PrimitiveType::kS32) {
      KILN_ASSIGN_OR_RETURN(s, editor_.Convert(s, PrimitiveType::kS32, nullptr, like));
    }
    HloInstruction* c = Add(HloOpcode::kClamp, Shape::Scalar(PrimitiveType::kS32), {S32(0, like), s, S32(bound, like)}, like);
    return c;
  }

  // The sizes of `instr` (a dynamic array) when the rules give them (dynamic_shape_lowering.h).
  Status Track(HloInstruction* instr) {
    const Shape& s = instr->shape();
    const int64_t rank = s.rank();
    Sizes out(rank, nullptr);
    if (IsCustomCall(*instr, "SliceToDynamic")) {
      if (instr->operand_count() != rank + 1) return OkStatus();
      for (int64_t d = 0; d < rank; ++d)
        if (s.is_dynamic_dimension(d)) {
          KILN_ASSIGN_OR_RETURN(out[d], ClampedSize(instr->operand(1 + d), s.dimensions(d), instr));
        }
    } else if (instr->opcode() == HloOpcode::kSetDimensionSize) {
      if (instr->attrs().dimensions.size() != 1 || instr->operand_count() != 2) return OkStatus();
      const std::optional<Sizes> base = Known(instr->operand(0));
      if (!base || static_cast<int64_t>(base->size()) != rank) return OkStatus();
      out = *base;
      const int64_t d = instr->attrs().dimensions[0];
      if (d < 0 || d >= rank) return OkStatus();
      KILN_ASSIGN_OR_RETURN(out[d], ClampedSize(instr->operand(1), s.dimensions(d), instr));
    } else if (instr->opcode() == HloOpcode::kParameter || instr->opcode() == HloOpcode::kConstant) {
      if (instr->opcode() == HloOpcode::kParameter && !c_->IsEntryComputation()) return OkStatus();
    } else if (IsCustomCall(*instr, "SetBound") || instr->opcode() == HloOpcode::kCopy || instr->IsElementwise()) {
      for (HloInstruction* op : instr->operands()) {
        if (!op->shape().IsArray() || op->shape().rank() != rank || !op->shape().is_dynamic()) continue;
        const std::optional<Sizes> from = Known(op);
        if (!from) return OkStatus();  // unknown
        for (int64_t d = 0; d < rank; ++d) {
          HloInstruction* f = (*from)[d];
          if (!op->shape().is_dynamic_dimension(d) || f == nullptr || f == out[d]) continue;
          if (out[d] == nullptr) {
            out[d] = f;
          } else {  // operands that should agree: the smaller, as the evaluator takes
            KILN_ASSIGN_OR_RETURN(out[d], editor_.Binary(HloOpcode::kMinimum, out[d], f, nullptr, instr));
          }
        }
      }
    } else {
      return OkStatus();  // an op whose result size is not followed
    }
    sizes_[instr] = std::move(out);
    return OkStatus();
  }

  std::optional<Sizes> Known(const HloInstruction* instr) const {
    if (!instr->shape().IsArray()) return std::nullopt;
    if (!instr->shape().is_dynamic()) return Sizes(instr->shape().rank(), nullptr);
    auto it = sizes_.find(instr);
    if (it == sizes_.end()) return std::nullopt;
    return it->second;
  }

  StatusOr<Sizes> Need(const HloInstruction* reader, const HloInstruction* x) const {
    std::optional<Sizes> s = Known(x);
    if (s) return *s;
    std::string where = x->location().line > 0 ? StrCat(" at line ", x->location().line) : std::string();
    return Unimplemented("unsupported: the dynamic size of %", x->name(), " (", HloOpcodeString(x->opcode()), where,
                         ", ", x->shape().ToString(false), ") read by %", reader->name(),
                         " is not known: kiln follows dynamic sizes from SliceToDynamic, set-dimension-size "
                         "and entry parameters through SetBound, copy and elementwise ops only");
  }

  Status LowerPadToStatic(HloInstruction* instr) {
    if (instr->operand_count() != 1 || !instr->shape().IsTuple()) return OkStatus();  // shape inference refuses it
    HloInstruction* d = instr->operand(0);
    KILN_ASSIGN_OR_RETURN(Sizes sizes, Need(instr, d));
    const Shape& ds = d->shape();
    const Shape& static_shape = instr->shape().tuple_shapes(0);
    HloInstruction* data = Copy(d, static_shape, instr);
    HloInstruction* mask = nullptr;
    const Shape pred = ArrayShapeLike(PrimitiveType::kPred, ds.dimensions(), static_shape);
    const Shape s32 = ArrayShapeLike(PrimitiveType::kS32, ds.dimensions(), static_shape);
    for (int64_t k = 0; k < ds.rank(); ++k) {
      if (sizes[k] == nullptr) continue;
      HloInstruction* iota = Add(HloOpcode::kIota, s32, {}, instr);
      iota->attrs().iota_dimension = k;
      KILN_ASSIGN_OR_RETURN(HloInstruction* limit, editor_.BroadcastScalar(sizes[k], s32, instr));
      HloInstruction* lt = Add(HloOpcode::kCompare, pred, {iota, limit}, instr);
      lt->attrs().comparison_direction = ComparisonDirection::kLt;
      if (mask == nullptr) {
        mask = lt;
      } else {
        KILN_ASSIGN_OR_RETURN(mask, editor_.Binary(HloOpcode::kAnd, mask, lt, &pred, instr));
      }
    }
    if (mask != nullptr) {
      HloInstruction* zero = editor_.ScalarConstant(static_shape.element_type(), 0, instr);
      KILN_ASSIGN_OR_RETURN(HloInstruction* zeros, editor_.BroadcastScalar(zero, static_shape, instr));
      data = Add(HloOpcode::kSelect, static_shape, {mask, data, zeros}, instr);
    }
    std::vector<HloInstruction*> elements{data};
    for (int64_t k = 0; k < ds.rank(); ++k) elements.push_back(sizes[k] ? sizes[k] : S32(ds.dimensions(k), instr));
    HloInstruction* t = editor_.Tuple(elements, instr);
    t->set_shape(instr->shape());  // keeps the declared layouts
    MoveControlDependencies(instr, t);
    return ReplaceInstruction(instr, t);
  }

  Status LowerGetDimensionSize(HloInstruction* instr) {
    if (instr->operand_count() != 1 || instr->attrs().dimensions.size() != 1) return OkStatus();
    const HloInstruction* x = instr->operand(0);
    const int64_t k = instr->attrs().dimensions[0];
    if (!x->shape().IsArray() || k < 0 || k >= x->shape().rank()) return OkStatus();
    HloInstruction* size = nullptr;
    if (x->shape().is_dynamic_dimension(k)) {
      KILN_ASSIGN_OR_RETURN(Sizes sizes, Need(instr, x));
      size = sizes[k];
    }
    if (size == nullptr) size = S32(x->shape().dimensions(k), instr);
    if (size->shape().element_type() != instr->shape().element_type()) {
      KILN_ASSIGN_OR_RETURN(size, editor_.Convert(size, instr->shape().element_type(), nullptr, instr));
    }
    MoveControlDependencies(instr, size);
    return ReplaceInstruction(instr, size);
  }

  HloComputation* c_;
  HloEditor editor_;
  std::unordered_map<const HloInstruction*, Sizes> sizes_;
};

bool HasWork(const HloComputation& c) {
  for (const HloInstruction* i : c.instructions())
    if (i->opcode() == HloOpcode::kGetDimensionSize || i->opcode() == HloOpcode::kSetDimensionSize ||
        IsCustomCall(*i, "SliceToDynamic") || IsCustomCall(*i, "PadToStatic") || IsCustomCall(*i, "SetBound") ||
        IsStaticDynamicConvolution(*i))
      return true;
  return false;
}

}  // namespace

StatusOr<bool> DynamicShapeLowering::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    if (!HasWork(*c)) continue;
    KILN_ASSIGN_OR_RETURN(bool ch, Lowering(c).Run());
    if (ch) KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
    changed |= ch;
  }
  return changed;
}

}  // namespace kiln
