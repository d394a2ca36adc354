// ThunkEmitter: a compiled module (fused, scheduled, buffers assigned) -> thunk sequences.
//
// For every sequential computation reached from the entry, in schedule order:
//   no thunk      parameter, constant (its own allocation, uploaded at load), tuple,
//                 get-tuple-element, bitcast, opt-barrier, domain, add-dependency, after-all,
//                 and reshapes that buffer assignment made views;
//   GemmThunk     __kiln$gemm custom calls;      ConvThunk  __kiln$conv custom calls;
//   SortThunk     sort (single-key comparators along the minor dimension), topk, TopK;
//   FftThunk      fft;
//   SolverThunk   the linear-algebra custom calls of JAX's cuSOLVER, hipSOLVER and LAPACK
//                 lowerings on cuSOLVER / cuBLAS (Note [Solver custom calls] in solver_thunk.h;
//                 those it cannot run stay HostThunks, naming why);
//   CopyThunk     copy between row-major arrays, and the identity custom calls JAX emits
//                 (Sharding, SPMDFullToShardShape, SPMDShardToFullShape);
//   WhileThunk, ConditionalThunk (nested sequences), calls emitted inline;
//   KernelThunk   every fusion and every op the kernel emitters take (codegen::ChooseEmitter);
//                 scatters whose combiner depends on the order of updates (replace, general
//                 computations) without unique_indices use the serialized mode, which applies
//                 overlapping windows in the evaluator's order;
//   CollectiveThunk / CollectiveDoneThunk  collectives, their -start/-done and async-start
//                 forms, send/recv between devices, replica-id, partition-id, on NCCL
//                 (collective_thunks.h); other reductions and ragged-all-to-all run on the host;
//   HostThunk     anything else (rng, reduce-window, the linear-algebra custom calls above,
//                 dots and convolutions no library runs, ...): evaluated on the host, with a
//                 warning per opcode. infeed/outfeed and host transfers are errors.
// Kernels are generated first for the whole module and compiled in parallel (NVRTC, disk
// cached); a kernel the emitters or NVRTC turn down becomes a HostThunk too (warned).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/base/thread_pool.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/compiler/gpu_thunk.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_schedule.h"

namespace kiln::cuda {

struct ThunkEmitterOptions {
  codegen::DeviceSpec device;
  NvrtcCompiler* nvrtc = nullptr;  // required
  ThreadPool* pool = nullptr;      // null: compile on the calling thread
  bool allow_host_fallback = true;  // off: an op without a device implementation is an error
};

struct EmittedThunks {
  ThunkSequence entry;
  std::vector<codegen::KernelSpec> kernels;  // every generated kernel (for dumps)
  int64_t kernels_from_cache = 0;
  // "gather (2), custom-call foo (1)": what runs on the host, if anything.
  std::map<std::string, int64_t> host_fallbacks;
};

StatusOr<EmittedThunks> EmitGpuThunks(const HloModule& module, const BufferAssignment& assignment,
                                      const HloSchedule& schedule, const ThunkEmitterOptions& options);

}  // namespace kiln::cuda
