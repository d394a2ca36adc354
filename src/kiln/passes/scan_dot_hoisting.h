// ScanDotHoisting: the per-step input projection of a scan, done once before the loop.
//
// Note [Scan dot hoisting]
//   An RNN written with lax.scan multiplies each step's slice of the scanned input by a weight
//   that never changes:
//     body:  x_t = reshape(dynamic-slice(xs, t, 0, 0))     xs, W passed through unchanged
//            y_t = dot(x_t, W)
//   Every step's product is a row block of one product of the whole input, so the pass computes
//   P = dot(xs, W) once before the loop (one large GEMM instead of T small ones on the loop's
//   critical path), carries P in the loop state, and replaces y_t by
//   reshape(dynamic-slice(P, t, 0, 0)). This is exact, whatever the index: dynamic-slice
//   clamps its start along the sliced dimension to [0, T-1] the same way for xs and for P
//   (both have T rows there, the slice one), and the other dimensions are taken whole, so the
//   same rows of xs meet the same W. The sliced operand may be either side of the dot, with or
//   without the reshape that drops the slice's unit dimension; the dot has no batch dimensions;
//   W is a pass-through state element or a constant. Each element of y_t is the same sum of
//   products as before; only the GEMM that computes it changes (its rounding, within the
//   dot's tolerance).
//   Worth it when the loop visits most rows: the loop's trip count must be known and at least
//   half of T, and P at most 8x the bytes of xs (and 2 GiB). The loop's condition and body must
//   be called by this loop alone, its users must all be get-tuple-elements, and it has no
//   control dependencies. The state element that held xs is left for the while-loop
//   simplifier to drop when nothing else reads it.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class ScanDotHoisting : public HloPass {
 public:
  std::string_view name() const override { return "scan-dot-hoisting"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
