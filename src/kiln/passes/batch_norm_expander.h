// BatchNormExpander: batch-norm-training, batch-norm-inference and batch-norm-grad written as
// the reductions and elementwise ops they mean, so that every backend runs them with its native
// kernels (fused like any other reduction) instead of on the host evaluator.
//
// Note [Batch norm expansion]
//   JAX writes batch normalization elementwise (flax's BatchNorm), but XLA's own modules and
//   converted models (mobilenet_v2 in ../shared/corpus: 104 of them) carry the three ops. With
//   x viewed as features along `feature_index`, F features, N = elements per feature:
//     training:  mean = sum(x) / N, var = sum((x - mean)^2) / N (two passes, as the evaluator:
//                no E[x^2] - E[x]^2 cancellation), y = (x - mean) * (scale * rsqrt(var + eps))
//                + offset; result (y, mean, var).
//     inference: y = (x - mean) * (scale * rsqrt(var + eps)) + offset.
//     grad:      (operand, scale, mean, var, dy) -> (dx, dscale, doffset):
//                doffset = sum(dy), s = sum(dy * (x - mean)), dscale = s * rsqrt(var + eps),
//                dx = scale * rsqrt(var + eps) * (dy - doffset / N - (x - mean) * s / (N * (var + eps))).
//   The per-feature factors are computed on [F] vectors and broadcast once. f16 and bf16 are
//   computed in f32 and rounded at the end (the evaluator computes in double: a bf16 chain
//   would be off by many ulps); f32 and f64 in their own type. The sums use an add computation
//   of the compute type, so they fuse as ordinary reductions.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class BatchNormExpander : public HloPass {
 public:
  std::string_view name() const override { return "batch-norm-expander"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
