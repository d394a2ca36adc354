// GemmRewriter: canonical dots (dot_canonicalizer.h) -> GEMM custom calls (gemm_config.h).
//
// Runs after DotCanonicalizer and the simplifier, before fusion. For every dot in the canonical
// [B,M,K] x [B,K,N] form whose types a BLAS library runs (f32, bf16, f16 -> same or f32, f64,
// c64, c128, s8 -> s32; see GemmTypesSupported) -- or whose floating-point operands widen
// exactly to an f32/f64 result (mixed types: converted first, then a full-precision GEMM) --
// it builds one `__kiln$gemm` custom call:
//
//   Operand layouts. An operand that is a transpose of a buffer (possibly between reshapes, as
//   the canonicalizer writes it) whose bytes are the canonical matrix transposed -- [B,K,M] for
//   the lhs, [B,N,K] for the rhs -- is read from that buffer with `*_transposed` set: no
//   transpose kernel runs. Reshapes of row-major buffers are looked through (same bytes).
//   Any other transpose stays (a transpose kernel, fused where the fusion pass can).
//
//   Epilogue. Following the dot's single use (through the reshape back to the dot's original
//   shape, which the GEMM then produces directly), in this order, each step only when the value
//   has exactly that one use and the same element type:
//     multiply by a scalar constant                    -> alpha
//     add broadcast(bias[N]) over the last dimension   -> bias        (f32 results; bf16/f16
//                                                         only with fuse_low_precision_bias)
//     add a value of the result's shape                -> beta = 1, c (the residual; not one
//                                                         computed from the dot itself)
//     max(x, 0)                                        -> relu        (f32/bf16/f16 results)
//     the tanh form of GELU                            -> gelu        (f32/bf16/f16 results)
//   GELU is recognized by its values, not its spelling: the elementwise region between the
//   value and one sink (multiply/add/subtract/divide/negate/tanh with scalar constants) is
//   evaluated in double precision on sample points and must agree with
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) to within the rounding of the constants
//   (JAX's bf16 modules carry bf16-rounded constants).
//
// Precision: the custom call records the dot's highest operand precision (an algorithm=
// dot_f32_f32_f32* counts as HIGHEST); f32 GEMMs run in TF32 below HIGHEST, as XLA's GPU
// backend does.
//
// The replaced instructions are left for DCE.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln::cuda {

struct GemmRewriterOptions {
  // Fuse bias/residual/scaling/activation epilogues into the GEMM.
  bool fuse_epilogues = true;
  // Fold transposed operands into the GEMM's operand layouts.
  bool fold_transposes = true;
  // Fuse a bf16/f16 bias add into a bf16/f16 GEMM. The HLO rounds the product to bf16/f16 and
  // then rounds the sum again; cuBLASLt adds the bias in f32 and rounds once, which differs
  // from the evaluator (and XLA) by an ulp of the product -- a large relative error where the
  // bias cancels the product. Off by default: the add then runs in a fused elementwise kernel
  // (bias adds done in f32 by the HLO fuse either way).
  bool fuse_low_precision_bias = false;
};

// Whether a library GEMM computes lhs x rhs -> out for these element types.
bool GemmTypesSupported(PrimitiveType lhs, PrimitiveType rhs, PrimitiveType out);

class GemmRewriter : public HloPass {
 public:
  explicit GemmRewriter(GemmRewriterOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "gemm-rewriter"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  GemmRewriterOptions options_;
};

}  // namespace kiln::cuda
