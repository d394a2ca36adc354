// RocmCompiler: HLO to a ROCm executable's parts -- AMDGPU code objects of kiln's generated
// kernels, library-call thunks (rocBLAS GEMMs, MIOpen convolutions) and collective thunks on
// RCCL -- without a device: the deviceless compile of `kiln compile --device rocm --target
// gfx942`.
//
// The pipeline is the GPU compiler's (cuda/compiler/gpu_compiler.cc) where the two share code:
// the neutral simplification passes, the GPU fusion policy (codegen/gpu_fusion_policy.h) with
// its legalization (fusions an emitter declines are re-fused without normalization fusion), the
// compile tail (schedule, buffer assignment), and codegen's emitters, here in the HIP dialect
// (DeviceSpec::dialect). What differs: dots and convolutions stay HLO instructions and become
// library calls (no cuBLASLt / cuDNN rewriters: rocBLAS and MIOpen descriptors are made from the
// instruction itself), and every kernel of the module goes into one translation unit (Note [One
// code object per module] in rocm/rocm_kernel_compiler.h), compiled by hipRTC or clang.
//
// Collectives are lowered as on the cuda backend, by the neutral rules of
// codegen/collective_lowering.h (Note [Collectives on RCCL] in rocm_compiler.cc): every
// collective the NCCL API does (all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute, collective-broadcast, send / recv, replica-id / partition-id, their -start
// / -done and async-start forms) is a collective thunk on RCCL, and a reduction RCCL lacks is a
// gather plus a generated combine kernel (Note [Reductions NCCL lacks]), compiled to a code
// object of its own. The module header's grid (replica_count x num_partitions; the rocm backend
// writes the run's into it) sizes the groups.
//
// Autotuning (RocmCompileOptions::autotune, the factory of rocm/autotune): after fusion, every
// dot, convolution and fusion is decided by the neutral Autotuner. Without a device nothing is
// measured: cache entries (keyed by the target's gfx arch and versions, validated against the
// backend's config space) are applied, otherwise the defaults; the thunks read the choice
// (Note [Deviceless autotuning] in rocm_compiler.cc).
//
// Refused, with Unimplemented and the reason: infeed, outfeed and host-transfer send / recv;
// with allow_host_fallback off, any instruction no emitter takes (the emitter's reason), custom
// calls (no ROCm implementation of any target) and fft (no rocFFT binding). By default those
// become host-fallback thunks (the evaluator), as on the cuda backend.
// The thunks cannot run anywhere reachable (Note [Untested ROCm execution] in
// rocm/rocm_device.h): RocmExecutable holds them for listing and dumping.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/backend.h"
#include "kiln/autotune/cache.h"
#include "kiln/base/status.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_schedule.h"
#include "kiln/passes/memory_stats.h"
#include "kiln/passes/pipeline.h"
#include "kiln/rocm/hsaco_compiler.h"
#include "kiln/rocm/occupancy.h"
#include "kiln/runtime/device.h"

