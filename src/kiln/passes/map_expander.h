// MapExpander: `map` of a computation made of elementwise ops becomes those ops on whole
// arrays, so that every backend fuses and runs it natively (the cpu ran every map on the
// evaluator's kernel: random_module_differential_test counted 49 in 300 modules).
//
// Note [Map expansion]
//   map(x_1..x_n), to_apply=f applies the scalar computation f elementwise. When every
//   instruction of f is a parameter, a scalar constant or an elementwise op (IsElementwiseOpcode,
//   not map itself: a nested map is expanded first, inner computations before outer), the map
//   equals f's instructions cloned with the map's dimensions: parameter i is operand i, a
//   constant is broadcast to the map's shape, and each op keeps its own element type (f's
//   scalar shape) and attributes (compare direction, convert's target type...). Anything else in
//   f (a reduce, rng, a call, a tuple) leaves the map for the evaluator's kernel. This is XLA's
//   MapInliner generalized from a single-op root to a whole elementwise body.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class MapExpander : public HloPass {
 public:
  std::string_view name() const override { return "map-expander"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
