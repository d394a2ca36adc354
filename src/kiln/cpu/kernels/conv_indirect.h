// Direct f32 convolution without im2col (internal to src/kiln/cpu/kernels): an "indirect GEMM"
// over the canonical [N, spatial..., C] input and [taps, C, O] kernel.
//
// Note [Indirect convolution]
//   The im2col path copies every output position's patch (taps x C values) into a matrix and
//   multiplies it with the kernel matrix through Eigen, which packs both operands again: three
//   passes over taps x the input before the first multiply-add. Here the patch is never built.
//   Per output position and tap, a pointer names the C contiguous input features the tap reads
//   (an input position of the canonical, position-major input), or a row of zeros for taps in
//   padding, between lhs-dilated elements or outside the input. A register-blocked micro-kernel
//   computes MR output positions x NR output features (NR = 16 * NV): per input feature c it
//   loads NV vectors of the packed kernel row and broadcasts one value from each of the MR rows
//   (fused multiply-add with an embedded broadcast), accumulating over every tap of a K block
//   in registers, so each output value is written once per K block. The kernel is packed once
//   per run into panels of NR columns (zero-padded), and K blocks are whole taps sized so that a
//   block of the packed kernel (taps x C x NR floats) stays in L1 while a chunk of rows walks
//   over it. Rows are split over the pool in chunks. Borders, strides, dilations and window
//   reversal all enter through the pointer table (the position tables of the conv kernel).
//   Compiled for AVX-512 (16 lanes) or AVX2+FMA (8 lanes); IndirectConvAvailable() is false
//   otherwise and the caller keeps the im2col path.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/cpu/kernel.h"
#include "kiln/cpu/kernels/gemm.h"

namespace kiln::cpu::internal {

struct IndirectConvGeometry {
  int64_t batch = 0;         // output batch N_out (input batch n is read for output batch n)
  int64_t in_stride = 0;     // floats per input position (all input features, C_in)
  int64_t channels = 0;      // features each tap contracts (= in_stride: no feature groups)
  int64_t out_features = 0;  // O: kernel matrix columns and output row length
  std::vector<int64_t> in_sp, k_sp, out_sp;  // spatial sizes (input, kernel, output)
  // Per spatial dim i: pos[i][x * k_sp[i] + t] = the input position tap t of output position x
  // reads along dim i, or -1 (padding / hole / reversed taps already applied).
  const std::vector<std::vector<int64_t>>* pos = nullptr;
};

// Whether this build has a micro-kernel (AVX-512 or AVX2 with FMA).
bool IndirectConvAvailable();

// Whether the indirect path is expected to beat im2col for this geometry (enough features per
// tap and output features to fill the vector registers).
bool IndirectConvWorthIt(const IndirectConvGeometry& g);

// out[r, o] = sum over taps t and features c of in[row(r, t), c] * kern[t, c, o], for the
// N_out x prod(out_sp) output positions r (row-major [N, spatial..., O]). `in` is canonical
// [N, in_sp..., in_stride], `kern` is [prod(k_sp), channels, O]. Uses ctx.pool when `threads`.
void IndirectConvF32(const IndirectConvGeometry& g, const float* in, const float* kern,
                     float* out, const KernelContext& ctx, bool threads);

// The same micro-kernel as a plain f32 GEMM (gemm.h's GemmShape; taps = 1, the rows of A read
// in place, B packed): whether it takes the shape (A not transposed, K >= 16, N and M not tiny),
// and the product.
bool DirectGemmF32Supported(const GemmShape& s);
void DirectGemmF32(const GemmShape& s, const float* a, const float* b, float* c,
                   const KernelContext& ctx, bool threads);

}  // namespace kiln::cpu::internal
