#include "kiln/cuda/libs/conv_desc.h"

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cuda::libs {

std::string_view ConvKindName(ConvKind k) {
  switch (k) {
    case ConvKind::kForward: return "forward";
    case ConvKind::kBackwardData: return "backward_data";
    case ConvKind::kBackwardFilter: return "backward_filter";
  }
  return "?";
}

std::string_view ConvLayoutName(ConvLayout l, int spatial_dims) {
  static constexpr std::string_view kFirst[] = {"NCW", "NCHW", "NCDHW"};
  static constexpr std::string_view kLast[] = {"NWC", "NHWC", "NDHWC"};
  if (spatial_dims < 1 || spatial_dims > 3) return l == ConvLayout::kChannelsFirst ? "NC..." : "N...C";
  return l == ConvLayout::kChannelsFirst ? kFirst[spatial_dims - 1] : kLast[spatial_dims - 1];
}

namespace {

std::vector<int64_t> Dims(ConvLayout layout, int64_t outer, int64_t channels,
                          const std::vector<int64_t>& spatial) {
  std::vector<int64_t> dims = {outer};
  if (layout == ConvLayout::kChannelsFirst) dims.push_back(channels);
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  if (layout == ConvLayout::kChannelsLast) dims.push_back(channels);
  return dims;
}

int64_t At(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return v.empty() ? fallback : v[i];
}

// Which layout a tensor's (batch-like, feature-like, spatial) dimension positions form.
std::optional<ConvLayout> LayoutOf(int64_t outer, int64_t channels,
                                   const std::vector<int64_t>& spatial) {
  const int64_t n = static_cast<int64_t>(spatial.size());
  bool in_order = true;
  for (int64_t i = 0; i + 1 < n; ++i) in_order = in_order && spatial[i + 1] == spatial[i] + 1;
  if (!in_order || outer != 0) return std::nullopt;
  if (channels == 1 && (n == 0 || spatial[0] == 2)) return ConvLayout::kChannelsFirst;
  if (channels == n + 1 && (n == 0 || spatial[0] == 1)) return ConvLayout::kChannelsLast;
  return std::nullopt;
}

// HLO's dim_labels text for dimension numbers ("b01f_01io->b01f").
std::string Labels(const ConvolutionDimensionNumbers& d) {
  auto one = [](size_t rank, int64_t first, char first_c, int64_t second, char second_c,
                const std::vector<int64_t>& spatial) {
    std::string s(rank, '?');
    if (first >= 0 && static_cast<size_t>(first) < rank) s[first] = first_c;
    if (second >= 0 && static_cast<size_t>(second) < rank) s[second] = second_c;
    for (size_t i = 0; i < spatial.size(); ++i) {
      if (spatial[i] >= 0 && static_cast<size_t>(spatial[i]) < rank) {
        s[spatial[i]] = static_cast<char>('0' + i);
      }
    }
    return s;
  };
  const size_t rank = d.input_spatial_dimensions.size() + 2;
  return one(rank, d.input_batch_dimension, 'b', d.input_feature_dimension, 'f',
             d.input_spatial_dimensions) +
         "_" +
         one(rank, d.kernel_output_feature_dimension, 'o', d.kernel_input_feature_dimension, 'i',
             d.kernel_spatial_dimensions) +
         "->" +
         one(rank, d.output_batch_dimension, 'b', d.output_feature_dimension, 'f',
             d.output_spatial_dimensions);
}

// Logical dimension -> physical position (0 = most major) under a shape's layout.
std::vector<int64_t> PhysicalPositions(const Shape& shape) {
  const Layout layout = shape.layout_or_default();
  const std::vector<int64_t>& m2m = layout.minor_to_major();
  const int64_t rank = shape.rank();
  std::vector<int64_t> pos(rank);
  for (int64_t i = 0; i < rank; ++i) pos[m2m[i]] = rank - 1 - i;
  return pos;
}

}  // namespace

std::vector<int64_t> ConvDesc::InputDims() const {
  return Dims(input_layout, batch, input_features, input_spatial);
}
std::vector<int64_t> ConvDesc::FilterDims() const {
  return Dims(filter_layout, output_features,
              feature_group_count > 0 ? input_features / feature_group_count : 0, filter_spatial);
}
std::vector<int64_t> ConvDesc::OutputDims() const {
  return Dims(output_layout, batch, output_features, output_spatial);
}

std::string ConvDesc::ToString() const {
  const int n = spatial_dims();
  std::string s = StrCat("conv ", ConvKindName(kind), " ", PrimitiveTypeName(dtype), " x",
                         ConvLayoutName(input_layout, n), "[", StrJoin(InputDims(), ","), "] w",
                         ConvLayoutName(filter_layout, n), "[", StrJoin(FilterDims(), ","),
                         "] y", ConvLayoutName(output_layout, n), "[",
                         StrJoin(OutputDims(), ","), "]");
  if (!strides.empty()) s += StrCat(" stride=", StrJoin(strides, "x"));
  if (!padding_low.empty() || !padding_high.empty()) {
    s += " pad=";
    for (int i = 0; i < n; ++i) {
      s += StrCat(i ? "x" : "", At(padding_low, i, 0), "_", At(padding_high, i, 0));
    }
  }
  if (!dilations.empty()) s += StrCat(" dilate=", StrJoin(dilations, "x"));
  if (feature_group_count != 1) s += StrCat(" groups=", feature_group_count);
  if (precision == Precision::kHighest) s += " precision=highest";
  if (alpha != 1) s += StrCat(" alpha=", alpha);
  if (has_bias) s += " +bias";
  if (side_input_scale != 0) s += StrCat(" +", side_input_scale, "*z");
  if (activation == ConvActivation::kRelu) s += " relu";
  return s;
}

Status ValidateConvDesc(const ConvDesc& d) {
  const int n = d.spatial_dims();
  if (n < 1 || n > 3) {
    return Unimplemented("conv: ", n, " spatial dimensions (cuDNN runs 1 to 3)");
  }
  if (static_cast<int>(d.filter_spatial.size()) != n ||
      static_cast<int>(d.output_spatial.size()) != n) {
    return InvalidArgument("conv: input, filter and output have different spatial ranks (",
                           n, ", ", d.filter_spatial.size(), ", ", d.output_spatial.size(), ")");
  }
  for (const auto* v : {&d.strides, &d.padding_low, &d.padding_high, &d.dilations}) {
    if (!v->empty() && static_cast<int>(v->size()) != n) {
      return InvalidArgument("conv: strides/padding/dilations need one value per spatial "
                             "dimension (", n, ")");
    }
  }
  if (d.dtype != PrimitiveType::kF32 && d.dtype != PrimitiveType::kF16 &&
      d.dtype != PrimitiveType::kBF16 && d.dtype != PrimitiveType::kF64) {
    return Unimplemented("conv: cuDNN convolutions of ", PrimitiveTypeName(d.dtype),
                         " (supported: f32, f16, bf16, f64)");
  }
  if (d.batch < 1 || d.input_features < 1 || d.output_features < 1) {
    return InvalidArgument("conv: batch, input and output features must be positive");
  }
  if (d.feature_group_count < 1 || d.input_features % d.feature_group_count != 0 ||
      d.output_features % d.feature_group_count != 0) {
    return InvalidArgument("conv: feature_group_count ", d.feature_group_count,
                           " must divide the input (", d.input_features, ") and output (",
                           d.output_features, ") features");
  }
  if (d.input_layout != d.filter_layout || d.input_layout != d.output_layout) {
    return Unimplemented("conv: input ", ConvLayoutName(d.input_layout, n), ", filter ",
                         ConvLayoutName(d.filter_layout, n), " and output ",
                         ConvLayoutName(d.output_layout, n),
                         " layouts differ; cuDNN needs one layout for all three (transpose)");
  }
  for (int i = 0; i < n; ++i) {
    const int64_t in = d.input_spatial[i], win = d.filter_spatial[i], out = d.output_spatial[i];
    const int64_t stride = At(d.strides, i, 1), dil = At(d.dilations, i, 1);
    const int64_t lo = At(d.padding_low, i, 0), hi = At(d.padding_high, i, 0);
    if (in < 1 || win < 1 || out < 1 || stride < 1 || dil < 1) {
      return InvalidArgument("conv: spatial dimension ", i,
                             ": sizes, strides and dilations must be positive");
    }
    const int64_t span = dil * (win - 1) + 1;
    const int64_t hlo_padded = in + lo + hi;
    const int64_t hlo_out = hlo_padded < span ? 0 : (hlo_padded - span) / stride + 1;
    if (hlo_out != out) {
      return InvalidArgument("conv: spatial dimension ", i, ": output size ", out,
                             " does not match the geometry (input ", in, ", window ", win,
                             ", stride ", stride, ", dilation ", dil, ", padding ", lo, "_", hi,
                             " gives ", hlo_out, ")");
    }
    if (lo < 0 || hi < 0) {
      return Unimplemented("conv: negative padding in spatial dimension ", i,
                           " (slice the input first)");
    }
    const int64_t sym_padded = in + 2 * lo;
    const int64_t sym_out = sym_padded < span ? 0 : (sym_padded - span) / stride + 1;
    if (sym_out != out) {
      return Unimplemented("conv: asymmetric padding ", lo, "_", hi, " in spatial dimension ", i,
                           " (cuDNN pads both sides alike; pad the input explicitly and pass "
                           "symmetric padding)");
    }
  }
  if (d.fused()) {
    if (d.kind != ConvKind::kForward) {
      return Unimplemented("conv: bias/activation/side input fuse into forward convolutions only");
    }
  }
  return OkStatus();
}

StatusOr<ConvLayouts> ConvLayoutsFromDimNumbers(const ConvolutionDimensionNumbers& d) {
  const std::optional<ConvLayout> in =
      LayoutOf(d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions);
  const std::optional<ConvLayout> filter =
      LayoutOf(d.kernel_output_feature_dimension, d.kernel_input_feature_dimension,
               d.kernel_spatial_dimensions);
  const std::optional<ConvLayout> out =
      LayoutOf(d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions);
  const int n = static_cast<int>(d.input_spatial_dimensions.size());
  if (!in || !filter || !out) {
    std::string first = n == 1 ? "bf0_oi0->bf0" : n == 3 ? "bf012_oi012->bf012" : "bf01_oi01->bf01";
    std::string last = n == 1 ? "b0f_o0i->b0f" : n == 3 ? "b012f_o012i->b012f" : "b01f_o01i->b01f";
    return Unimplemented("conv: dim_labels ", Labels(d), " (physical order) are not a cuDNN "
                         "layout; transpose to ", first, " or ", last,
                         !filter ? " (the filter needs a transpose)" : "");
  }
  return ConvLayouts{*in, *filter, *out};
}

StatusOr<ConvDesc> ConvDescFromHlo(const HloInstruction& conv) {
  if (conv.opcode() != HloOpcode::kConvolution || conv.operand_count() != 2) {
    return InvalidArgument("ConvDescFromHlo: %", conv.name(), " is not a two-operand convolution");
  }
  const HloAttributes& a = conv.attrs();
  if (!a.convolution_dimension_numbers || !a.window) {
    return InvalidArgument("ConvDescFromHlo: %", conv.name(), " lacks dim_labels or window");
  }
  const Shape& xs = conv.operand(0)->shape();
  const Shape& ws = conv.operand(1)->shape();
  const Shape& ys = conv.shape();
  if (!xs.IsArray() || !ws.IsArray() || !ys.IsArray()) {
    return InvalidArgument("ConvDescFromHlo: %", conv.name(), " has non-array operands");
  }
  if (xs.element_type() != ws.element_type() || xs.element_type() != ys.element_type()) {
    return Unimplemented("conv %", conv.name(), ": mixed types ", xs.ToString(false), ", ",
                         ws.ToString(false), " -> ", ys.ToString(false));
  }
  if (a.batch_group_count != 1) {
    return Unimplemented("conv %", conv.name(), ": batch_group_count ", a.batch_group_count,
                         " (the backward-filter form is described by its forward geometry)");
  }
  const ConvolutionDimensionNumbers& d = *a.convolution_dimension_numbers;
  const size_t n = d.input_spatial_dimensions.size();
  if (a.window->dimensions.size() != n) {
    return InvalidArgument("conv %", conv.name(), ": window rank differs from the spatial rank");
  }
  // Dimension numbers in physical order.
  const std::vector<int64_t> xp = PhysicalPositions(xs), wp = PhysicalPositions(ws),
                             yp = PhysicalPositions(ys);
  ConvolutionDimensionNumbers p = d;
  p.input_batch_dimension = xp[d.input_batch_dimension];
  p.input_feature_dimension = xp[d.input_feature_dimension];
  p.kernel_input_feature_dimension = wp[d.kernel_input_feature_dimension];
  p.kernel_output_feature_dimension = wp[d.kernel_output_feature_dimension];
  p.output_batch_dimension = yp[d.output_batch_dimension];
  p.output_feature_dimension = yp[d.output_feature_dimension];
  for (size_t i = 0; i < n; ++i) {
    p.input_spatial_dimensions[i] = xp[d.input_spatial_dimensions[i]];
    p.kernel_spatial_dimensions[i] = wp[d.kernel_spatial_dimensions[i]];
    p.output_spatial_dimensions[i] = yp[d.output_spatial_dimensions[i]];
  }
  KILN_ASSIGN_OR_RETURN(ConvLayouts layouts, ConvLayoutsFromDimNumbers(p));

  ConvDesc c;
  c.kind = ConvKind::kForward;
  c.dtype = xs.element_type();
  for (Precision pr : a.precision_config.operand_precision) c.precision = std::max(c.precision, pr);
  if (c.precision == Precision::kPackedNibble) c.precision = Precision::kDefault;
  c.input_layout = layouts.input;
  c.filter_layout = layouts.filter;
  c.output_layout = layouts.output;
  c.batch = xs.dimensions(d.input_batch_dimension);
  c.input_features = xs.dimensions(d.input_feature_dimension);
  c.output_features = ws.dimensions(d.kernel_output_feature_dimension);
  c.feature_group_count = a.feature_group_count;
  bool any_stride = false, any_pad = false, any_dilation = false;
  for (size_t i = 0; i < n; ++i) {
    const WindowDimension& wd = a.window->dimensions[i];
    if (wd.base_dilation != 1) {
      return Unimplemented("conv %", conv.name(), ": lhs_dilate (the backward-data form is "
                           "described by its forward geometry)");
    }
    if (wd.window_reversal) return Unimplemented("conv %", conv.name(), ": window reversal");
    c.input_spatial.push_back(xs.dimensions(d.input_spatial_dimensions[i]));
    c.filter_spatial.push_back(ws.dimensions(d.kernel_spatial_dimensions[i]));
    c.output_spatial.push_back(ys.dimensions(d.output_spatial_dimensions[i]));
    if (wd.size != c.filter_spatial.back()) {
      return InvalidArgument("conv %", conv.name(), ": window size ", wd.size,
                             " differs from the filter's ", c.filter_spatial.back());
    }
    c.strides.push_back(wd.stride);
    c.padding_low.push_back(wd.padding_low);
    c.padding_high.push_back(wd.padding_high);
    c.dilations.push_back(wd.window_dilation);
    any_stride = any_stride || wd.stride != 1;
    any_pad = any_pad || wd.padding_low != 0 || wd.padding_high != 0;
    any_dilation = any_dilation || wd.window_dilation != 1;
  }
  if (!any_stride) c.strides.clear();
  if (!any_pad) c.padding_low.clear(), c.padding_high.clear();
  if (!any_dilation) c.dilations.clear();
  if (ws.dimensions(d.kernel_input_feature_dimension) * c.feature_group_count !=
      c.input_features) {
    return InvalidArgument("conv %", conv.name(), ": filter input features times groups != "
                           "input features");
  }
  KILN_RETURN_IF_ERROR(ValidateConvDesc(c).WithContext(StrCat("conv %", conv.name())));
  return c;
}

}  // namespace kiln::cuda::libs
