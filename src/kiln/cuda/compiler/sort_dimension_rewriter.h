// SortDimensionRewriter: sorts along a non-minor dimension -> sorts along the minor one.
//
// The device sort (library_thunks.h, SortThunk) sorts rows: the minor (last) dimension of a
// row-major array. A sort along dimension d < rank-1 would run on the host. This pass rewrites
//
//     sort(x0, x1, ...), dimensions={d}
// into
//     transpose^-1( sort(transpose(x0), transpose(x1), ...), dimensions={rank-1} )
//
// where the transpose moves d to the minor position (the other dimensions keep their order)
// and its inverse moves it back; a variadic sort's results come back through
// get-tuple-element, one transpose each, and a tuple. The comparator, is_stable and every
// other attribute are kept, so the values (and, for stable sorts, the order of equal keys)
// are exactly those of the original sort: sorting is independent along every other dimension
// and the transpose only renames them.
//
// Applied to every sort with one sort dimension d != rank-1 whose operands are arrays, in
// every computation (a transpose pair is cheap next to a round trip through the host); sorts
// the device cannot run for other reasons (comparator shape, types) then run on the host
// along the minor dimension, which is as correct. Sorts with control dependencies are left
// alone. The replacement's results keep the original sort's shapes (layouts included).
#pragma once

#include "kiln/passes/pass.h"

namespace kiln::cuda {

class SortDimensionRewriter : public HloPass {
 public:
  std::string_view name() const override { return "sort-dimension-rewriter"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln::cuda
