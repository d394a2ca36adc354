#include "kiln/passes/module_clone.h"

#include <unordered_map>

#include "kiln/hlo/clone.h"

namespace kiln {

std::unique_ptr<HloModule> CloneModule(const HloModule& module) {
  auto clone = std::make_unique<HloModule>(module.name());
  clone->header() = module.header();
  clone->stack_frames() = module.stack_frames();
  std::unordered_map<const HloComputation*, HloComputation*> map;
  for (const HloComputation* c : module.computations()) {
    HloComputation* copy = clone->AddComputation(CloneComputation(*c, c->name()));
    map[c] = copy;
  }
  // CloneComputation shares called computations with the original: point them at the copies.
  for (const auto& [old_c, new_c] : map) {
    (void)old_c;
    for (HloInstruction* instr : new_c->instructions())
      for (int64_t i = 0; i < static_cast<int64_t>(instr->called_computations().size()); ++i) {
        auto it = map.find(instr->called_computations()[i]);
        if (it != map.end()) instr->set_called_computation(i, it->second);
      }
  }
  if (module.entry_computation()) clone->set_entry_computation(map.at(module.entry_computation()));
  return clone;
}

}  // namespace kiln
