// The ROCm backend behind the public API: "rocm", one device per visible AMD GPU. Compiling
// needs no GPU -- `kiln compile M.hlo --device rocm --target gfx942` produces the executable's
// code objects (RocmCompiler, rocm/compiler) for the target preset -- but nothing can run:
// no AMD GPU exists on kiln's machines, so RocmExecutable::can_execute() is false everywhere
// and Execute fails with FailedPrecondition (Note [Untested ROCm execution] in
// rocm/rocm_device.h). With a device, the target is its architecture and the autotuning
// factory (rocm/autotune) would measure on it; that path is compiled, not run.
//
// Flags: see RocmFlagHelp(). rocm_target=gfxNNN or a preset name (mi250x, mi300x) picks the
// target without a device (default gfx942, MI300X).
#pragma once

#include <memory>
#include <string>

#include "kiln/backend/backend.h"

namespace kiln::rocm {

std::unique_ptr<Backend> CreateRocmBackend(const BackendFlags& flags = {});
std::string RocmFlagHelp();

}  // namespace kiln::rocm
