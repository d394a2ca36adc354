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
