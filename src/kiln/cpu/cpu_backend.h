// The CPU backend (CpuCompiler + CpuExecutable) behind the public API: "cpu", one host device.
//
// Buffers are host memory (HostBuffer). Execute passes the argument buffers' memory to the
// executable as is (no copy); results are views of the run's memory, kept alive by the
// buffers. A result that would alias a non-donated argument or the executable's constants is
// copied, so that a result buffer never shares memory it does not own. A donated argument's
// memory passes to the result that takes it over.
//
// Flags (CompileOptions::flags): see CpuFlagHelp().
#pragma once

#include <memory>
#include <string>

#include "kiln/backend/backend.h"
#include "kiln/cpu/compiler.h"

namespace kiln::cpu {

// `flags`: platform-level settings (none yet for cpu).
std::unique_ptr<Backend> CreateCpuBackend(const BackendFlags& flags = {});

// Applies the cpu_* flags to `options`; InvalidArgument for an unknown cpu_* flag or a bad
// value. Flags of other platforms are ignored.
Status ApplyCpuFlags(const BackendFlags& flags, CpuCompileOptions* options);
// One line per flag: "cpu_row_tiling=on|off|force  ...".
std::string CpuFlagHelp();

}  // namespace kiln::cpu
