// Bounded dynamic arrays: SliceToDynamic, PadToStatic, SetBound and runtime-size tracking;
// DynamicConvolutionForward of static shapes (the convolution it describes)
// (Note [Dynamic sizes] in dynamic_shapes.h).
#include "kiln/eval/dynamic_shapes.h"

#include "kiln/eval/kernels.h"

#include <algorithm>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/eval_util.h"
#include "kiln/hlo/computation.h"

namespace kiln {

namespace {

std::vector<int64_t> Bounds(const Shape& s) { return s.dimensions(); }

int64_t ClampSize(int64_t v, int64_t bound) { return std::clamp<int64_t>(v, 0, bound); }

// Ops whose result has, per dimension, the size of their operands' (same-rank) dimension.
bool KeepsSizes(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kCustomCall) return instr.attrs().custom_call_target == "SetBound";
  if (instr.opcode() == HloOpcode::kCopy) return true;
  return instr.IsElementwise();
}

}  // namespace

StatusOr<std::vector<int64_t>> Evaluator::DynamicSizes(const HloInstruction& instr) const {
  const Shape& s = instr.shape();
  if (!s.IsArray()) return InvalidArgument("%", instr.name(), " is not an array: it has no dimension sizes");
  if (!s.is_dynamic()) return Bounds(s);
  auto it = dynamic_sizes_.find(&instr);
  if (it != dynamic_sizes_.end()) return it->second;
  const bool entry_parameter = instr.opcode() == HloOpcode::kParameter && instr.parent() == entry_;
  if (entry_parameter || instr.opcode() == HloOpcode::kConstant) return Bounds(s);
  return UnsupportedInstruction(
      instr, StrCat("the dynamic size of ", s.ToString(false),
                    " is not known: the evaluator follows dynamic sizes from SliceToDynamic, "
                    "set-dimension-size and entry parameters through SetBound, copy and "
                    "elementwise ops only"));
}

namespace eval_internal {

bool IsDynamicShapeCustomCall(std::string_view target) {
  return target == "SliceToDynamic" || target == "PadToStatic" || target == "SetBound" ||
         target == "DynamicConvolutionForward";
}

void TrackDynamicSizes(const HloInstruction& instr, std::span<const Literal* const> ops,
                       const Evaluator& e,
                       std::unordered_map<const HloInstruction*, std::vector<int64_t>>& sizes) {
  const Shape& s = instr.shape();
  const int64_t rank = s.rank();
  std::vector<int64_t> out = Bounds(s);
  if (instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == "SliceToDynamic") {
    if (static_cast<int64_t>(ops.size()) != rank + 1) return;  // the verifier refuses it
    for (int64_t d = 0; d < rank; ++d)
      if (s.is_dynamic_dimension(d)) out[d] = ClampSize(ops[1 + d]->GetAsInt64(0), s.dimensions(d));
  } else if (instr.opcode() == HloOpcode::kSetDimensionSize) {
    if (instr.attrs().dimensions.size() != 1 || ops.size() != 2) return;
    StatusOr<std::vector<int64_t>> base = e.DynamicSizes(*instr.operand(0));
    if (!base.ok() || static_cast<int64_t>(base->size()) != rank) {
      sizes.erase(&instr);
      return;
    }
    out = *base;
    const int64_t d = instr.attrs().dimensions[0];
    if (d < 0 || d >= rank) return;
    out[d] = ClampSize(ops[1]->GetAsInt64(0), s.dimensions(d));
  } else if (KeepsSizes(instr)) {
    for (const HloInstruction* op : instr.operands()) {
      if (!op->shape().IsArray() || op->shape().rank() != rank || !op->shape().is_dynamic()) continue;
      StatusOr<std::vector<int64_t>> from = e.DynamicSizes(*op);
      if (!from.ok()) {
        sizes.erase(&instr);  // unknown: whoever reads them is told so
        return;
      }
      for (int64_t d = 0; d < rank; ++d)
        if (op->shape().is_dynamic_dimension(d)) out[d] = std::min(out[d], (*from)[d]);
    }
  } else {
    sizes.erase(&instr);  // an op whose result size the evaluator does not follow
    return;
  }
  sizes[&instr] = std::move(out);
}

namespace {

// PadToStatic(d) -> (static array, s32 size per dimension): elements inside the sizes, zeros
// outside.
StatusOr<Literal> EvalPadToStatic(const HloInstruction& instr, std::span<const Literal* const> ops,
                                  Evaluator& e) {
  const Shape& rs = instr.shape();
  if (ops.size() != 1 || !ops[0]->shape().IsArray() || !rs.IsTuple() || rs.tuple_shapes_size() < 1)
    return UnsupportedInstruction(instr, "PadToStatic takes one array and returns (array, s32 sizes...)");
  const Literal& in = *ops[0];
  const int64_t rank = in.shape().rank();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, e.DynamicSizes(*instr.operand(0)));
  Literal data(rs.tuple_shapes(0));
  const int64_t n = in.element_count();
  if (data.element_count() != n || data.size_bytes() != in.size_bytes())
    return UnsupportedInstruction(instr, "PadToStatic's array must have its operand's bounds and type");
  const size_t width = n > 0 ? in.size_bytes() / static_cast<size_t>(n) : 0;
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) inside &= index[d] < sizes[d];
    if (inside) std::memcpy(data.untyped_data() + i * width, in.untyped_data() + i * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {  // row-major successor
      if (++index[d] < in.shape().dimensions(d)) break;
      index[d] = 0;
    }
  }
  std::vector<Literal> parts;
  parts.push_back(std::move(data));
  for (int64_t i = 1; i < rs.tuple_shapes_size(); ++i) {
    Literal size(rs.tuple_shapes(i));
    if (size.element_count() != 1 || i - 1 >= rank)
      return UnsupportedInstruction(instr, "PadToStatic returns one s32 scalar per dimension");
    size.SetFromInt64(0, sizes[i - 1]);
    parts.push_back(std::move(size));
  }
  return Literal::MakeTuple(std::move(parts));
}

