// CPU kernels: the compiled code for one instruction (often a fusion) of a CPU executable.
//
// A kernel is created once at compile time (CreateCpuKernel) and run many times. It reads its
// inputs and writes its outputs through ArrayViews: dense arrays in row-major (default,
// descending) layout -- the CPU compiler normalizes every array to that layout, so kernels
// index logically. Inputs are the instruction's operands' array leaves in order (tuple-shaped
// operands flattened); outputs are the result's array leaves in order (a multi-output fusion
// has several). An output may alias an input only where buffer assignment made an in-place
// update (dynamic-update-slice); kernels that support that say so (SupportsInPlace).
//
// Threading: Run may split its work over ctx.pool (ParallelFor); it must be safe to run
// different kernels concurrently on one pool. Run never throws or aborts: errors are Status.
//
// Hot paths must not go through the reference evaluator: fused elementwise loops, reductions,
// transposes, dot (Eigen contraction), convolution, gather/scatter, sort. Everything else may
// fall back to the evaluator's kernel for its opcode (EvaluatorFallbackKernel), which converts
// views to literals and back.
//
// Note for the executable (cpukern -> cpurt):
//   - A kernel keeps pointers to `instr` and to the computations it calls (fused computation,
//     reducer, comparator): the module must outlive the kernel.
//   - Kernels read their inputs and write their outputs only inside Run; an input may be read
//     after an output element was written only where SupportsInPlace says so.
//   - kernels/kernels.h lists the native families (loop/DUS/reduce/transpose/dot/convolution/
//     gather/scatter/sort/topk); CreateCpuKernel falls back to the evaluator kernel for any other
//     opcode and for the forms a family does not cover (the kernel's name() then starts with
//     "evaluator[" and runs_evaluator() is true; the thunk emitter counts such instructions in
//     CpuCompileStats::evaluator_fallbacks, reported as CompileReport::host_fallbacks).
//   - Parallelism: Run splits work with ctx.pool->ParallelFor (and Eigen on the same pool).
//     kiln's ParallelFor called from a worker of that same pool runs inline, so a kernel Run from
//     inside a pool task is single-threaded: call Run from a thread outside ctx.pool (e.g. the
//     executable's driver thread) to get the pool's parallelism; run independent kernels
//     concurrently on other threads, not as tasks of the kernel pool.
#pragma once

#include <atomic>

#include <memory>
#include <span>
#include <string>

#include "kiln/base/status.h"
#include "kiln/base/thread_pool.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu {

struct ArrayView {
  void* data = nullptr;
  Shape shape;  // array shape; data is dense row-major
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
  int64_t byte_size() const { return shape.byte_size(); }
};

struct KernelContext {
  ThreadPool* pool = nullptr;  // null: run on the calling thread
  // A hint: the outputs are large and not read again soon (a row-tiled chain's tiles of a big
  // array). Loop kernels then write them with streaming stores (Note [Streaming stores] in
  // kernels/loop_kernel.cc), as they do on their own for outputs of kStreamOutputBytes or more.
  bool stream_outputs = false;
  // The run's state of the stateful RNG ops (ExecuteParams::rng_state); null: start from 0.
  std::atomic<uint64_t>* rng_state = nullptr;
  // This participant of a multi-participant run (ExecuteParams::collectives); null: alone.
  const struct CollectiveContext* collectives = nullptr;
};

struct CpuKernelOptions {
  // Elements per block of fused elementwise loops (fits L1/L2 with the block's temporaries).
  int64_t block_elements = 2048;
  // Smallest amount of work (elements) worth splitting across threads.
  int64_t min_parallel_elements = 32 * 1024;
  // Bytes of im2col patches a convolution task builds before multiplying them (a K block).
  int64_t conv_patch_bytes = 1 << 20;
  // The switches below exist for A/B measurements (bench/RESULTS.md); the defaults are what
  // measured best. The cpu backend sets them from its flags (cpu_backend.h); the `kiln` tool
  // also from KILN_<FLAG> in the environment.
  // f32 GEMMs may run on kiln's own kernels -- the parallel driver and the single-threaded
  // direct kernel (Note [Parallel GEMM driver] in kernels/gemm.h) -- where they measured faster
  // than Eigen; false keeps them on Eigen's contraction (flag cpu_gemm_kernel=eigen). The
  // small-M kernel is used either way. Default true (cpu_gemm_kernel=kiln).
  bool gemm_kiln_kernels = true;
  // Eigen's contractions run on a second, process-wide Eigen::ThreadPool as large as ctx.pool
  // instead of on ctx.pool's own workers (the previous arrangement; flag
  // cpu_gemm_pool=separate). Default false (cpu_gemm_pool=shared).
  bool gemm_separate_pool = false;
  // Fuse chains of elementwise ops of a loop program into one block op (Note [Fused op chains]
  // in kernels/expr_compile.cc); false keeps every op separate (flag cpu_expr_chains=off).
  // Default true.
  bool expr_chains = true;
  // f32 convolutions may run without im2col where that pays (Note [Indirect convolution] in
  // kernels/conv_indirect.h); false keeps every convolution on im2col + GEMM (flag
  // cpu_conv=im2col). Default true (cpu_conv=auto).
  bool conv_indirect = true;
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  // Short description for profiles and --stats ("loop_fusion[f32[8192,8192], 5 ops]").
  virtual std::string name() const = 0;
  virtual Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
                     const KernelContext& ctx) const = 0;
  // True for the evaluator fallback kernel (CreateEvaluatorFallbackKernel): the instruction
  // runs the reference evaluator's code, counted in CompileReport::host_fallbacks.
  virtual bool runs_evaluator() const { return false; }
  // True if output i may be the same memory as input `operand` (in-place update).
  virtual bool SupportsInPlace(int64_t output, int64_t operand) const {
    (void)output;
    (void)operand;
    return false;
  }
};

// Compiles `instr` (any non-control-flow opcode, or a fusion) into a kernel. Control flow
// (while, conditional, call), tuples, get-tuple-element, bitcasts and parameters are handled by
// the executable, not by kernels.
StatusOr<std::unique_ptr<CpuKernel>> CreateCpuKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions& options = {});

// The fallback: runs the reference evaluator's kernel for instr's opcode.
StatusOr<std::unique_ptr<CpuKernel>> CreateEvaluatorFallbackKernel(const HloInstruction& instr);

}  // namespace kiln::cpu
