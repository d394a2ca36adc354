// DotCanonicalizer: rewrites every dot into one canonical form, so that GEMM emitters and
// library calls see one layout of dimension numbers:
//
//   without batch dimensions:  [M, K] x [K, N] -> [M, N]
//       lhs_contracting_dims={1}, rhs_contracting_dims={0}
//   with batch dimensions:     [B, M, K] x [B, K, N] -> [B, M, N]
//       lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
//
// B, M, K and N are each the product of the corresponding dimensions of the original dot
// (batch dimensions, lhs free dimensions, contracting dimensions, rhs free dimensions); a role
// with no dimensions (a matrix-vector product, a dot of vectors, an outer product) becomes a
// dimension of size 1. The operands are made canonical with an explicit transpose (batch, free,
// contracting for the lhs; batch, contracting, free for the rhs -- left out when it is the
// identity) and a reshape; the result is reshaped back to the original shape. A later layout
// or GEMM pass may fold the transposes into the GEMM's operand layouts.
//
// The canonical dot keeps the original's result element type, operand_precision, algorithm,
// metadata and frontend attributes. Contracting dimensions are flattened in the order the
// dimension numbers list them, so the products are summed in the same order as before (the
// reference evaluator gives bitwise-identical results).
//
// Left alone: dots already canonical, sparse dots, dots with dynamic shapes or non-array
// operands, and ragged/scaled dots (other opcodes).
#pragma once

#include "kiln/hlo/instruction.h"
#include "kiln/passes/pass.h"

namespace kiln {

// Whether `dot` is a dot in one of the two canonical forms above.
bool IsCanonicalDot(const HloInstruction& dot);

class DotCanonicalizer : public HloPass {
 public:
  std::string_view name() const override { return "dot-canonicalizer"; }
  StatusOr<bool> Run(HloModule& module) override;
};

}  // namespace kiln
