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
// That runs every convolution JAX writes as one forward cuDNN call. The gradient forms JAX's
// autodiff writes are first mapped onto cuDNN's backward calls instead (as XLA's convolution
// rewriter does), which avoids the zeros of interior padding (up to stride^2 more work) and
// the large-"filter" forward convolutions of the filter gradient:
//   backward data    dx = conv(dy, w'): lhs dilation = the forward strides, stride 1, w' the
//                    forward filter reversed (a reverse op or window reversal) with its feature
//                    dimensions swapped (feature groups: the group moved from w's output to its
//                    input features). Matched when there is an lhs dilation or w' is a reverse
//                    of all its spatial dimensions; depthwise forms stay forward. The call
//                    takes (dy, w) with w rearranged back (a small filter transpose/reshape)
//                    and, when cuDNN's symmetric padding cannot give dx's size exactly,
//                    computes a larger dx that a slice trims.
//   backward filter  dw = conv(x, dy): x's batch dimension contracted as the feature, its
//                    feature dimension the batch, rhs dilation = the forward strides, stride =
//                    the forward filter dilation, batch_group_count = the forward feature groups.
//                    Matched when there is an rhs dilation, batch groups, or the "filter" dy is
//                    larger than the result in every spatial dimension (forward filters are
//                    small: XLA's heuristic). Padding cuDNN cannot express pads x explicitly.
// Every other convolution (and a gradient form whose geometry cuDNN cannot take) goes the
// forward way above.
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
  // Map the gradient forms onto cuDNN's backward-data / backward-filter calls (false: run them
  // as forward convolutions).
  bool backward_convolutions = true;
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
