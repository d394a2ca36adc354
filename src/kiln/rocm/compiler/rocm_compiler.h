// RocmCompiler: HLO to a ROCm executable's parts -- AMDGPU code objects of kiln's generated
// kernels and library-call thunks (rocBLAS GEMMs, MIOpen convolutions) -- without a device: the
// deviceless compile of `kiln compile --device rocm --target gfx942`.
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
// Refused, with Unimplemented and the reason:
//   - modules for several devices (replica_count or num_partitions > 1) and collectives: kiln
//     has no RCCL binding;
//   - custom calls (no ROCm implementation of any target), fft (no rocFFT binding), infeed,
//     outfeed, send/recv;
//   - with allow_host_fallback off, any instruction no emitter takes (the emitter's reason);
//     by default those become host-fallback thunks (the evaluator), as on the cuda backend.
// The thunks cannot run anywhere reachable (Note [Untested ROCm execution] in
// rocm/rocm_device.h): RocmExecutable holds them for listing and dumping.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

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

namespace kiln::rocm {

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
};

// One step of the executable (listing only: nothing runs).
struct RocmThunk {
  enum class Kind { kKernel, kGemm, kConvolution, kWhile, kConditional, kCall, kHostFallback };
  Kind kind = Kind::kKernel;
  std::string instruction;  // "fusion.3"
  std::string computation;  // where it is
  std::string detail;       // "row_reduction b256.v4 in code object 0" / "rocblas_gemm_ex f32 m=.. n=.. k=.."
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
  std::string ToString() const;
};

struct RocmCompiledModule {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<HloSchedule> schedule;
  std::unique_ptr<BufferAssignment> assignment;
  std::vector<codegen::KernelSpec> kernels;
  std::vector<int> kernel_code_object;  // per kernel: its index in code_objects
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

// Why `module` cannot be compiled for one ROCm device (OK when it can): the multi-device and
// unsupported-instruction refusals above, checked before any pass runs.
Status CheckRocmSupported(const HloModule& module);

}  // namespace kiln::rocm
