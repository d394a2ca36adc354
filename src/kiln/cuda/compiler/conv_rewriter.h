// ConvRewriter: HLO convolutions -> cuDNN convolution custom calls (conv_config.h).
//
// A convolution whose operands and result share one element type of f32, f16, bf16 or f64,
// with 1 to 3 spatial dimensions and batch_group_count 1, becomes
//
//     transpose^-1( __kiln$conv( transpose(pad(x)), transpose(reverse(w)) ) )
//
// with each piece left out when it is the identity:
//   layout      x, w and y are transposed into channels-last (NHWC / OHWI / NHWC) unless x and
//               y are both channels-first already (then NCHW / OIHW / NCHW); the transposes of
//               weights are small, and those of activations fuse with their producers and
//               consumers;
//   pad         lhs (base) dilation becomes interior padding and padding cuDNN cannot express
//               (negative, or high < low with an output the symmetric padding would change)
//               becomes an explicit pad of x, the convolution then padding nothing;
//   reverse     window reversal becomes a reverse of the filter's spatial dimensions.
// That runs every convolution JAX writes -- including the gradient forms: the gradient with
// respect to the input (lhs dilation = the forward strides, a reversed filter with swapped
// feature dimensions) and with respect to the filter (the batch dimension contracted as the
// feature dimension, rhs dilation = the forward strides) -- as one forward cuDNN call. (XLA
// maps the gradient forms onto cuDNN's backward-data and backward-filter calls instead; those
// avoid the zeros of the interior padding, which costs strided gradients up to stride^2 more
// work. kiln does not do that yet.)
//
// Epilogue fusion (forward, f32/f16/bf16): following the custom call's result (through the
// layout transpose, which must then be the identity), in order, each with that single use:
//   multiply by broadcast(s[K]) along the feature dimension (first only)
//                                                      -> folded into the filter: w * s[K]
//   add broadcast(bias[K]) along the feature dimension -> bias
//   add a value of the result's shape                  -> side input (scale 1)
//   max(x, 0)                                          -> relu
// (cuDNN's fused call y = act(alpha conv + side + bias).)
//
// Everything else (integer and complex convolutions, mixed types such as bf16 -> f32,
// batch_group_count > 1, no spatial dimension) stays a convolution instruction.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln::cuda {

struct ConvRewriterOptions {
  // Fuse bias / side input / relu into the cuDNN call.
  bool fuse_epilogues = true;
};

class ConvRewriter : public HloPass {
 public:
  explicit ConvRewriter(ConvRewriterOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "conv-rewriter"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  ConvRewriterOptions options_;
};

}  // namespace kiln::cuda
