// CloneModule: a deep copy of an HloModule (every computation, the header, the stack-frame
// tables). The CPU and GPU compilers rewrite the module they compile, so callers that keep theirs
// (the `kiln` tool, the differential suite) compile a clone. (cpu/module_clone.h forwards here.)
#pragma once

#include <memory>

#include "kiln/hlo/module.h"

namespace kiln {

// Instruction and computation names, attributes, literals (shared, they are immutable),
// metadata and control dependencies are kept; called computations point into the copy.
std::unique_ptr<HloModule> CloneModule(const HloModule& module);

}  // namespace kiln
