// The GEMM custom call: how the GPU compiler represents a matrix product that a BLAS library
// runs, between the GemmRewriter (gemm_rewriter.h) and the GEMM thunk.
//
//   %g = bf16[8,1024,3072]{2,1,0} custom-call(%x, %w, %bias), custom_call_target="__kiln$gemm",
//        backend_config={"batch":1,"m":8192,"n":3072,"k":1024,"lhs_transposed":false,...}
//
// Operands: lhs, rhs, then c when beta != 0, then bias when the epilogue has one. The
// instructions' shapes are free: only their dense row-major bytes matter, which hold
//   lhs  [batch, m, k]  ([batch, k, m] when lhs_transposed)
//   rhs  [batch, k, n]  ([batch, n, k] when rhs_transposed)
//   out  [batch, m, n]  (the custom call's own shape; c has the same bytes)
//   bias [n]            (the same for every batch entry and row)
// with batch entries `batch_stride` apart: lhs_broadcast / rhs_broadcast mean the operand is one
// matrix shared by every batch entry. So a dot whose result was reshaped ([8192, 3072] ->
// [8, 1024, 3072]) is one GEMM producing the reshaped shape, and an operand that was a transpose
// of a buffer is that buffer read transposed (no transpose kernel).
//
// Result: out = epilogue(alpha * (lhs . rhs) + beta * c + bias), epilogue one of none, relu,
// gelu (the tanh approximation), applied after the additions, as cuBLASLt does.
//
// Types come from the shapes: lhs/rhs element types, the custom call's element type for out,
// c and bias. `precision` is the dot's highest operand precision (f32 GEMMs use TF32 unless it
// is HIGHEST).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cuda {

inline constexpr std::string_view kGemmCallTarget = "__kiln$gemm";

enum class GemmActivation : uint8_t { kNone, kRelu, kGelu };
std::string_view GemmActivationName(GemmActivation a);  // "none", "relu", "gelu"

struct GemmConfig {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  bool lhs_transposed = false;
  bool rhs_transposed = false;
  bool lhs_broadcast = false;  // one lhs matrix for every batch entry
  bool rhs_broadcast = false;
  double alpha = 1.0;
  double beta = 0.0;  // != 0: operand 2 is c
  bool has_bias = false;
  GemmActivation activation = GemmActivation::kNone;
  Precision precision = Precision::kDefault;

  // Operand positions.
  int64_t c_operand() const { return beta != 0 ? 2 : -1; }
  int64_t bias_operand() const { return has_bias ? (beta != 0 ? 3 : 2) : -1; }
  int64_t operand_count() const { return 2 + (beta != 0) + has_bias; }
  // Multiply-adds: batch * m * n * k.
  int64_t flops() const { return 2 * batch * m * n * k; }

  std::string ToJson() const;
  static StatusOr<GemmConfig> FromJson(std::string_view json);
  bool operator==(const GemmConfig&) const = default;
};

bool IsGemmCall(const HloInstruction& instr);
// The config of a GEMM custom call, checked against its operands' and result's sizes.
StatusOr<GemmConfig> GetGemmConfig(const HloInstruction& gemm);

}  // namespace kiln::cuda
