#include "kiln/eval/output_traits.h"

#include <string>
#include <unordered_map>

#include "kiln/hlo/computation.h"

namespace kiln {

namespace {

using Leaves = std::vector<OutputTraits>;  // one per array leaf of a value (Shape::LeafCount)

bool IsF32Product(PrimitiveType t) { return t == PrimitiveType::kF32 || t == PrimitiveType::kC64; }

// A dot or convolution that a GPU may run in TF32, or a custom call on f32/c64 data.
bool IsTf32ProductSource(const HloInstruction& instr) {
  bool f32_operand = false;
  for (const HloInstruction* op : instr.operands())
    if (op->shape().IsArray() && IsF32Product(op->shape().element_type())) f32_operand = true;
  if (!f32_operand) return false;
  switch (instr.opcode()) {
    case HloOpcode::kCustomCall: return true;
    case HloOpcode::kDot:
    case HloOpcode::kRaggedDot:
    case HloOpcode::kScaledDot:
    case HloOpcode::kConvolution: {
      const PrecisionConfig& pc = instr.attrs().precision_config;
      for (Precision p : pc.operand_precision)
        if (p == Precision::kHighest) return false;
      if (pc.algorithm.rfind("dot_f32_f32_f32", 0) == 0) return false;
      return true;
    }
    default: return false;
  }
}

// Data movement: every output element is one of the operands' elements, unchanged.
bool MovesData(HloOpcode op) {
  switch (op) {
    case HloOpcode::kCopy:
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kBroadcast:
    case HloOpcode::kSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kReverse:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kGather:
    case HloOpcode::kSelect:
    // Exactly specified conversions of one value.
    case HloOpcode::kConvert:
    case HloOpcode::kBitcastConvert:
    case HloOpcode::kReducePrecision: return true;
    default: return false;
  }
}

class Analysis {
 public:
  Leaves Run(const HloComputation& comp, const std::vector<Leaves>& params) {
    std::unordered_map<const HloInstruction*, Leaves> value;
    for (const HloInstruction* instr : comp.MakeInstructionPostOrder())
      value[instr] = Visit(*instr, params, value);
    const HloInstruction* root = comp.root_instruction();
    return root ? value[root] : Leaves{};
  }

 private:
  Leaves Visit(const HloInstruction& instr, const std::vector<Leaves>& params,
               std::unordered_map<const HloInstruction*, Leaves>& value) {
    const int64_t n = instr.shape().LeafCount();
    auto operand = [&](int64_t i) -> const Leaves& { return value[instr.operand(i)]; };
    switch (instr.opcode()) {
      case HloOpcode::kParameter: {
        const int64_t k = instr.parameter_number();
        if (k >= 0 && k < static_cast<int64_t>(params.size()) &&
            static_cast<int64_t>(params[k].size()) == n)
          return params[k];
        return Leaves(n, OutputTraits{true, false});
      }
      case HloOpcode::kConstant:
      case HloOpcode::kIota: return Leaves(n, OutputTraits{true, false});
      case HloOpcode::kTuple: {
        Leaves out;
        for (int64_t i = 0; i < instr.operand_count(); ++i)
          out.insert(out.end(), operand(i).begin(), operand(i).end());
        if (static_cast<int64_t>(out.size()) == n) return out;
        break;
      }
      case HloOpcode::kGetTupleElement: {
        const Shape& t = instr.operand(0)->shape();
        const int64_t index = instr.attrs().tuple_index;
        const Leaves& in = operand(0);
        if (!t.IsTuple() || index < 0 || index >= t.tuple_shapes_size()) break;
        int64_t offset = 0;
        for (int64_t j = 0; j < index; ++j) offset += t.tuple_shapes(j).LeafCount();
        if (offset + n > static_cast<int64_t>(in.size())) break;
        return Leaves(in.begin() + offset, in.begin() + offset + n);
      }
      case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kAddDependency:
      case HloOpcode::kDomain:
        if (static_cast<int64_t>(operand(0).size()) == n) return operand(0);
        break;
      case HloOpcode::kCall:
      case HloOpcode::kFusion:
        if (instr.called_computations().size() == 1) {
          std::vector<Leaves> args;
          for (int64_t i = 0; i < instr.operand_count(); ++i) args.push_back(operand(i));
          Leaves out = Run(*instr.called_computations()[0], args);
          if (static_cast<int64_t>(out.size()) == n) return out;
        }
        break;
      default: break;
    }
    // Everything else: one result computed from all operands.
    OutputTraits t;
    t.exact = MovesData(instr.opcode());
    t.uses_f32_products = IsTf32ProductSource(instr);
    for (const HloInstruction* op : instr.operands())
      for (const OutputTraits& o : value[op]) {
        t.exact = t.exact && o.exact;
        t.uses_f32_products = t.uses_f32_products || o.uses_f32_products;
      }
    for (const HloComputation* c : instr.called_computations()) {
      t.exact = false;  // loops, conditionals, reductions, maps, sorts: not looked into
      if (ContainsTf32Product(*c)) t.uses_f32_products = true;
    }
    Leaves out(n, t);
    // Integer and pred leaves are exact whatever computed them (compared exactly anyway).
    ForEachArrayLeaf(instr.shape(), [&](int64_t i, const Shape& leaf) {
      if (leaf.element_type() == PrimitiveType::kPred || IsIntegralType(leaf.element_type()))
        out[i].exact = true;
    });
    return out;
  }

  template <typename F>
  static void ForEachArrayLeaf(const Shape& shape, F&& f) {
    int64_t next = 0;
    auto walk = [&](auto& self, const Shape& s) -> void {
      if (s.IsTuple()) {
        for (const Shape& e : s.tuple_shapes()) self(self, e);
      } else if (s.IsArray()) {
        f(next++, s);
      }
    };
    walk(walk, shape);
  }

  bool ContainsTf32Product(const HloComputation& comp) {
    auto it = contains_.find(&comp);
    if (it != contains_.end()) return it->second;
    contains_[&comp] = false;  // a cycle (invalid module) stops here
    bool found = false;
    for (const HloInstruction* instr : comp.instructions()) {
      if (IsTf32ProductSource(*instr)) found = true;
      for (const HloComputation* c : instr->called_computations())
        if (ContainsTf32Product(*c)) found = true;
      if (found) break;
    }
    contains_[&comp] = found;
    return found;
  }

  std::unordered_map<const HloComputation*, bool> contains_;
};

}  // namespace

std::vector<OutputTraits> AnalyzeOutputs(const HloModule& module) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return {};
  Analysis a;
  return a.Run(*entry, {});
}

}  // namespace kiln
