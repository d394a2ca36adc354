// CpuCompiler: HLO module -> CpuExecutable (executable.h).
//
// The pipeline (each step a pass of one HloPassPipeline "cpu", so --dump-passes and --stats see
// every one of them):
//   verify              the HLO verifier on the input (CpuCompileOptions::verify_input)
//   unfuse              fusions already in the module (XLA's post-optimization dumps) are
//                       inlined: kiln fuses with its own policy below
//   layout-normalization  every array row-major; non-default bitcasts become transposes and
//                       reshapes; entry layouts kept for the boundary (layout_normalization.h)
//   divide-by-broadcast-to-multiply  x / broadcast(y) -> x * broadcast(1/y) for f32/f64
//                       (divide_to_multiply.h)
//   simplification      AddSimplificationPasses: call inlining, then to a fixed point tuple
//                       simplification, algebraic simplification, constant folding, CSE, DCE,
//                       while-loop simplification; then dot canonicalization ([B,M,K]x[B,K,N],
//                       canonicalize_dots) with a clean-up round
//   dot-transpose-folding  transposes of a canonical dot's operands that swap the two minor
//                       dimensions are read by the dot kernel in place (dot_transpose_folding.h)
//   flatten-call-graph  one call site per while body / branch (buffer assignment needs it)
//   fusion              InstructionFusion + MultiOutputFusion with CpuFusionPolicy (`fusion`)
//   dce
// then scheduling (MemoryAwareSchedule, or PostOrderSchedule), buffer assignment (checked by
// the independent checker when check_buffer_assignment), and thunk emission with the kernels
// of `kernel_factory` (default: CreateCpuKernel), chains of row-local fusions becoming
// row-tiled thunks (row_tiling.h).
//
// Errors: a module the verifier rejects is InvalidArgument; an op the CPU backend cannot run
// (infeed, outfeed, send/recv) is Unimplemented naming it; nothing aborts.
#pragma once

#include <memory>
#include <string>

#include "kiln/cpu/executable.h"
#include "kiln/cpu/thunk_emitter.h"

namespace kiln::cpu {

#if defined(NDEBUG)
inline constexpr bool kDebugBuild = false;
#else
inline constexpr bool kDebugBuild = true;
#endif

struct CpuCompileOptions {
  // Worker threads of the executable's pool (the calling thread drives the thunk graph and
  // joins ParallelFor loops; Eigen's GEMMs run on the workers alone). 0: every core
  // (std::thread::hardware_concurrency); 1: no pool, everything on the calling thread.
  // Ignored when `thread_pool` is set.
  int threads = 0;
  // A pool to share between executables.
  std::shared_ptr<ThreadPool> thread_pool;
  // Write the module after every pass that changed it into this directory ("" = don't).
  std::string dump_dir;
  // Verify the input module first.
  bool verify_input = true;
  // Run the HLO verifier after every pass that changed the module (slow; default in debug
  // builds).
  bool verify_between_passes = kDebugBuild;
  // Run the independent buffer-assignment checker (default in debug builds).
  bool check_buffer_assignment = kDebugBuild;
  // Fuse (off: every instruction is its own kernel; for debugging kernels).
  bool fusion = true;
  // Bring dots into the canonical [B,M,K]x[B,K,N] form.
  bool canonicalize_dots = true;
  // f32 attention found in the HLO (passes/attention_rewriter.h) runs as one fused kernel
  // (kernels/attention.cc); off: the dots and the softmax as written (flag cpu_attention=off).
  bool fused_attention = true;
  // Loop-invariant code motion (Note [Loop-invariant code motion] in
  // passes/loop_invariant_code_motion.h). Flag cpu_loop_invariants.
  bool hoist_loop_invariants = true;
  // A while body's state leaf computed elementwise from its old value is computed in place, with
  // no copy per iteration (BufferAssignmentOptions::elementwise_state_updates; the loop kernels
  // handle outputs that overlap inputs: Note [In-place loop kernels]). Flag cpu_in_place_state.
  // Turn it off with a kernel_factory whose kernels do not take such outputs.
  bool elementwise_state_updates = true;
  // Lower peak memory with the memory-aware list scheduler (off: post order).
  bool memory_aware_schedule = true;
  // Run chains of row-local fusions tile by tile over their rows (row_tiling.h).
  bool row_tiling = true;
  RowTilingOptions row_tiling_options;
  // Where kernels come from (null: CreateCpuKernel with kernel_options).
  KernelFactory kernel_factory;
  CpuKernelOptions kernel_options;
  ExecutorOptions executor;
};

class CpuCompiler {
 public:
  static StatusOr<std::unique_ptr<CpuExecutable>> Compile(std::unique_ptr<HloModule> module,
                                                          const CpuCompileOptions& options = {});
};

// The kernel factory CpuCompiler uses by default.
KernelFactory DefaultKernelFactory(const CpuKernelOptions& options);

}  // namespace kiln::cpu
