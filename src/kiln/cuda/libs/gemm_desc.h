// GemmDesc: one (batched) matrix product as HLO sees it, independent of the library that runs it.
//
// The GPU compiler canonicalizes a dot into [batch, m, k] x [batch, k, n] -> [batch, m, n] with
// transposes folded into the operands' storage order (no transpose kernels), then describes it
// here. Both GEMM backends (cuBLASLt: gemm.h, cuBLAS: cublas_gemm.h) take the same descriptor.
//
// Storage is row-major, as HLO buffers with the default layout are:
//   lhs  transposed=false: [m, k]   transposed=true: [k, m]
//   rhs  transposed=false: [k, n]   transposed=true: [n, k]
//   out  transposed=false: [m, n]   transposed=true: [n, m]
// `leading_dim` is the distance in elements between consecutive rows of the stored matrix (0:
// dense, the stored column count); `batch_stride` the distance between consecutive matrices
// (-1: dense, stored rows * leading_dim; 0: the same matrix for every batch entry, lhs/rhs only).
//
// NVIDIA's libraries are column-major. A row-major [R, C] matrix with leading dimension L is a
// column-major [C, R] matrix with the same L, so out = lhs * rhs is computed as
// out^T = rhs^T * lhs^T: the library's A is our rhs, its B our lhs, its m our n (see
// Note [Row-major GEMMs on column-major libraries] in gemm_desc.cc and MapToColumnMajor below).
// A consequence for epilogues: cuBLASLt's bias is one value per row of its D, i.e. per column n
// of our out -- exactly the HLO pattern `add(dot, broadcast(bias[n]))` over the last dimension.
//
// Result: out = epilogue(alpha * (lhs . rhs) + beta * c + bias), where c (read only when
// beta != 0) has out's type and layout and may be the out buffer itself (a residual add done in
// place). Epilogues: relu = max(x, 0); gelu = the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as jax.nn.gelu(approximate=True).
//
// Types (lhs, rhs -> out; accumulation):
//   f32, f32 -> f32        f32 accumulation; TF32 tensor cores under precision DEFAULT/HIGH
//                          (XLA's GPU behaviour, JAX's default), true f32 under HIGHEST
//   bf16, bf16 -> bf16|f32 f32 accumulation          f16, f16 -> f16|f32   f32 accumulation
//   f8e4m3fn|f8e5m2 (not both e5m2) -> f32|bf16|f16|f8e4m3fn|f8e5m2   f32 accumulation; optional
//                          device scales (one f32 each): out = d_scale * (alpha * a_scale * b_scale
//                          * lhs.rhs + beta * c); d_amax receives max|result before d_scale| (f8
//                          outputs). cuBLASLt requires k contiguous in both operands (lhs [m,k],
//                          rhs [n,k]) and a non-transposed out.
//   s8, s8 -> s32          s32 accumulation, alpha/beta integral
//   f64, f64 -> f64        c64, c64 -> c64, c128, c128 -> c128 (alpha may be complex)
// Anything else is Unimplemented, naming the combination, so the compiler can fall back (e.g. to
// converting the operands, or to a generated kernel).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/types.h"

namespace kiln::cuda::libs {

enum class GemmEpilogue : uint8_t { kNone, kBias, kRelu, kGelu, kBiasRelu, kBiasGelu };
std::string_view GemmEpilogueName(GemmEpilogue e);  // "none", "bias", "relu", "bias_gelu", ...
bool GemmEpilogueHasBias(GemmEpilogue e);

struct GemmOperandDesc {
  PrimitiveType dtype = PrimitiveType::kInvalid;
  bool transposed = false;    // see the storage table above
  int64_t leading_dim = 0;    // elements between stored rows; 0 = dense
  int64_t batch_stride = -1;  // elements between matrices; -1 = dense, 0 = broadcast
};

struct GemmDesc {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  GemmOperandDesc lhs, rhs, out;
  // The highest operand precision of the dot (HLO operand_precision); only f32 (and c64) GEMMs
  // look at it: kHighest forbids TF32. kPackedNibble counts as kDefault.
  Precision precision = Precision::kDefault;
  double alpha = 1.0;
  double alpha_imag = 0.0;  // c64 and c128 only
  double beta = 0.0;        // beta != 0 reads c (out's type and layout; may alias out)
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  // Type of the bias vector (n elements, batch stride 0: the same for every batch entry).
  // kInvalid (default): out's type, or bf16 when out is an f8 type.
  PrimitiveType bias_dtype = PrimitiveType::kInvalid;
  // f8 scales and amax: whether GemmBuffers provides them (device pointers to one f32 each).
  bool has_a_scale = false, has_b_scale = false, has_d_scale = false, has_d_amax = false;
  // The most workspace an algorithm may use. Default 32 MiB (what cuBLAS recommends on Hopper).
  uint64_t max_workspace_bytes = uint64_t{32} << 20;
  // Alignment in bytes that every buffer of every run is guaranteed to have (algorithms may rely
  // on it; Run checks it). Default 256 (the runtime's allocators align to 256). Lower it for
  // buffers at odd offsets.
  uint64_t min_alignment_bytes = 256;

  std::string ToString() const;  // "gemm bf16[8,64,32]x[8,32,16]->bf16 lhs^T ... epilogue=bias"
};

// How the accumulation and scaling are done, resolved from the operand types and precision.
enum class GemmCompute : uint8_t {
  kF32,        // f32 accumulation, f32 scale (also bf16/f16/f8 inputs)
  kF32Tf32,    // f32 accumulation with TF32 tensor-core products (f32 inputs, DEFAULT/HIGH)
  kF64,
  kS32,        // s8 inputs
  kC32,        // c64: complex f32 accumulation (full f32 products)
  kC32Tf32,    // c64 under DEFAULT/HIGH: TF32 products
};
std::string_view GemmComputeName(GemmCompute c);

struct GemmTypes {
  PrimitiveType a, b, c, d, bias;  // library A = rhs, B = lhs (see the header comment), C, D
  PrimitiveType scale;             // type of alpha/beta: f32, f64, s32, c64 or c128
  GemmCompute compute;
};

// Checks the descriptor (sizes, strides, type combination, epilogue, scales) and resolves the
// types. InvalidArgument for an inconsistent descriptor, Unimplemented for a well-formed one
// that no NVIDIA library runs.
StatusOr<GemmTypes> ResolveGemmTypes(const GemmDesc& desc);

// The product as a column-major library sees it: D(m x n) = op(A)(m x k) * op(B)(k x n).
struct ColumnMajorMatrix {
  int64_t rows = 0, cols = 0;  // of the stored column-major matrix (before op)
  int64_t ld = 0;              // >= rows
  int64_t batch_stride = 0;    // 0 only for broadcast operands (or batch == 1)
};
struct ColumnMajorGemm {
  bool swapped = true;  // A = rhs, B = lhs (out not transposed); false: A = lhs, B = rhs
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ColumnMajorMatrix a, b, c;  // c describes both C and D
};

// Validates `desc` (as ResolveGemmTypes does) and maps it onto the column-major form.
StatusOr<ColumnMajorGemm> MapToColumnMajor(const GemmDesc& desc);

// Bytes spanned by a column-major operand of `batch` matrices of type `t`:
// ((batch-1) * batch_stride + (cols-1) * ld + rows) elements.
uint64_t ColumnMajorBytes(const ColumnMajorMatrix& m, int64_t batch, PrimitiveType t);

}  // namespace kiln::cuda::libs
