// ThunkEmitter: turns a compiled module (fused, scheduled, buffers assigned) into thunks.
//
// For every sequential computation reached from the entry, in schedule order:
//   no thunk      parameter, constant (its own allocation, filled at load), tuple,
//                 get-tuple-element, bitcast, opt-barrier, domain, add-dependency, after-all,
//                 and reshapes that buffer assignment made views (same slice as the operand):
//                 their values are their operands' slices;
//   WhileThunk, ConditionalThunk, CallThunk   for while, conditional, call (nested sequences
//                 emitted recursively);
//   an error      infeed, outfeed, send, recv (and their -done): the CPU runtime has no host
//                 channels;
//   KernelThunk   everything else, with the kernel from the factory (CreateCpuKernel);
//   RowTilesThunk for a chain of consecutive row-local fusions (Note [Row tiling]) instead of
//                 one KernelThunk each, with kernels compiled for the tiles' rows.
// Instructions with no array result and no operands to read (token plumbing) get no thunk.
// Every slice is checked against its allocation's size here, once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "kiln/cpu/kernel.h"
#include "kiln/cpu/row_tiling.h"
#include "kiln/cpu/thunk_sequence.h"
#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/hlo_schedule.h"

namespace kiln::cpu {

using KernelFactory = std::function<StatusOr<std::unique_ptr<CpuKernel>>(const HloInstruction&)>;

struct ThunkEmitterOptions {
  KernelFactory kernel_factory;  // required
  ExecutorOptions executor;      // thresholds the sequences classify their thunks with
  // Run chains of row-local fusions tile by tile (row_tiling.h; off: one thunk per kernel).
  bool row_tiling = true;
  RowTilingOptions row_tiling_options;
  int threads = 1;               // threads a run uses (tile sizes)
};

struct EmittedThunks {
  ThunkSequence entry;
  // Every thunk, nested ones included, indexed by Thunk::id().
  std::vector<const Thunk*> all;
  // The instructions whose kernel is the evaluator's (CpuKernel::runs_evaluator), by
  // HostFallbackKind (backend/executable.h): each instruction once, however often it runs.
  std::map<std::string, int64_t> evaluator_fallbacks;
};

StatusOr<EmittedThunks> EmitThunks(const HloModule& module, const BufferAssignment& assignment,
                                   const HloSchedule& schedule, const ThunkEmitterOptions& options);

// The estimated work of running `instr` as a kernel (thunk.h, "Costs").
int64_t EstimateKernelCost(const HloInstruction& instr);

}  // namespace kiln::cpu
