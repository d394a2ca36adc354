// Scalar computations: ScalarProgram (compiled straight-line form) and Evaluator's
// EvaluateScalar / GetScalarProgram, the fast path for reducers, comparators and combiners.
#include <cstring>
#include <unordered_map>

#include "kiln/eval/evaluator.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln {

namespace {

bool IsScalarArray(const Shape& s) { return s.IsArray() && s.rank() == 0; }

}  // namespace

std::unique_ptr<ScalarProgram> ScalarProgram::Compile(const HloComputation& computation) {
  const HloInstruction* root = computation.root_instruction();
  if (!root) return nullptr;
  for (int64_t i = 0; i < computation.num_parameters(); ++i) {
    const HloInstruction* p = computation.parameter_instruction(i);
    if (!p || !IsScalarArray(p->shape())) return nullptr;
  }
  auto program = std::unique_ptr<ScalarProgram>(new ScalarProgram());
  std::unordered_map<const HloInstruction*, int> slot_of;
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  for (const HloInstruction* instr : order) {
    if (instr == root && instr->opcode() == HloOpcode::kTuple) continue;
    if (!IsScalarArray(instr->shape())) return nullptr;
    int slot = static_cast<int>(program->constants_.size());
    program->constants_.emplace_back();
    std::memset(program->constants_.back().bytes, 0, 16);
    slot_of[instr] = slot;
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        break;
      case HloOpcode::kConstant: {
        if (!instr->has_literal() || instr->literal_elided()) return nullptr;
        const Literal& l = instr->literal();
        if (!IsScalarArray(l.shape()) || l.shape().element_type() != instr->shape().element_type())
          return nullptr;
        std::memcpy(program->constants_.back().bytes, l.untyped_data(), l.size_bytes());
        program->constant_slots_.push_back(slot);
        break;
      }
      case HloOpcode::kCopy:
      case HloOpcode::kBitcast:
      case HloOpcode::kReshape:
      case HloOpcode::kBroadcast: {
        // Scalar-to-scalar identities: share the operand's slot.
        if (instr->operand_count() != 1 ||
            instr->operand(0)->shape().element_type() != instr->shape().element_type() ||
            !IsScalarArray(instr->operand(0)->shape()))
          return nullptr;
        program->constants_.pop_back();
        slot_of[instr] = slot_of.at(instr->operand(0));
        break;
      }
      default: {
        if (!instr->IsElementwise() || instr->opcode() == HloOpcode::kMap) return nullptr;
        if (instr->operand_count() < 1 || instr->operand_count() > 3) return nullptr;
        StatusOr<eval_internal::ElementFn> fn = eval_internal::ResolveElementFn(*instr);
        if (!fn.ok()) return nullptr;
        Op op;
        op.fn = *fn;
        op.instr = instr;
        op.num_in = static_cast<int>(instr->operand_count());
        for (int k = 0; k < 3; ++k) op.in[k] = -1;
        for (int k = 0; k < op.num_in; ++k) {
          auto it = slot_of.find(instr->operand(k));
          if (it == slot_of.end()) return nullptr;
          op.in[k] = it->second;
        }
        op.out = slot;
        program->ops_.push_back(op);
        break;
      }
    }
  }
  for (int64_t i = 0; i < computation.num_parameters(); ++i) {
    const HloInstruction* p = computation.parameter_instruction(i);
    program->param_slots_.push_back(slot_of.at(p));
    program->param_types_.push_back(p->shape().element_type());
    program->param_widths_.push_back(PrimitiveByteWidth(p->shape().element_type()));
  }
  auto add_result = [&](const HloInstruction* r) -> bool {
    auto it = slot_of.find(r);
    if (it == slot_of.end()) return false;
    program->result_slots_.push_back(it->second);
    program->result_types_.push_back(r->shape().element_type());
    program->result_widths_.push_back(PrimitiveByteWidth(r->shape().element_type()));
    return true;
  };
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* e : root->operands())
      if (!add_result(e)) return nullptr;
  } else if (!add_result(root)) {
    return nullptr;
  }

  // One op reading only parameters and writing the single result: callable directly.
  if (program->ops_.size() == 1 && program->result_slots_.size() == 1 &&
      program->ops_[0].out == program->result_slots_[0]) {
    const Op& op = program->ops_[0];
    std::vector<int> params;
    for (int k = 0; k < op.num_in; ++k) {
      int param = -1;
      for (size_t p = 0; p < program->param_slots_.size(); ++p)
        if (program->param_slots_[p] == op.in[k]) param = static_cast<int>(p);
      if (param < 0) {
        params.clear();
        break;
      }
      params.push_back(param);
    }
    if (static_cast<int>(params.size()) == op.num_in) {
      program->single_op_ = op.fn;
      program->single_op_params_ = params;
      program->single_op_instr_ = op.instr;
      program->is_float_add_ =
          op.instr->opcode() == HloOpcode::kAdd && program->param_slots_.size() == 2 &&
          params.size() == 2 && params[0] != params[1] &&
          IsFloatingPointType(op.instr->shape().element_type());
    }
  }
  return program;
}

