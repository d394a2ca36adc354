// The GPU compiler's autotuning step (the pass "autotune", after fusion; gpu_compiler.h).
//
// For every GEMM and convolution custom call and every fusion outside fusion bodies it runs the
// Autotuner (autotune/autotuner.h) with the options' backend factory: identical instructions
// (same fingerprint) are decided once; a cache hit is applied without measuring; a miss is
// tuned on `device` (levels on / exhaustive) and stored; the choice is written into the
// instruction's backend_config under "autotune", where the thunk emitter reads it (GemmThunk /
// ConvThunk: algorithm, workspace; KernelThunk: the kernel's launch configuration).
//
// Without a factory the step is not added at all (thunks then use the libraries' heuristic
// favourites and the emitters' default configs, which is also what `--autotune off` means).
// Without a device nothing is measured: forced configs, single candidates and cache hits still
// apply, and a require-complete cache fails naming what it lacks.
#pragma once

#include <memory>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/backend.h"
#include "kiln/autotune/cache.h"
#include "kiln/passes/pass.h"
#include "kiln/runtime/device.h"

namespace kiln::cuda {

struct GpuAutotuneOptions {
  // The platform's backends (CreateCudaBackends, or fakes in tests); empty: no autotuning.
  autotune::BackendFactory factory;
  // The device tuned for (the cache key's device part).
  runtime::DeviceDescription target;
  // Where candidates run; null: nothing is measured.
  runtime::Device* device = nullptr;
  // May be null (no cache). Must outlive the compile.
  autotune::Cache* cache = nullptr;
  autotune::AutotuneOptions options;

  bool enabled() const { return static_cast<bool>(factory); }
};

// The factory the GPU compiler uses on CUDA devices: CreateCudaBackends (cuda_backends.h).
autotune::BackendFactory CudaAutotuneFactory();

class GpuAutotunePass : public HloPass {
 public:
  // `report` (may be null) receives the report of each run.
  GpuAutotunePass(GpuAutotuneOptions options, autotune::AutotuneReport* report)
      : options_(std::move(options)), report_(report) {}
  std::string_view name() const override { return "autotune"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  GpuAutotuneOptions options_;
  autotune::AutotuneReport* report_;
};

}  // namespace kiln::cuda
