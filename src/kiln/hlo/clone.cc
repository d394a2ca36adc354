#include "kiln/hlo/clone.h"

#include <unordered_map>

namespace kiln {

std::unique_ptr<HloInstruction> CloneInstruction(const HloInstruction& instr, const Shape& shape,
                                                 std::span<HloInstruction* const> operands,
                                                 std::string name) {
  auto c = std::make_unique<HloInstruction>(instr.opcode(), shape, std::move(name));
  c->set_parameter_number(instr.parameter_number());
  if (instr.has_literal()) c->set_literal(instr.literal());
  c->set_literal_elided(instr.literal_elided());
  c->attrs() = instr.attrs();
  c->metadata() = instr.metadata();
  c->set_sharding(instr.sharding());
  c->frontend_attributes() = instr.frontend_attributes();
  c->backend_config() = instr.backend_config();
  c->set_location(instr.location());
  for (HloComputation* callee : instr.called_computations()) c->AppendCalledComputation(callee);
  for (HloInstruction* op : operands) c->AppendOperand(op);
  return c;
}

std::unique_ptr<HloComputation> CloneComputation(const HloComputation& computation,
                                                 std::string name, std::string_view suffix) {
  auto clone = std::make_unique<HloComputation>(std::move(name));
  clone->set_execution_thread(computation.execution_thread());
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  std::vector<HloInstruction*> new_operands;
  for (HloInstruction* instr : computation.MakeInstructionPostOrder()) {
    new_operands.clear();
    for (HloInstruction* op : instr->operands()) new_operands.push_back(map.at(op));
    HloInstruction* c = clone->AddInstruction(
        CloneInstruction(*instr, instr->shape(), new_operands, instr->name() + std::string(suffix)));
    map[instr] = c;
  }
  for (HloInstruction* instr : computation.instructions())
    for (HloInstruction* succ : instr->control_successors()) map.at(instr)->AddControlDependencyTo(map.at(succ));
  if (computation.root_instruction()) clone->set_root_instruction(map.at(computation.root_instruction()));
  return clone;
}

}  // namespace kiln
