// Kernel emitters: one CUDA kernel (KernelSpec) per fusion, or per unfused elementwise/shape
// instruction. docs/codegen.md describes each emitter, its knobs and its performance model.
//
//   EmitLoop           any fusion (or instruction) whose outputs share one iteration space;
//                      one thread per `vector_width` consecutive output elements. Also the
//                      generic fallback: every op the elemental emitter knows, reductions
//                      computed inline per element.
//   EmitRowReduction   reductions whose reduced dimensions are the minor (contiguous) ones,
//                      including full reductions, variadic (argmax) and sibling (multi-output)
//                      reductions, and normalizations: elementwise work over the same rows that
//                      reads the reduced values back (softmax, layernorm) in one kernel.
//   EmitColumnReduction reductions of major dimensions ([..., R, K] reduced over R).
//   EmitTranspose      fusions around one transpose (or layout-changing copy) that moves the
//                      minor dimension: shared-memory tiles, coalesced on both sides.
//   EmitDynamicUpdateSliceInPlace  a fusion rooted at dynamic-update-slice of a parameter:
//                      writes only the update window into the operand's buffer (in_place).
//
// Standalone instructions the GPU compiler runs as kernels of their own:
//   EmitScatter        scatter, in place (output i is operand i's buffer): atomic, unique-index
//                      or serialized (deterministic) combining; see ScatterMode.
//   EmitRngBitGenerator  rng-bit-generator (Philox, Threefry), bit-exact with the evaluator.
//   EmitCholesky, EmitTriangularSolve  batched matrices in double working precision (the
//                      evaluator's): one thread per matrix / per column (row) of b when small,
//                      blocked multi-launch kernels above 256 / 2048.
//   Gather, iota, broadcast of a constant (fill), copy and transpose need no emitter of their
//   own: the loop (or transpose) emitter takes them as unfused instructions, and gather also
//   fuses into loop fusions like any other index map. Reduce-window and select-and-scatter are
//   elemental values too (per output element, in the evaluator's order; select-and-scatter in
//   its deterministic gather form): the loop emitter runs them, except cumulative reductions
//   (EmitScan below).
//
// Every emitter returns Unimplemented (with the reason) for a fusion it cannot take; EmitKernel
// picks the best emitter that can (ChooseEmitter) and falls back to EmitLoop where it can.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

enum class EmitterKind {
  kLoop,
  kRowReduction,
  kColumnReduction,
  kTranspose,
  kDynamicUpdateSliceInPlace,
  kScatter,
  kRngBitGenerator,
  kCholesky,
  kTriangularSolve,
  kSort,
  kScan,
};
std::string_view EmitterKindName(EmitterKind kind);  // "loop", "row_reduction", ...

StatusOr<KernelSpec> EmitLoop(const HloInstruction& fusion_or_op, const DeviceSpec& device,
                              const KernelConfig& config);
StatusOr<KernelSpec> EmitRowReduction(const HloInstruction& fusion_or_op, const DeviceSpec& device,
                                      const KernelConfig& config);
StatusOr<KernelSpec> EmitColumnReduction(const HloInstruction& fusion_or_op,
                                         const DeviceSpec& device, const KernelConfig& config);
StatusOr<KernelSpec> EmitTranspose(const HloInstruction& fusion_or_op, const DeviceSpec& device,
                                   const KernelConfig& config);
StatusOr<KernelSpec> EmitDynamicUpdateSliceInPlace(const HloInstruction& fusion_or_op,
                                                   const DeviceSpec& device,
                                                   const KernelConfig& config);

// How a scatter combines updates (emit_scatter.cc):
//   kAuto        kUnique when the scatter says unique_indices=true, else kAtomic when it has
//                one operand of 1, 2, 4 or 8-byte elements, except that a combiner whose
//                result depends on the order of colliding updates (an overwrite: anything but
//                one add/multiply/min/max/and/or/xor of its parameters) runs kSerialized when
//                the scatter has at most 1024 windows (the evaluator's order); else kSerialized.
//   kAtomic      one thread per update element, atomic read-modify-write (native atomics for
//                add/min/max/and/or/xor where the hardware has them, else compare-and-swap
//                around the combiner); duplicate indices combine in an unspecified order.
//   kUnique      one thread per update element, plain loads and stores: only correct when no
//                two updates hit the same element.
//   kSerialized  one block applies the windows in row-major order: deterministic, the
//                evaluator's exact order, slow for many windows. A compiler's deterministic
//                mode asks for it.
enum class ScatterMode { kAuto, kAtomic, kUnique, kSerialized };
std::string_view ScatterModeName(ScatterMode mode);

