// codegen's generated kernels (KernelSpec, in the HIP dialect: DeviceSpec::dialect = kHip) to
// code objects, one kernel at a time (RocmKernelCompiler, codegen::KernelCompiler's ROCm
// implementation) or many in one compile (BatchKernelSource).
//
// Note [One code object per module]
//   Each compile pays a fixed cost (clang's process start, the device-library link, hipRTC's
//   comgr setup: about 1-4 s here) that dwarfs a kernel's own few tens of milliseconds, so the
//   rocm backend compiles all the kernels of a module as one translation unit: every kernel's
//   source in a namespace of its own (its file-scope helpers and constants keep their names
//   without clashing), the prelude included once. Entry points are extern "C" and named after
//   their instructions, so they stay unique and keep their names in the single code object;
//   kernels whose entries would collide are compiled on their own.
#pragma once

#include <span>
#include <vector>
#include <string>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/rocm/hsaco_compiler.h"

namespace kiln::rocm {

// The kernels' sources as one HIP translation unit named `name` (Note [One code object per
// module]); InvalidArgument when two kernels share an entry name or a kernel is not in the HIP
// dialect (its prelude is CUDA's). `c_linkage` false drops the entries' extern "C", so that
// kernels of different modules with the same entry names can share one compile (tests: the
// entries are then C++ names, mangled with their kernel's namespace).
StatusOr<HsacoSource> BatchKernelSource(std::span<const codegen::KernelSpec> kernels, std::string name,
                                        bool c_linkage = true);

// Renames entry points that repeat an earlier kernel's (kernels of different computations can
// share one: "loop_fusion") to `<entry>_k<index>`, in the source (whole identifiers only) and in
// the launches, so that the kernels can share one code object. Returns how many were renamed.
int MakeEntriesUnique(std::vector<codegen::KernelSpec>& kernels);

class RocmKernelCompiler final : public codegen::KernelCompiler {
 public:
  explicit RocmKernelCompiler(HsacoCompiler& compiler, HsacoPath path = HsacoPath::kAuto)
      : compiler_(compiler), path_(path) {}
  // CompiledKernel::cubin holds the code object.
  StatusOr<codegen::CompiledKernel> Compile(const codegen::KernelSpec& kernel, std::string_view arch) override;

 private:
  HsacoCompiler& compiler_;
  HsacoPath path_;
};

}  // namespace kiln::rocm
