// Cloning instructions and computations (used by inlining, fusion and other rewrites).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/instruction.h"

namespace kiln {

// A copy of `instr` with the given shape, operands and name: opcode, attributes, literal,
// parameter number, metadata, sharding, frontend attributes, backend config, location and
// called computations (shared, not cloned) are copied; users and control edges are not.
std::unique_ptr<HloInstruction> CloneInstruction(const HloInstruction& instr, const Shape& shape,
                                                 std::span<HloInstruction* const> operands,
                                                 std::string name);

// A deep copy of `computation`'s instructions (called computations are shared) named
// `name`. Instruction names get `suffix` appended when it is not empty.
std::unique_ptr<HloComputation> CloneComputation(const HloComputation& computation,
                                                 std::string name, std::string_view suffix = "");

}  // namespace kiln
