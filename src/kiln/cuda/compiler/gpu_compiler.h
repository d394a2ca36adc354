// GpuCompiler: HLO module -> CompiledGpuModule (thunks with compiled kernels) -> GpuExecutable.
//
// The pipeline (one HloPassPipeline "gpu": --dump-passes and --stats see every pass):
//   unfuse                fusions already in the module (XLA's post-optimization dumps) are
//                         inlined: kiln fuses with its own policy
//   layout-normalization  every array row-major (passes/layout_normalization.h; shared with the CPU
//                         backend: row-major is what kiln's kernels and libraries assume)
//   simplification        call inlining, then to a fixed point tuple/algebraic simplification,
//                         constant folding, CSE, DCE, while-loop simplification; then dots made
//                         canonical ([B,M,K] x [B,K,N])
//   gemm-rewriter         canonical dots -> __kiln$gemm (transposes folded, epilogues fused)
//   conv-rewriter         convolutions -> __kiln$conv (cuDNN forward, explicit layout
//                         transposes/pads/reverses, bias/side/relu epilogue)
//   cleanup               algebraic simplification, CSE, DCE (the rewriters' leftovers)
//   flatten-call-graph    one call site per while body / branch (buffer assignment needs it)
//   fusion                InstructionFusion + MultiOutputFusion with GpuFusionPolicy
//   fusion-legalization   every fusion the kernel emitters turn down is undone and re-fused
//                         without normalization fusion; what still fails is unfused
//   autotune              only with GpuCompileOptions::autotune (gpu_autotune.h):
//                         every GEMM / convolution call and fusion gets its measured (or
//                         cached) implementation written into its backend_config
//   dce
// then the memory-aware schedule, buffer assignment (256-byte aligned arena offsets; donated
// parameters are not honoured: the executable copies arguments into buffers of its own), the
// independent buffer-assignment checker (debug builds), and thunk emission (thunk_emitter.h),
// which generates every kernel (src/kiln/codegen) and compiles them in parallel with NVRTC.
//
// No device is needed to compile: kernels are generated for `GpuCompileOptions::device`, a
// DeviceSpec from the device's description or a preset ("sm_90"). GpuExecutable::Create loads
// the result onto a device.
//
// Errors: a module the verifier rejects is InvalidArgument; an op the GPU backend cannot run
// (infeed/outfeed/send/recv) is Unimplemented; NVRTC missing is the NVRTC loader's error.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/compiler/conv_rewriter.h"
#include "kiln/cuda/compiler/gemm_rewriter.h"
#include "kiln/cuda/compiler/gpu_autotune.h"
#include "kiln/cuda/compiler/gpu_fusion_policy.h"
#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_schedule.h"
#include "kiln/passes/pipeline.h"

namespace kiln::cuda {

#if defined(NDEBUG)
inline constexpr bool kGpuDebugBuild = false;
#else
inline constexpr bool kGpuDebugBuild = true;
#endif

struct GpuCompileOptions {
  // The GPU kernels are generated and compiled for (default: the H200 preset, sm_90).
  codegen::DeviceSpec device;
  // Write the module after every pass that changed it into this directory ("" = don't).
  std::string dump_dir;
  // Write every generated kernel's source here (codegen::DumpKernels; "" = don't).
  std::string kernel_dump_dir;
  // Verify the input module first.
  bool verify_input = true;
  // Run the HLO verifier after every pass that changed the module (default in debug builds).
  bool verify_between_passes = kGpuDebugBuild;
  // Run the independent buffer-assignment checker (default in debug builds).
  bool check_buffer_assignment = kGpuDebugBuild;
  // Fuse (off: every op its own kernel; for debugging).
  bool fusion = true;
  // Attention found in the HLO (passes/attention_rewriter.h) that the flash-attention kernel
  // runs becomes one fused call (off: the dots and the softmax run as written).
  bool fused_attention = true;
  // Loop-invariant code motion (Note [Loop-invariant code motion] in
  // passes/loop_invariant_code_motion.h). Flag cuda_loop_invariants.
  bool hoist_loop_invariants = true;
  GemmRewriterOptions gemm;
  ConvRewriterOptions conv;
  GpuFusionOptions fusion_options = GpuFusionPolicy::DefaultOptions();
  // Lower peak memory with the memory-aware list scheduler (off: post order).
  bool memory_aware_schedule = true;
  // Evaluate ops without a device implementation on the host (off: such ops are errors).
  bool allow_host_fallback = true;
  // NVRTC (cache on by default) and the threads compiling kernels (0: every core).
  NvrtcOptions nvrtc;
  int compile_threads = 0;
  // The autotuning step (default: none; the tool sets it from --autotune*).
  GpuAutotuneOptions autotune;
};

struct GpuCompileStats {
  std::vector<PassStats> passes;
  double compile_seconds = 0;
  std::string fusion_summary;
  MemoryStats memory;
  int64_t thunks = 0;
  std::map<std::string, int64_t> thunks_by_kind;  // "kernel" -> n
  int64_t kernels = 0;
  int64_t kernels_from_cache = 0;
  std::map<std::string, int64_t> host_fallbacks;
  // The autotuning step's report (null when the step did not run).
  std::shared_ptr<const autotune::AutotuneReport> autotune;
  std::string ToString() const;
};

// What the compiler produced: everything an executable needs except the device.
struct CompiledGpuModule {
  std::unique_ptr<HloModule> module;
  std::unique_ptr<HloSchedule> schedule;
  std::unique_ptr<BufferAssignment> assignment;
  ThunkSequence entry;
  std::vector<codegen::KernelSpec> kernels;
  GpuCompileStats stats;
  // Every thunk, one per line, nested ones indented.
  std::string ThunkListing() const;
};

class GpuCompiler {
 public:
  static StatusOr<std::unique_ptr<CompiledGpuModule>> Compile(std::unique_ptr<HloModule> module,
                                                              const GpuCompileOptions& options = {});
};

}  // namespace kiln::cuda
