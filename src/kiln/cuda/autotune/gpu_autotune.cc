#include "kiln/cuda/autotune/gpu_autotune.h"

#include "kiln/cuda/autotune/cuda_backends.h"

namespace kiln::cuda {

autotune::BackendFactory CudaAutotuneFactory() { return CreateCudaBackends; }

StatusOr<bool> GpuAutotunePass::Run(HloModule& module) {
  if (!options_.enabled()) return false;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<autotune::Autotuner> tuner,
                        autotune::Autotuner::Create(options_.factory, options_.target,
                                                    options_.device, options_.cache,
                                                    options_.options));
  KILN_ASSIGN_OR_RETURN(autotune::AutotuneReport report, tuner->Run(module));
  bool changed = false;
  for (const autotune::InstructionReport& g : report.groups) {
    changed |= g.chosen.has_value() && g.source != autotune::ChoiceSource::kMissing;
  }
  if (report_ != nullptr) *report_ = std::move(report);
  return changed;
}

}  // namespace kiln::cuda
