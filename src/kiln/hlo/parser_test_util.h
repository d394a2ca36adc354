// Test helper (parser and printer tests): compares two modules instruction by instruction, so
// that "print, then parse" can be checked to lose nothing the IR holds.
#pragma once

#include <string>

#include "kiln/base/strings.h"
#include "kiln/hlo/module.h"

namespace kiln {
namespace testing_internal {

// "" if `a` and `b` hold the same IR (names of async wrapper computations aside), else a
// description of the first difference.
inline std::string CompareModules(const HloModule& a, const HloModule& b) {
  if (a.name() != b.name()) return "module name " + a.name() + " vs " + b.name();
  const HloModuleHeader& ha = a.header();
  const HloModuleHeader& hb = b.header();
  if (ha.is_scheduled != hb.is_scheduled || ha.input_output_alias != hb.input_output_alias ||
      ha.buffer_donors != hb.buffer_donors ||
      ha.alias_passthrough_params != hb.alias_passthrough_params ||
      ha.replica_count != hb.replica_count || ha.num_partitions != hb.num_partitions ||
      ha.frontend_attributes != hb.frontend_attributes ||
      ha.allow_spmd_sharding_propagation_to_parameters !=
          hb.allow_spmd_sharding_propagation_to_parameters ||
      ha.allow_spmd_sharding_propagation_to_output != hb.allow_spmd_sharding_propagation_to_output ||
      ha.spmd_output_sharding != hb.spmd_output_sharding ||
      ha.spmd_parameters_shardings != hb.spmd_parameters_shardings || ha.extra != hb.extra ||
      ha.entry_computation_layout.has_value() != hb.entry_computation_layout.has_value())
    return "module header";
  if (ha.entry_computation_layout &&
      ha.entry_computation_layout->ToString() != hb.entry_computation_layout->ToString())
    return "entry_computation_layout";
  const StackFrameIndex& sa = a.stack_frames();
  const StackFrameIndex& sb = b.stack_frames();
  if (sa.file_names != sb.file_names || sa.function_names != sb.function_names ||
      sa.file_locations.size() != sb.file_locations.size() ||
      sa.stack_frames.size() != sb.stack_frames.size())
    return "stack frames";
  for (size_t i = 0; i < sa.file_locations.size(); ++i) {
    const auto& x = sa.file_locations[i];
    const auto& y = sb.file_locations[i];
    if (x.file_name_id != y.file_name_id || x.function_name_id != y.function_name_id ||
        x.line != y.line || x.end_line != y.end_line || x.column != y.column ||
        x.end_column != y.end_column)
      return "file location " + std::to_string(i + 1);
  }
  for (size_t i = 0; i < sa.stack_frames.size(); ++i)
    if (sa.stack_frames[i].file_location_id != sb.stack_frames[i].file_location_id ||
        sa.stack_frames[i].parent_frame_id != sb.stack_frames[i].parent_frame_id)
      return "stack frame " + std::to_string(i + 1);
  if (!a.entry_computation() || !b.entry_computation()) return "missing entry";
  if (a.entry_computation()->name() != b.entry_computation()->name()) return "entry name";
  for (HloComputation* ca : a.computations()) {
    HloComputation* cb = b.GetComputationWithName(ca->name());
    if (!cb) {
      // Async wrapper computations may be renamed by the sugar form; they are compared through
      // their callers below.
      continue;
    }
    if (ca->execution_thread() != cb->execution_thread()) return "execution_thread of " + ca->name();
    if (ca->instruction_count() != cb->instruction_count())
      return "instruction count of " + ca->name();
    for (HloInstruction* ia : ca->instructions()) {
      HloInstruction* ib = cb->GetInstructionWithName(ia->name());
      std::string where = ca->name() + "/" + ia->name() + ": ";
      if (!ib) return where + "missing";
      if (ia->opcode() != ib->opcode()) return where + "opcode";
      if (!(ia->shape() == ib->shape()) || ia->shape().ToString() != ib->shape().ToString())
        return where + "shape " + ia->shape().ToString() + " vs " + ib->shape().ToString();
      if (!(ia->attrs() == ib->attrs())) return where + "attributes";
      if (!(ia->metadata() == ib->metadata())) return where + "metadata";
      if (ia->sharding() != ib->sharding()) return where + "sharding";
      if (ia->frontend_attributes() != ib->frontend_attributes()) return where + "frontend_attributes";
      if (!(ia->backend_config() == ib->backend_config())) return where + "backend_config";
      if (ia->parameter_number() != ib->parameter_number()) return where + "parameter number";
      if (ia->IsRoot() != ib->IsRoot()) return where + "root";
      if (ia->has_literal() != ib->has_literal() ||
          (ia->has_literal() && !ia->literal().BitwiseEquals(ib->literal())))
        return where + "literal";
      if (ia->operand_count() != ib->operand_count()) return where + "operand count";
      for (int64_t k = 0; k < ia->operand_count(); ++k)
        if (ia->operand(k)->name() != ib->operand(k)->name()) return where + "operand " + std::to_string(k);
      if (ia->control_predecessors().size() != ib->control_predecessors().size())
        return where + "control predecessors";
      for (size_t k = 0; k < ia->control_predecessors().size(); ++k)
        if (ia->control_predecessors()[k]->name() != ib->control_predecessors()[k]->name())
          return where + "control predecessor " + std::to_string(k);
      if (ia->called_computations().size() != ib->called_computations().size())
        return where + "called computation count";
      for (size_t k = 0; k < ia->called_computations().size(); ++k) {
        const HloComputation* x = ia->called_computations()[k];
        const HloComputation* y = ib->called_computations()[k];
        if (!x || !y) return where + "null called computation";
        if (x->name() == y->name()) continue;
        // A renamed async wrapper: same structure.
        if (x->instruction_count() != y->instruction_count() || !x->root_instruction() ||
            !y->root_instruction() ||
            x->root_instruction()->opcode() != y->root_instruction()->opcode() ||
            !(x->root_instruction()->attrs() == y->root_instruction()->attrs()) ||
            x->execution_thread() != y->execution_thread())
          return where + "called computation " + x->name() + " vs " + y->name();
      }
    }
  }
  return "";
}

}  // namespace testing_internal
}  // namespace kiln
