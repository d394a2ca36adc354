// Compiling a module's generated kernels in parallel.
//
// codegen/ does not depend on the CUDA layer: the compiler is an interface, which the CUDA
// backend implements over its NVRTC service and on-disk cache (cuda/nvrtc_kernel_compiler.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/base/thread_pool.h"
#include "kiln/codegen/kernel_spec.h"

namespace kiln::codegen {

struct CompiledKernel {
  std::string name;   // the KernelSpec's name
  std::string arch;   // "sm_90"
  std::string cubin;  // the loadable image
  std::string log;    // compiler warnings (empty when clean)
  bool from_cache = false;
};

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // Compiles one kernel's source (with its headers) for `arch`. Must be safe to call
  // concurrently from several threads.
  virtual StatusOr<CompiledKernel> Compile(const KernelSpec& kernel, std::string_view arch) = 0;
};

// Compiles every kernel on `pool` (and the calling thread); returns the cubins in the order of
// `kernels`. All compiles run even when some fail; the error is the first failure in kernel
// order, naming the kernel (and counting the others that failed).
StatusOr<std::vector<CompiledKernel>> CompileKernels(std::span<const KernelSpec> kernels,
                                                     KernelCompiler& compiler,
                                                     std::string_view arch, ThreadPool& pool);

}  // namespace kiln::codegen
