// ConvDesc: one convolution as HLO sees it, in the terms cuDNN can run (conv.h runs it).
//
// A ConvDesc always describes the FORWARD geometry: input x [N, C, spatial...], filter
// w [K, C/groups, window...], output y [N, K, out spatial...], strides, padding, filter
// dilations, feature groups. `kind` says which of the three tensors is computed from the other
// two, as XLA's cuDNN calls do:
//   kForward         y  = conv(x, w)
//   kBackwardData    dx = conv^T(dy, w)      (the gradient of conv with respect to x)
//   kBackwardFilter  dw = conv^T(x, dy)      (the gradient with respect to w)
// The GPU compiler recognizes the HLO forms JAX's gradients produce (a convolution with
// lhs_dilation = the forward strides and a reversed, transposed filter; a convolution that
// contracts the batch dimension) and describes them by their forward geometry.
//
// Layouts. cuDNN runs channels-first (NCHW; filter KCRS = HLO "oi01") and channels-last (NHWC;
// filter KRSC = HLO "o01i") tensors, and their 1-D (NCW/NWC) and 3-D (NCDHW/NDHWC) analogues.
// Input, filter and output must use the same one. In HLO dim_labels (physical order, major to
// minor, after the shapes' layouts are applied):
//     bf01_oi01->bf01  channels-first      b01f_o01i->b01f  channels-last
// (and bf0/b0f, bf012/b012f for 1-D/3-D). Anything else -- JAX's default filter "01io" (HWIO)
// included -- is Unimplemented with a message naming the labels, so the compiler inserts a
// transpose (for the filter, usually of a parameter, once) and calls the library.
//
// Padding. cuDNN pads both sides of a spatial dimension by the same amount. An HLO padding
// (low, high) works when low >= 0, high >= 0 and the output size computed with (low, low) is the
// output size asked for: the windows then never read the padding cuDNN adds beyond `high`.
// Otherwise (e.g. low > high + stride - 1, as 'SAME' padding with even windows gives) the
// descriptor is Unimplemented: the compiler pads the input explicitly (a pad fused into the
// producer) and passes symmetric padding.
//
// Not expressible (Unimplemented): lhs (base) dilation other than the backward-data form above,
// window reversal, batch_group_count > 1 other than the backward-filter form, more than 3 spatial
// dimensions, dtypes other than f32/f16/bf16/f64, mixed dtypes.
//
// Fusion (forward only):
//     y = activation(alpha * conv(x, w) + side_input_scale * z + bias)
// with bias (optional) one value per output feature, z of y's shape (the residual; may be y's
// own buffer), activation none or relu, any of the four types. cuDNN's fused call
// (cudnnConvolutionBiasActivationForward) takes the forms with a bias in f32/f16/bf16; every
// form also runs split, as an unfused convolution plus kiln's epilogue kernel (conv.h).
// f32 follows the TF32 policy below.
//
// Precision: f32 convolutions may use TF32 tensor cores under DEFAULT/HIGH precision (as XLA's
// GPU backend does); HIGHEST forbids them. f16/bf16 accumulate in f32; f64 in f64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/types.h"

namespace kiln {
class HloInstruction;
}

namespace kiln::cuda::libs {

enum class ConvKind : uint8_t { kForward, kBackwardData, kBackwardFilter };
std::string_view ConvKindName(ConvKind k);  // "forward", "backward_data", "backward_filter"

// Channels-first: N, C, spatial (filter K, C, window). Channels-last: N, spatial, C (filter K,
// window, C).
enum class ConvLayout : uint8_t { kChannelsFirst, kChannelsLast };
std::string_view ConvLayoutName(ConvLayout l, int spatial_dims);  // "NCHW", "NDHWC", "NWC"...

enum class ConvActivation : uint8_t { kNone, kRelu };

struct ConvDesc {
  ConvKind kind = ConvKind::kForward;
  PrimitiveType dtype = PrimitiveType::kF32;  // of x, w and y alike
  Precision precision = Precision::kDefault;
  ConvLayout input_layout = ConvLayout::kChannelsLast;
  ConvLayout filter_layout = ConvLayout::kChannelsLast;
  ConvLayout output_layout = ConvLayout::kChannelsLast;

  int64_t batch = 0;
  int64_t input_features = 0;   // C (all groups)
  int64_t output_features = 0;  // K (all groups)
  std::vector<int64_t> input_spatial;   // 1 to 3 sizes, e.g. {H, W}
  std::vector<int64_t> filter_spatial;  // {R, S}
  std::vector<int64_t> output_spatial;  // {P, Q}
  // Per spatial dimension; empty means all 1 (strides, dilations) or all 0 (padding).
  std::vector<int64_t> strides;
  std::vector<int64_t> padding_low, padding_high;
  std::vector<int64_t> dilations;  // of the filter (HLO rhs_dilate)
  int64_t feature_group_count = 1;

  // Fused forward epilogue (see the header comment).
  double alpha = 1.0;
  bool has_bias = false;
  double side_input_scale = 0.0;  // != 0: z is added
  ConvActivation activation = ConvActivation::kNone;

  int spatial_dims() const { return static_cast<int>(input_spatial.size()); }
  bool fused() const {
    return has_bias || side_input_scale != 0 || activation != ConvActivation::kNone;
  }
  // Dimensions of x, w and y in their own layout's order (what HLO shapes say).
  std::vector<int64_t> InputDims() const;
  std::vector<int64_t> FilterDims() const;
  std::vector<int64_t> OutputDims() const;
  std::string ToString() const;
};

// Checks a descriptor: sizes, the output size implied by the geometry, the padding rule, groups,
// layouts, types, fusion. InvalidArgument for inconsistent descriptors, Unimplemented for
// consistent ones cuDNN cannot run.
Status ValidateConvDesc(const ConvDesc& desc);

// Input, filter and output layouts from HLO dimension numbers read in physical order (major to
// minor). Unimplemented (naming the labels) when a tensor is neither channels-first nor
// channels-last.
struct ConvLayouts {
  ConvLayout input, filter, output;
};
StatusOr<ConvLayouts> ConvLayoutsFromDimNumbers(const ConvolutionDimensionNumbers& dnums);

// The forward ConvDesc of an HLO `convolution` instruction (operands x, w; shapes with or
// without layouts -- dimension numbers are first mapped to physical order through them).
// Unimplemented for what cuDNN cannot run as is (see the header comment), with the reason.
StatusOr<ConvDesc> ConvDescFromHlo(const HloInstruction& convolution);

}  // namespace kiln::cuda::libs
