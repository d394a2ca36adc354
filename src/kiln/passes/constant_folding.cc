#include "kiln/passes/constant_folding.h"

#include <functional>
#include <unordered_map>

#include "kiln/eval/evaluator.h"
#include "kiln/eval/kernels.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {
namespace {

bool IsFoldableOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kConstant: case HloOpcode::kParameter: case HloOpcode::kIota:
    case HloOpcode::kBroadcast: case HloOpcode::kTuple:
    case HloOpcode::kRng: case HloOpcode::kRngBitGenerator: case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kCustomCall: case HloOpcode::kInfeed: case HloOpcode::kOutfeed:
    case HloOpcode::kSend: case HloOpcode::kSendDone: case HloOpcode::kRecv:
    case HloOpcode::kRecvDone: case HloOpcode::kOptimizationBarrier: case HloOpcode::kDomain:
    case HloOpcode::kAddDependency: case HloOpcode::kAfterAll: case HloOpcode::kBitcast:
    case HloOpcode::kCopyStart: case HloOpcode::kCopyDone: case HloOpcode::kSetDimensionSize:
    case HloOpcode::kDynamicReshape: case HloOpcode::kReplicaId: case HloOpcode::kPartitionId:
      return false;
    default:
      return !IsCollectiveOpcode(op) && !IsAsyncOpcode(op);
  }
}

bool HasTokenOrOpaque(const Shape& s) {
  if (s.IsToken() || s.IsOpaque()) return true;
  if (s.IsTuple())
    for (const Shape& e : s.tuple_shapes())
      if (HasTokenOrOpaque(e)) return true;
  return false;
}

int64_t LeafElements(const Shape& s) {
  if (s.IsArray()) return s.num_elements();
  int64_t n = 0;
  if (s.IsTuple())
    for (const Shape& e : s.tuple_shapes()) n += LeafElements(e);
  return n;
}

// Whether a computation (transitively) does anything besides computing values.
class PurityCache {
 public:
  bool IsPure(const HloComputation* c) {
    auto it = cache_.find(c);
    if (it != cache_.end()) return it->second;
    cache_[c] = false;  // cycles (malformed) count as impure
    bool pure = true;
    for (const HloInstruction* i : c->instructions()) {
      if (HasSideEffect(*i) || i->opcode() == HloOpcode::kRng ||
          i->opcode() == HloOpcode::kRngBitGenerator || i->opcode() == HloOpcode::kCustomCall ||
          i->opcode() == HloOpcode::kInfeed) {
        pure = false;
        break;
      }
      for (const HloComputation* callee : i->called_computations())
        if (!IsPure(callee)) pure = false;
      if (!pure) break;
    }
    cache_[c] = pure;
    return pure;
  }

 private:
  std::unordered_map<const HloComputation*, bool> cache_;
};

// Array leaves of `literal` as constants, tuples rebuilt with tuple instructions.
HloInstruction* MaterializeLiteral(HloEditor& editor, Literal literal, const Shape& shape,
                                   const HloInstruction* like) {
  if (shape.IsTuple()) {
    std::vector<Literal> elems = literal.DecomposeTuple();
    std::vector<HloInstruction*> parts;
    for (size_t i = 0; i < elems.size(); ++i)
      parts.push_back(MaterializeLiteral(editor, std::move(elems[i]),
                                         shape.tuple_shapes(static_cast<int64_t>(i)), like));
    return editor.Tuple(parts, like);
  }
  if (shape.has_layout()) literal.set_layout(shape.layout());
  auto c = std::make_unique<HloInstruction>(HloOpcode::kConstant, shape);
  c->set_literal(std::move(literal));
  return editor.Add(std::move(c), like);
}

// The value of a constant, or of a tuple instruction built from constants (as folding a tuple
// result makes them, and as JAX builds while-loop initial states).
bool HasConstantValue(const HloInstruction* instr, int depth = 0) {
  if (instr->opcode() == HloOpcode::kConstant)
    return instr->has_literal() && !instr->literal_elided();
  if (instr->opcode() != HloOpcode::kTuple || depth > 8) return false;
  for (const HloInstruction* op : instr->operands())
    if (!HasConstantValue(op, depth + 1)) return false;
  return true;
}

Literal ConstantValue(const HloInstruction* instr) {
  if (instr->opcode() == HloOpcode::kConstant) return instr->literal();
  std::vector<Literal> elems;
  for (const HloInstruction* op : instr->operands()) elems.push_back(ConstantValue(op));
  return Literal::MakeTuple(std::move(elems));
}

}  // namespace

StatusOr<bool> ConstantFolding::Run(HloModule& module) {
  bool changed = false;
  const KernelRegistry& registry = KernelRegistry::Global();
  EvaluatorOptions eval_options;
  eval_options.max_loop_iterations = options_.max_while_iterations;
  PurityCache purity;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    HloEditor editor(c);
    bool computation_changed = false;
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      if (!IsFoldableOpcode(instr->opcode()) || instr->operand_count() == 0) continue;
      if (HasSideEffect(*instr) || !instr->control_predecessors().empty()) continue;
      if (HasTokenOrOpaque(instr->shape()) || instr->shape().is_dynamic()) continue;
      bool operands_constant = true;
      int64_t operand_elements = 0;
      for (HloInstruction* op : instr->operands()) {
        if (!HasConstantValue(op)) {
          operands_constant = false;
          break;
        }
        operand_elements += LeafElements(op->shape());
      }
      if (!operands_constant) continue;
      const int64_t result_elements = LeafElements(instr->shape());
      if (result_elements > options_.max_result_elements) continue;
      if (result_elements > operand_elements && result_elements > options_.max_growth_elements)
        continue;
      bool pure = true;
      for (const HloComputation* callee : instr->called_computations())
        if (!callee || !purity.IsPure(callee)) pure = false;
      if (!pure) continue;
      EvalKernel kernel = registry.Find(instr->opcode());
      if (!kernel) continue;

      std::vector<Literal> owned;  // values of tuple operands
      owned.reserve(instr->operand_count());
      std::vector<const Literal*> values;
      for (HloInstruction* op : instr->operands()) {
        if (op->opcode() == HloOpcode::kConstant) {
          values.push_back(&op->literal());
        } else {
          owned.push_back(ConstantValue(op));
          values.push_back(&owned.back());
        }
      }
      Evaluator evaluator(eval_options);
      StatusOr<Literal> result = kernel(*instr, values, evaluator);
      if (!result.ok()) continue;  // not foldable (unsupported, too many iterations, ...)
      if (!Shape::Compatible(result->shape(), instr->shape())) continue;
      HloInstruction* folded = MaterializeLiteral(editor, std::move(result).value(),
                                                  instr->shape(), instr);
      KILN_RETURN_IF_ERROR(ReplaceInstruction(instr, folded));
      computation_changed = true;
    }
    if (computation_changed) {
      KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln
