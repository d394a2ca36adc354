// The GPU backends' fusion policy (cuda and rocm share it): what the generated kernels
// (src/kiln/codegen, CUDA or HIP dialect) compute as
// one kernel over row-major buffers.
//
//   kLoop  -- one thread per output element (or vector of elements): elementwise ops (every op
//             the elemental emitter knows, map included; not rng), broadcast, reshape, bitcast
//             (row-major), convert, bitcast-convert (same dimensions), copy, iota, slice, pad,
//             concatenate, dynamic-slice, reverse, transpose (of any size: the transpose
//             emitter tiles it through shared memory when it moves the minor dimension), and
//             constants up to constant_max_bytes. A dynamic-update-slice may root a loop
//             fusion (producers fused into the update and indices, never into the buffer it
//             updates in place).
//   kInput -- reductions (row, column or full) with loop-fusible producers, and -- Note
//             [Normalization fusion] -- row reductions fused INTO their consumers.
//   Multi-output: as the neutral policy (same loop dimensions; reductions over the same input
//             and reduced dimensions with loop outputs of the input dimensions), and an
//             in-place dynamic-update-slice with loop outputs of its update window's
//             dimensions (Note [In-place update spaces] in passes/fusion_policy.h).
// Never fused: GEMM/convolution custom calls, dot, convolution, gather, scatter, sort, fft,
// rng, reduce-window, select-and-scatter, custom calls, control flow, collectives.
//
// Note [Normalization fusion]
//   Softmax and layernorm read a row, reduce it, and use the reduced value on every element of
//   the same row. The row-reduction emitter runs such a DAG as one kernel that reads each row
//   once (the reduced values are registers of the threads owning the row). So a reduce whose
//   reduced dimensions are the minor ones of its (row-major) input may be fused into a consumer
//   fusion that iterates over that same input space, reading the reduce through broadcasts
//   along the reduced dimensions -- whatever the cost model says about reuse, since the
//   reduce is computed once per row, not once per element. Per-row values (the mean, 1/sqrt of
//   the variance) are likewise computed once per row by that kernel, so expensive producers are
//   allowed to be reused through broadcasts (max_expensive_recompute is large: on a GPU a few
//   recomputed transcendentals cost less than a kernel launch and a round trip to memory).
//   A fusion the emitters turn down after all (a reduce read at another row) is undone and
//   re-fused without this rule by the compiler (GpuCompiler's fusion legalization).
#pragma once

#include "kiln/passes/fusion_policy.h"

namespace kiln::codegen {

struct GpuFusionOptions {
  FusionCostOptions cost;
  // Largest constant (bytes) compiled into a kernel; larger ones are read from their buffer.
  int64_t constant_max_bytes = 4096;
  // Note [Normalization fusion].
  bool normalization_fusion = true;
};

class GpuFusionPolicy : public FusionPolicy {
 public:
  explicit GpuFusionPolicy(GpuFusionOptions options = DefaultOptions());
  static GpuFusionOptions DefaultOptions();

  std::string_view name() const override { return "gpu"; }
  bool IsFusibleProducer(const HloInstruction& instr) const override;
  std::optional<FusionKind> FusionKindForRoot(const HloInstruction& instr) const override;
  FusionDecision CanFuseIntoOperand(const HloInstruction& producer, const HloInstruction& consumer,
                                    int64_t operand_index) const override;
  FusionDecision ShouldFuse(const HloInstruction& producer, const HloInstruction& consumer,
                            bool producer_dies) const override;
  FusionKind KindAfterFusion(const HloInstruction& producer,
                             const HloInstruction& consumer) const override;

  // Whether a generated loop kernel computes `instr` (not a fusion) inside a loop fusion.
  bool IsLoopFusibleOp(const HloInstruction& instr) const;
  const GpuFusionOptions& gpu_options() const { return gpu_options_; }

 private:
  // A reduce (or a reduction fusion rooted at one) whose reduced dimensions are the minor
  // ones of its row-major input.
  bool IsRowReduction(const HloInstruction& instr) const;
  FusionDecision CanFuseNormalization(const HloInstruction& producer,
                                      const HloInstruction& consumer) const;

  GpuFusionOptions gpu_options_;
};

}  // namespace kiln::codegen
