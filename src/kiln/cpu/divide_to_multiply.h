// DivideByBroadcastToMultiply: x / broadcast(y) -> x * broadcast(1 / y), for f32 and f64, when
// y has at most a quarter of the result's elements.
//
// A division costs several multiplications (vdivps has about a fifth of vmulps' throughput),
// and dividing by a broadcast value is common: softmax normalizes rows by their sums,
// attention scales by 1/sqrt(d), means divide by counts. The reciprocal is computed once per
// element of y (or folded, for a constant) and the big loop multiplies. XLA's CPU backend
// makes the same rewrite.
//
// Not bit-exact: x * (1/y) rounds twice, so it may differ from x / y by an ulp
// (BackendTolerance allows it). Special values stay as they were (x/0 = x*inf, 0/0 = 0*inf
// = NaN, x/inf = x*0), except a divisor below 1/FLT_MAX in magnitude (a denormal), whose
// reciprocal overflows to infinity. f16/bf16 are left alone (the reciprocal would round to
// the narrow type first), and so are complex types.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln::cpu {

class DivideByBroadcastToMultiply : public HloPass {
 public:
  std::string_view name() const override { return "divide-by-broadcast-to-multiply"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln::cpu