void ScalarProgram::Run(std::span<const void* const> args, std::span<void* const> results) const {
  // Small programs run on a stack register file.
  constexpr size_t kStackSlots = 32;
  Slot stack_slots[kStackSlots];
  std::vector<Slot> heap_slots;
  Slot* slots = stack_slots;
  if (constants_.size() > kStackSlots) {
    heap_slots.resize(constants_.size());
    slots = heap_slots.data();
  }
  // Only constant slots need their initial contents; the rest are written before being read.
  for (int c : constant_slots_) slots[c] = constants_[c];
  for (size_t i = 0; i < param_slots_.size(); ++i)
    std::memcpy(slots[param_slots_[i]].bytes, args[i], param_widths_[i]);
  for (const Op& op : ops_) {
    const void* in[3] = {op.in[0] >= 0 ? slots[op.in[0]].bytes : nullptr,
                         op.in[1] >= 0 ? slots[op.in[1]].bytes : nullptr,
                         op.in[2] >= 0 ? slots[op.in[2]].bytes : nullptr};
    op.fn(op.instr, in, slots[op.out].bytes);
  }
  for (size_t j = 0; j < result_slots_.size(); ++j)
    std::memcpy(results[j], slots[result_slots_[j]].bytes, result_widths_[j]);
}

const ScalarProgram* Evaluator::GetScalarProgram(const HloComputation& computation) {
  auto it = scalar_programs_.find(&computation);
  if (it != scalar_programs_.end()) return it->second.get();
  std::shared_ptr<const ScalarProgram> p = ScalarProgram::Compile(computation);
  const ScalarProgram* raw = p.get();
  scalar_programs_.emplace(&computation, std::move(p));
  return raw;
}

StatusOr<Literal> Evaluator::EvaluateScalar(const HloComputation& computation,
                                            std::span<const Literal* const> args) {
  const ScalarProgram* program = GetScalarProgram(computation);
  bool args_fit = program && static_cast<int>(args.size()) == program->num_parameters();
  if (args_fit) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i]->shape().IsArray() || args[i]->element_count() != 1 ||
          args[i]->shape().rank() != 0 ||
          args[i]->shape().element_type() != program->parameter_type(static_cast<int>(i))) {
        args_fit = false;
        break;
      }
    }
  }
  if (!args_fit) return Evaluate(computation, args);

  const void* in[16];
  std::vector<const void*> in_heap;
  const void** in_ptr = in;
  if (args.size() > 16) {
    in_heap.resize(args.size());
    in_ptr = in_heap.data();
  }
  for (size_t i = 0; i < args.size(); ++i) in_ptr[i] = args[i]->untyped_data();

  const int n = program->num_results();
  std::vector<Literal> outs;
  outs.reserve(n);
  std::vector<void*> out_ptrs(n);
  for (int j = 0; j < n; ++j) {
    outs.emplace_back(Shape::ArrayWithDefaultLayout(program->result_type(j), {}));
    out_ptrs[j] = outs.back().untyped_data();
  }
  program->Run({in_ptr, args.size()}, out_ptrs);
  if (computation.root_instruction()->opcode() == HloOpcode::kTuple)
    return Literal::MakeTuple(std::move(outs));
  return std::move(outs[0]);
}

}  // namespace kiln
