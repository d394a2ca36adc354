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
//
// The step knows no platform backend: they come in as GpuAutotuneOptions::factory (on CUDA
// devices CudaAutotuneFactory(), cuda/autotune/cuda_backends.h). cuda/autotune is the room above
// cuda/compiler: its backends read the compiler's call formats (gemm_config.h, conv_config.h,
// library_calls.h) and the format of the codegen choice below; the compiler includes nothing of
// cuda/autotune.
#pragma once

#include <memory>
#include <string_view>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/backend.h"
#include "kiln/autotune/cache.h"
#include "kiln/autotune/config.h"
#include "kiln/base/status.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/hlo/instruction.h"
#include "kiln/passes/pass.h"
#include "kiln/runtime/device.h"

namespace kiln::cuda {

struct GpuAutotuneOptions {
  // The platform's backends (CudaAutotuneFactory(), i.e. CreateCudaBackends from
  // cuda/autotune/cuda_backends.h, or fakes in tests); empty: no autotuning.
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

// The "codegen" backend's choice for a fusion (cuda/autotune/codegen_backend.h), both ways:
// a launch configuration as the Config the backend lists and the cache stores
// ({"config": "b256.v4.u2.r1.s1"}, codegen::KernelConfig::ToString), and back.
inline constexpr std::string_view kCodegenBackend = "codegen";
autotune::Config KernelConfigToConfig(const codegen::KernelConfig& c);
// InvalidArgument for anything but a well-formed "codegen" config.
StatusOr<codegen::KernelConfig> KernelConfigFromConfig(const autotune::Config& config);

// The launch configuration the autotuner chose for `instr` (a fusion), or an empty config
// (the emitter's default) when none was written or the choice is another backend's. Errors: a
// malformed "codegen" choice. The thunk emitter reads it when it emits the fusion's kernel.
StatusOr<codegen::KernelConfig> TunedKernelConfig(const HloInstruction& instr);

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
