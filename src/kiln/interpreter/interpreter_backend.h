// The reference evaluator (eval/evaluator.h) as a backend of the public API: "interpreter",
// one host device. Compile keeps a copy of the module; every Execute evaluates it afresh,
// exactly and slowly, on one thread. The oracle every other backend is checked against is
// thereby just another device.
//
// Flags (CompileOptions::flags):
//   interpreter_max_loop_iterations=N   fail a while loop after N iterations (default: no limit)
#pragma once

#include <memory>

#include "kiln/backend/backend.h"

namespace kiln::interpreter {

std::unique_ptr<Backend> CreateInterpreterBackend(const BackendFlags& flags = {});

}  // namespace kiln::interpreter
