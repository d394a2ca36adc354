// AlgebraicSimplifier: local rewrites that make a module smaller or simpler without changing
// any value it computes.
//
// Every rewrite preserves XLA's semantics exactly -- NaN and infinity propagation, the sign of
// zero, integer wraparound -- as the reference evaluator (src/kiln/eval) defines them; where a
// rewrite would be exact only for some types, it is limited to those types. The one documented
// exception is dot-k1 (sign of a zero product), see below. Layouts are not semantic at this
// stage (see hlo_editor.h), except for the entry result and bitcast operands, which are kept.
// Instructions with control dependencies are left alone.
//
// Notation: `0`, `1`, `-inf`, `true`, `all-ones` stand for a constant -- or a broadcast of a
// constant -- whose elements all have that value. "ints" means integer types (not pred),
// "floats" real floating-point types; complex types are excluded unless named.
//
// The rewrites (name: before -> after [types/conditions]):
// Elementwise identities (algebraic_simplifier.cc)
//   add-zero:        add(x, 0), add(0, x) -> x             [ints; floats only for -0.0]
//   sub-zero:        subtract(x, 0) -> x                   [ints; floats only for +0.0]
//   sub-self:        subtract(x, x) -> 0                   [ints]
//   mul-one:         multiply(x, 1), multiply(1, x) -> x   [ints, floats]
//   mul-zero:        multiply(x, 0), multiply(0, x) -> 0   [ints; floats keep NaN/inf*0]
//   div-one:         divide(x, 1) -> x                     [ints, floats]
//   div-pow2:        divide(x, +-2^k) -> multiply(x, +-2^-k) [floats, when 2^-k is exact]
//   and-identity:    and(x, all-ones) -> x; and(x, 0) -> 0 [pred, ints]
//   or-identity:     or(x, 0) -> x; or(x, all-ones) -> all-ones [pred, ints]
//   xor-identity:    xor(x, 0) -> x; xor(x, x) -> 0        [pred, ints]
//   idempotent:      maximum(x, x), minimum(x, x), and(x, x), or(x, x) -> x
//   minmax-bound:    maximum(x, -inf|INT_MIN|false), minimum(x, +inf|INT_MAX|true) -> x
//   select-const:    select(true, a, b) -> a; select(false, a, b) -> b
//   select-same:     select(p, a, a) -> a
//   select-pred:     select(p, true, false) -> p; select(p, false, true) -> not(p)
//   negate-negate:   negate(negate(x)) -> x
//   not-not:         not(not(x)) -> x                      [pred, ints]
//   convert-same:    convert(x) and bitcast-convert(x) to x's own type -> x
//   copy-same:       copy(x) with x's layout -> x
//   compare-self:    compare(x, x) -> true (EQ, GE, LE) / false (NE, GT, LT)
//                                                          [ints, pred; floats with TOTALORDER]
// Shape-op chains (algebraic_simplifier_shape.cc)
//   reshape-noop:    reshape(x) to x's dimensions -> x
//   reshape-reshape: reshape(reshape(x)) -> reshape(x)
//   scalar-bcast:    reshape/transpose/slice/reverse(broadcast(scalar s)) -> broadcast(s)
//   transpose-id:    transpose(x) with the identity permutation -> x
//   transpose-transpose: transpose(transpose(x)) -> transpose(x) with the composed permutation
//   transpose-degenerate: transpose that only moves size-1 dimensions -> reshape(x)
//   broadcast-id:    broadcast(x) onto x's own dimensions in order -> x
//   broadcast-broadcast: broadcast(broadcast(x)) -> broadcast(x)
//   slice-full:      slice covering the whole operand with stride 1 -> x
//   slice-slice:     slice(slice(x)) -> slice(x)
//   slice-concat:    slice(concatenate(..., x, ...)) lying within x -> slice(x) (or x)
//   concat-single:   concatenate(x) -> x; operands with no elements are dropped
//   pad-noop:        pad(x, v) with all padding 0 -> x
//   reverse-degenerate: reverse drops dimensions of size <= 1; reverse over none -> x
//   reverse-reverse: reverse(reverse(x, D), D) -> x
//   convert-convert: convert(convert(x)) -> convert(x) (or x) when the inner convert is exact
//                    for every value and the conversion kind (int->int wrap, float->int
//                    saturate, rounding) of the outer one is unchanged
//   dynamic-slice-const: dynamic-slice with constant indices -> slice (indices clamped)
//   dynamic-slice-full: dynamic-slice of the operand's full size -> x (indices clamp to 0)
//   dus-full:        dynamic-update-slice(x, u, ...) with u of x's size -> u
//   dus-empty:       dynamic-update-slice(x, u, ...) with an empty u -> x
// Dots and reductions (algebraic_simplifier_dot_reduce.cc)
//   dot-empty:       dot with no elements to contract (a contracting dimension of size 0)
//                    -> broadcast(0)
//   dot-k1:          dot whose contracting dimensions all have size 1 -> multiply of two
//                    broadcasts into the result shape [ints, floats; operand types must
//                    convert exactly into the result type]. Exact except that a zero product
//                    of negative sign stays -0 where the dot's sum from +0 gives +0.
//   reduce-empty:    reduce of an operand with no elements -> broadcast(init)
//   reduce-degenerate: size-1 reduced dimensions are dropped (reshape) when other reduced
//                    dimensions remain (the order of the fold is unchanged)
//   reduce-trivial:  reduce over only size-1 dimensions (or none) with a reducer that is one
//                    binary op f(acc, x) (add, multiply, maximum, minimum, and, or)
//                    -> f(broadcast(init), reshape(x)) (exactly the fold of one element)
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

struct AlgebraicSimplifierOptions {
  // Sweeps over each computation per Run (a sweep applies rewrites in post order; chains
  // created by one rewrite are picked up by the next sweep).
  int max_sweeps = 8;
  // Enables dot-k1 (off: dots stay dots, e.g. for a backend that wants GEMMs kept).
  bool enable_dot_strength_reduction = true;
};

class AlgebraicSimplifier : public HloPass {
 public:
  explicit AlgebraicSimplifier(AlgebraicSimplifierOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "algebraic-simplifier"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  AlgebraicSimplifierOptions options_;
};

}  // namespace kiln