namespace kiln::rocm {

// The autotuning step's inputs (the neutral Autotuner's): without a factory there is no step.
struct RocmAutotuneOptions {
  autotune::BackendFactory factory;  // RocmAutotuneFactory() (rocm/autotune), or a test's
  runtime::DeviceDescription target;  // the cache key's device part (RocmTargetDescription)
  runtime::Device* device = nullptr;  // null: nothing is measured
  autotune::Cache* cache = nullptr;   // may be null; must outlive the compile
  autotune::AutotuneOptions options;
  bool enabled() const { return static_cast<bool>(factory); }
};

struct RocmCompileOptions {
  codegen::DeviceSpec device;  // a HIP-dialect spec (DeviceSpec::FromPreset("gfx942"), ...)
  HsacoCompilerOptions hsaco;
  HsacoPath path = HsacoPath::kAuto;
  bool verify_input = true;
  std::string dump_dir;         // the module after every pass that changed it
  std::string kernel_dump_dir;  // kernel sources, code objects and their metadata
  // Kernels per translation unit (Note [One code object per module]); larger modules are split
  // into batches compiled in parallel. Default 256.
  int kernels_per_code_object = 256;
  int compile_threads = 0;  // 0: hardware threads
  // An unfused instruction no emitter takes (batch-norm-training, ...) runs on the host
  // evaluator, as on the cuda backend; off: it is an error.
  bool allow_host_fallback = true;
  RocmAutotuneOptions autotune;
};

// One step of the executable (listing only: nothing runs).
struct RocmThunk {
  enum class Kind {
    kKernel, kGemm, kConvolution, kCollective, kCollectiveDone, kWhile, kConditional, kCall, kHostFallback
  };
  Kind kind = Kind::kKernel;
  std::string instruction;  // "fusion.3"
  std::string computation;  // where it is
  std::string detail;       // "row_reduction b256.v4 in code object 0" / "rocblas_gemm_ex f32 m=.. n=.. k=.."
  int code_object = -1;     // collectives: the code object of their combine / copy kernels
};
std::string_view RocmThunkKindName(RocmThunk::Kind kind);

struct RocmCompileStats {
  std::vector<PassStats> passes;
  std::string fusion_summary;
  MemoryStats memory;
  int64_t kernels = 0;
  int64_t kernels_from_cache = 0;  // code objects served by the hsaco cache, in kernels
  std::map<std::string, int64_t> thunks_by_kind;
  std::map<std::string, int64_t> host_fallbacks;  // by opcode
  double compile_seconds = 0;
  double kernel_compile_seconds = 0;  // hipRTC / clang, wall
  std::string compiler;               // "hiprtc 9.0 (...)" / "clang 19.1.7 (...)"
  // Occupancy from the code objects' metadata (rocm/occupancy.h): the lowest waves per SIMD of
  // any kernel's launches, which kernel, and how many kernels each resource limits.
  int min_waves_per_simd = 0;
  std::string min_occupancy_kernel;
  std::map<std::string, int64_t> occupancy_limiters;
  // The autotuning step's report (null: no step), and what it comes to without a device.
  std::shared_ptr<const autotune::AutotuneReport> autotune;
  bool autotune_measured = false;  // a device was there to measure on
  // "autotune: 3 from cache, 5 defaults, no device to measure" (empty: no step).
  std::string AutotuneLine() const;
  std::string ToString() const;
};

struct RocmCompiledModule {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<HloSchedule> schedule;
  std::unique_ptr<BufferAssignment> assignment;
  std::vector<codegen::KernelSpec> kernels;
  std::vector<int> kernel_code_object;  // per kernel: its index in code_objects
  // code_objects holds the kernels' batches first, then one per collective with kernels.
  std::vector<KernelOccupancy> kernel_occupancy;  // per kernel: its launches' lowest occupancy
  std::vector<CompiledHsaco> code_objects;
  std::vector<RocmThunk> thunks;
  RocmCompileStats stats;
  std::string ThunkListing() const;
};

class RocmCompiler {
 public:
  static StatusOr<std::unique_ptr<RocmCompiledModule>> Compile(std::unique_ptr<HloModule> module,
                                                               const RocmCompileOptions& options);
};

// Why `module` cannot be compiled for ROCm (OK when it can): the refusals above, checked before
// any pass runs (custom calls and fft only when `allow_host_fallback` is off).
Status CheckRocmSupported(const HloModule& module, bool allow_host_fallback = true);

// The launch configuration the autotuner chose for fusion `instr` ({"backend": "codegen",
// "params": {"config": "b256.v4..."}} in its backend_config), or an empty config (the emitter's
// default) when none is there or another backend's; InvalidArgument for a malformed choice.
StatusOr<codegen::KernelConfig> TunedKernelConfig(const HloInstruction& instr);

}  // namespace kiln::rocm
