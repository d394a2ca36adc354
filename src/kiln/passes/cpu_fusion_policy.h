// The CPU backend's fusion policy (issue 3): what the CPU kernels (cpu/kernel.h) can run as
// one fused kernel over row-major buffers.
//
//   kLoop  -- one loop over the output elements, computing a DAG of: elementwise ops (not map,
//             not rng), broadcast, reshape, bitcast (default layouts only), convert, copy,
//             iota, slice, pad, concatenate, dynamic-slice, reverse, small constants, and
//             transposes (only trivial ones or ones of at most transpose_max_bytes: a large
//             transpose stays a standalone cache-blocked kernel). A dynamic-update-slice can
//             root a loop fusion (its producers fused into the update and indices, never into
//             the buffer it updates in place).
//   kInput -- a reduce (variadic too) with loop-fusible producers fused into its inputs.
//   Multi-output: loop fusions whose outputs have the same dimensions; reductions over the
//             same input dimensions and reduced dimensions, optionally with loop outputs of the
//             reduction's input dimensions (the kernel walks the input once and writes both).
// Layouts: the policy assumes the CPU compiler has normalized every array to the default
// (row-major) layout before fusion, as the kernels index logically; copy is then an identity
// and bitcast a reshape (a bitcast between other layouts is not fused).
// Never fused in v1: dot, convolution, sort, scatter, gather, custom-call, reduce-window,
// select-and-scatter, fft, rng, control flow, collectives. Reductions are never producers.
#pragma once

#include "kiln/passes/fusion_policy.h"

namespace kiln {

struct CpuFusionOptions {
  FusionCostOptions cost;
  // Largest transpose (bytes of output) fused; larger ones keep their own blocked kernel.
  int64_t transpose_max_bytes = 256 * 1024;
  // Largest constant (bytes) fused into kernels; larger ones are read from their buffer.
  int64_t constant_max_bytes = 1024;
};

class CpuFusionPolicy : public FusionPolicy {
 public:
  explicit CpuFusionPolicy(CpuFusionOptions options = DefaultOptions());
  static CpuFusionOptions DefaultOptions();

  std::string_view name() const override { return "cpu"; }
  bool IsFusibleProducer(const HloInstruction& instr) const override;
  std::optional<FusionKind> FusionKindForRoot(const HloInstruction& instr) const override;
  FusionDecision CanFuseIntoOperand(const HloInstruction& producer, const HloInstruction& consumer,
                                    int64_t operand_index) const override;

  // Whether the CPU loop kernel can compute `instr` (not a fusion) inside a loop fusion.
  bool IsLoopFusibleOp(const HloInstruction& instr) const;

 private:
  CpuFusionOptions cpu_options_;
};

}  // namespace kiln
