// HloComputation: a named list of instructions with parameters and a root.
//
// The computation owns its instructions. Instructions are kept in the order they were added
// (for parsed text, the text's order); MakeInstructionPostOrder() gives a def-before-use order
// that also respects control dependencies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln {

class HloModule;

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}
  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // Adds an instruction (taking ownership) and returns it. A parameter instruction is also
  // registered as parameter number parameter_number().
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instr);
  // Removes an instruction that has no users and is not the root. Invalidates pointers to it.
  Status RemoveInstruction(HloInstruction* instr);

  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }
  // Instructions in insertion order.
  std::vector<HloInstruction*> instructions() const;
  std::vector<HloInstruction*> MakeInstructionPostOrder() const;

  HloInstruction* root_instruction() const { return root_; }
  void set_root_instruction(HloInstruction* root) { root_ = root; }

  int64_t num_parameters() const { return static_cast<int64_t>(parameters_.size()); }
  HloInstruction* parameter_instruction(int64_t i) const { return parameters_[i]; }
  const std::vector<HloInstruction*>& parameter_instructions() const { return parameters_; }

  HloModule* parent() const { return parent_; }
  void set_parent(HloModule* m) { parent_ = m; }
  bool IsEntryComputation() const;

  // execution_thread="..." of the computation ("" = main).
  const std::string& execution_thread() const { return execution_thread_; }
  void set_execution_thread(std::string t) { execution_thread_ = std::move(t); }

  // The instruction named `name`, or nullptr.
  HloInstruction* GetInstructionWithName(std::string_view name) const;

  // Program shape: parameter shapes and root shape.
  ProgramShape ComputeProgramShape() const;

  // Text form of the computation, as the printer writes it.
  std::string ToString() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<HloInstruction>> instructions_;
  std::vector<HloInstruction*> parameters_;
  HloInstruction* root_ = nullptr;
  HloModule* parent_ = nullptr;
  std::string execution_thread_;
};

}  // namespace kiln