// Knobs: block_size only.
StatusOr<KernelSpec> EmitScatter(const HloInstruction& scatter, const DeviceSpec& device,
                                 const KernelConfig& config, ScatterMode mode = ScatterMode::kAuto);
// Knobs: block_size only. Outputs: the new state, then the bits.
StatusOr<KernelSpec> EmitRngBitGenerator(const HloInstruction& rng, const DeviceSpec& device,
                                         const KernelConfig& config);

// cholesky and triangular-solve of f32/f64/c64/c128 batched row-major matrices (emit_linalg.cc):
// the evaluator's algorithms in double (complex double) working precision, one thread per
// matrix (cholesky, n <= 256) or per column/row of b (triangular-solve, k <= 2048); larger
// ones (or any size when config.tile > 0) run blocked: a sequence of launches over a scratch
// copy, `tile` columns / unknowns at a time, each launch's threads independent (docs/codegen.md).
// Declined only for more than 65535 large problems in one batch. Knobs: block_size, tile.
StatusOr<KernelSpec> EmitCholesky(const HloInstruction& cholesky, const DeviceSpec& device,
                                  const KernelConfig& config);
StatusOr<KernelSpec> EmitTriangularSolve(const HloInstruction& solve, const DeviceSpec& device,
                                         const KernelConfig& config);

// A comparison sort with any comparator (emit_sort.cc): one block per row of the minor
// dimension (row-major operands), a stable bottom-up merge sort of the row's positions, then
// every operand gathered through the permutation: the evaluator's std::stable_sort result.
// Knobs: block_size only (a power of two; 1 allowed).
StatusOr<KernelSpec> EmitSort(const HloInstruction& sort, const DeviceSpec& device, const KernelConfig& config);
// Cumulative reductions (lax.cumsum/cumprod/cummax/cumlogsumexp: a reduce-window whose window
// spans one whole axis with the padding on one side, forward or reverse), unfused or as the
// root of a fusion whose other instructions only compute its operand: each row cut into chunks
// of `tile` positions, chunk totals, a carry pass over them and a rescan (three launches, one
// when a row is one chunk), O(n) work instead of the loop emitter's O(n^2). Reassociates the
// reducer (Note [Chunked scan] in emit_scan.cc). Knobs: block_size, tile (chunk length).
StatusOr<KernelSpec> EmitScan(const HloInstruction& fusion_or_op, const DeviceSpec& device,
                              const KernelConfig& config);

// The emitter best suited to `instr`, judged from its structure (Unimplemented with a reason
// when none can run it: the compiler should then not form that fusion).
StatusOr<EmitterKind> ChooseEmitter(const HloInstruction& instr);
// Runs the emitter `kind`.
StatusOr<KernelSpec> EmitWith(EmitterKind kind, const HloInstruction& instr,
                              const DeviceSpec& device, const KernelConfig& config);
// ChooseEmitter, then that emitter with `config` (an empty config: DefaultConfig); if a
// specialized emitter declines a fusion whose outputs share one iteration space, EmitLoop.
StatusOr<KernelSpec> EmitKernel(const HloInstruction& instr, const DeviceSpec& device,
                                const KernelConfig& config = {});

// The config EmitKernel uses without tuning, fully specified, for `kind`'s emitter.
StatusOr<KernelConfig> DefaultConfig(EmitterKind kind, const HloInstruction& instr,
                                     const DeviceSpec& device);
StatusOr<KernelConfig> DefaultConfig(const HloInstruction& instr, const DeviceSpec& device);
// The configs worth measuring for `instr` (the autotuner's candidates), the default first, no
// duplicates, each one the emitter accepts. A few to a few dozen.
StatusOr<std::vector<KernelConfig>> CandidateConfigs(const HloInstruction& instr,
                                                     const DeviceSpec& device);

}  // namespace kiln::codegen
