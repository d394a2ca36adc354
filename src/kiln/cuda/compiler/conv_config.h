// The convolution custom call: how the GPU compiler represents a convolution that cuDNN runs,
// between the ConvRewriter (conv_rewriter.h) and the convolution thunk.
//
//   %c = f32[32,56,56,64]{3,2,1,0} custom-call(%x, %w), custom_call_target="__kiln$conv",
//        backend_config={"layout":"channels_last","batch":32,"input_features":64,...}
//
// The config always describes a convolution's FORWARD geometry y = conv(x, w); `kind` says which
// tensor the call computes from the other two (as cuDNN's three calls do):
//   forward          operands (x, w [, bias] [, side])   result y
//   backward_data    operands (dy, w)                    result dx  (the gradient w.r.t. x)
//   backward_filter  operands (x, dy)                    result dw  (the gradient w.r.t. w)
// dy has y's shape, dx x's, dw w's. All are row-major tensors in one of cuDNN's layouts:
//   channels_last   x [N, spatial..., C]   w [K, window..., C/groups]   y [N, out spatial..., K]
//   channels_first  x [N, C, spatial...]   w [K, C/groups, window...]   y [N, K, out spatial...]
// with per-spatial-dimension strides, padding (low, high; both >= 0 and such that the output
// size is the one computed with (low, low): the padding cuDNN adds beyond `high` is never read)
// and filter dilations, and feature groups. The rewriter makes everything else explicit around
// the call (transposes into these layouts, pads for base dilation and unusual padding, a
// reverse for window reversal; for the backward kinds, filter rearrangements and a slice of an
// over-sized dx -- see conv_rewriter.h).
//
// Fused epilogue (forward only; operands after x and w: bias when `bias`, then the side input when
// side_input_scale != 0):
//     y = activation(alpha * conv(x, w) + side_input_scale * side + bias[K])
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/attributes.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cuda {

inline constexpr std::string_view kConvCallTarget = "__kiln$conv";

enum class ConvCallKind : uint8_t { kForward, kBackwardData, kBackwardFilter };
std::string_view ConvCallKindName(ConvCallKind k);  // "forward", "backward_data", "backward_filter"

struct ConvConfig {
  ConvCallKind kind = ConvCallKind::kForward;
  bool channels_last = true;
  int64_t batch = 0;
  int64_t input_features = 0;   // C
  int64_t output_features = 0;  // K
  std::vector<int64_t> input_spatial, filter_spatial, output_spatial;
  std::vector<int64_t> strides, padding_low, padding_high, dilations;
  int64_t feature_group_count = 1;
  double alpha = 1.0;
  bool has_bias = false;
  double side_input_scale = 0.0;
  bool relu = false;
  Precision precision = Precision::kDefault;

  int spatial_dims() const { return static_cast<int>(input_spatial.size()); }
  std::vector<int64_t> InputDims() const;
  std::vector<int64_t> FilterDims() const;
  std::vector<int64_t> OutputDims() const;
  // Dimensions of the call's first two operands and of its result, by kind (see above).
  std::vector<int64_t> Operand0Dims() const;
  std::vector<int64_t> Operand1Dims() const;
  std::vector<int64_t> ResultDims() const;
  int64_t bias_operand() const { return has_bias ? 2 : -1; }
  int64_t side_operand() const { return side_input_scale != 0 ? (has_bias ? 3 : 2) : -1; }
  int64_t operand_count() const { return 2 + has_bias + (side_input_scale != 0); }
  // 2 * multiply-adds of the forward convolution (the backward kinds do as many).
  int64_t flops() const;

  std::string ToJson() const;
  static StatusOr<ConvConfig> FromJson(std::string_view json);
  bool operator==(const ConvConfig&) const = default;
};

bool IsConvCall(const HloInstruction& instr);
// The config of a convolution custom call, checked against its operand and result shapes.
StatusOr<ConvConfig> GetConvConfig(const HloInstruction& conv);

}  // namespace kiln::cuda
