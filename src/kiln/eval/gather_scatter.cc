// PLACEHOLDER: this family's kernels are being written (issue 2).
#include "kiln/eval/kernels.h"

namespace kiln {

void RegisterGatherScatterKernels(KernelRegistry&) {}

}  // namespace kiln