// SliceToDynamic(x, sizes...) and SetBound(x): x's elements in the result's (dynamic) shape.
StatusOr<Literal> EvalKeepData(const HloInstruction& instr, std::span<const Literal* const> ops) {
  if (ops.empty() || !ops[0]->shape().IsArray() || !instr.shape().IsArray() ||
      ops[0]->shape().dimensions() != instr.shape().dimensions() ||
      ops[0]->shape().element_type() != instr.shape().element_type())
    return UnsupportedInstruction(instr, "the result must have operand 0's type and bounds");
  Literal out(instr.shape());
  std::memcpy(out.untyped_data(), ops[0]->untyped_data(), std::min(out.size_bytes(), ops[0]->size_bytes()));
  return out;
}

}  // namespace

std::optional<StatusOr<Literal>> EvalDynamicShapeCustomCall(const HloInstruction& instr,
                                                            std::span<const Literal* const> ops,
                                                            Evaluator& e) {
  const std::string& target = instr.attrs().custom_call_target;
  if (target == "PadToStatic") return EvalPadToStatic(instr, ops, e);
  if (target == "SliceToDynamic") return EvalKeepData(instr, ops);
  if (target == "DynamicConvolutionForward") {
    // XLA's dynamic padder's convolution: with static shapes it is the convolution its window
    // and dim_labels describe (the padding of a dynamic one depends on runtime sizes).
    if (ops.size() != 2 || !ops[0]->shape().IsArray() || !ops[1]->shape().IsArray() ||
        ops[0]->shape().is_dynamic() || ops[1]->shape().is_dynamic() || !instr.shape().IsArray() ||
        instr.shape().is_dynamic())
      return UnsupportedInstruction(instr, "DynamicConvolutionForward with dynamic shapes");
    return KernelRegistry::Global().Find(HloOpcode::kConvolution)(instr, ops, e);
  }
  if (target == "SetBound") {
    // A bound on a value (XLA's value inference reads it); the data passes through.
    if (ops.size() == 1 && Shape::Compatible(ops[0]->shape(), instr.shape())) return *ops[0];
    if (ops.size() == 1 && ops[0]->shape().IsArray()) return EvalKeepData(instr, ops);
    return UnsupportedInstruction(instr, "SetBound takes one operand and returns its shape");
  }
  return std::nullopt;
}

}  // namespace eval_internal
}  // namespace kiln
