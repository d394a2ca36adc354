// CloneModule: a deep copy of an HloModule (every computation, the header, the stack-frame
// tables). The CPU compiler rewrites the module it compiles, so callers that keep theirs (the
// `kiln` tool, the differential suite) compile a clone.
#pragma once

#include <memory>

#include "kiln/hlo/module.h"

namespace kiln::cpu {

// Instruction and computation names, attributes, literals (shared, they are immutable),
// metadata and control dependencies are kept; called computations point into the copy.
std::unique_ptr<HloModule> CloneModule(const HloModule& module);

}  // namespace kiln::cpu
