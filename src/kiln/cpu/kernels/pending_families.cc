// Kernel families not native yet: CreateCpuKernel falls back to the evaluator kernel for them.
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {

StatusOr<std::unique_ptr<CpuKernel>> CreateSortKernel(const HloInstruction&,
                                                      const CpuKernelOptions&) {
  return Unimplemented("sort kernel: not native yet");
}
StatusOr<std::unique_ptr<CpuKernel>> CreateTopKKernel(const HloInstruction&,
                                                      const CpuKernelOptions&) {
  return Unimplemented("topk kernel: not native yet");
}

}  // namespace kiln::cpu::internal
