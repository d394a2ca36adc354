// DotTransposeFolding: a canonical dot (passes/dot_canonicalizer.h) whose operand is a
// transpose that only swaps the two minor dimensions reads the transpose's operand instead,
// with its contracting dimension moved:
//
//   dot(transpose(x [B,K,M]) , y)  ->  dot(x, y), lhs_contracting_dims={rank-2}
//   dot(x, transpose(y [B,N,K]))   ->  dot(x, y), rhs_contracting_dims={rank-1}
//
// and a transpose of a dot's result over its two minor dimensions becomes the dot of the
// operands the other way round (its only user being the transpose):
//
//   transpose(dot(a, b))           ->  dot(b, a), contracting dimensions swapped
//
// The CPU dot kernel reads both operand forms in place (Eigen's contraction takes transposed operands),
// so the transpose kernel and its buffer go away: backward passes (x^T dy, dy W^T) and
// attention (q k^T) are full of them. Batch dimensions stay where they are (leading). A
// transpose with other users stays for them.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln::cpu {

class DotTransposeFolding : public HloPass {
 public:
  std::string_view name() const override { return "dot-transpose-folding"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln::cpu
