// Forwarding header: CloneModule moved to kiln/passes/module_clone.h (backend-neutral); the
// name stays available in kiln::cpu.
#pragma once

#include "kiln/passes/module_clone.h"

namespace kiln::cpu {
using ::kiln::CloneModule;
}  // namespace kiln::cpu
