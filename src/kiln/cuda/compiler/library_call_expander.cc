#include "kiln/cuda/compiler/library_call_expander.h"

#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/simple_passes.h"

namespace kiln::cuda {

namespace {

StatusOr<HloInstruction*> Gelu(HloEditor& ed, HloInstruction* v) {
  const PrimitiveType t = v->shape().element_type();
  auto scalar = [&](double x) { return ed.BroadcastScalar(ed.ScalarConstant(t, x), v->shape()); };
  KILN_ASSIGN_OR_RETURN(HloInstruction * x3, ed.Binary(HloOpcode::kMultiply, v, v));
  KILN_ASSIGN_OR_RETURN(x3, ed.Binary(HloOpcode::kMultiply, x3, v));
  KILN_ASSIGN_OR_RETURN(HloInstruction * k1, scalar(0.044715));
  KILN_ASSIGN_OR_RETURN(x3, ed.Binary(HloOpcode::kMultiply, x3, k1));
  KILN_ASSIGN_OR_RETURN(HloInstruction * inner, ed.Binary(HloOpcode::kAdd, v, x3));
  KILN_ASSIGN_OR_RETURN(HloInstruction * k2, scalar(0.7978845608028654));
  KILN_ASSIGN_OR_RETURN(inner, ed.Binary(HloOpcode::kMultiply, inner, k2));
  KILN_ASSIGN_OR_RETURN(HloInstruction * th, ed.Unary(HloOpcode::kTanh, inner));
  KILN_ASSIGN_OR_RETURN(HloInstruction * one, scalar(1));
  KILN_ASSIGN_OR_RETURN(th, ed.Binary(HloOpcode::kAdd, th, one));
  KILN_ASSIGN_OR_RETURN(HloInstruction * half, scalar(0.5));
  KILN_ASSIGN_OR_RETURN(th, ed.Binary(HloOpcode::kMultiply, th, half));
  return ed.Binary(HloOpcode::kMultiply, v, th);
}

StatusOr<HloInstruction*> Relu(HloEditor& ed, HloInstruction* v) {
  KILN_ASSIGN_OR_RETURN(HloInstruction * z,
                        ed.BroadcastScalar(ed.ScalarConstant(v->shape().element_type(), 0), v->shape()));
  return ed.Binary(HloOpcode::kMaximum, v, z);
}

StatusOr<HloInstruction*> ExpandGemm(HloInstruction* g) {
  KILN_ASSIGN_OR_RETURN(GemmConfig c, GetGemmConfig(*g));
  HloEditor ed(g->parent());
  const PrimitiveType out_t = g->shape().element_type();
  auto matrix = [&](HloInstruction* x, bool bcast, bool transposed, int64_t rows,
                    int64_t cols) -> StatusOr<HloInstruction*> {
    const PrimitiveType t = x->shape().element_type();
    if (bcast) {
      std::vector<int64_t> dims = transposed ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
      KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Reshape(x, Shape::ArrayWithDefaultLayout(t, dims), g));
      if (transposed) {
        KILN_ASSIGN_OR_RETURN(r, ed.Transpose(r, {1, 0}, nullptr, g));
      }
      return ed.Broadcast(r, Shape::ArrayWithDefaultLayout(t, {c.batch, rows, cols}), {1, 2}, g);
    }
    std::vector<int64_t> dims =
        transposed ? std::vector<int64_t>{c.batch, cols, rows} : std::vector<int64_t>{c.batch, rows, cols};
    KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Reshape(x, Shape::ArrayWithDefaultLayout(t, dims), g));
    if (transposed) return ed.Transpose(r, {0, 2, 1}, nullptr, g);
    return r;
  };
  KILN_ASSIGN_OR_RETURN(HloInstruction * a, matrix(g->operand(0), c.lhs_broadcast, c.lhs_transposed, c.m, c.k));
  KILN_ASSIGN_OR_RETURN(HloInstruction * b, matrix(g->operand(1), c.rhs_broadcast, c.rhs_transposed, c.k, c.n));
  auto dot = std::make_unique<HloInstruction>(HloOpcode::kDot,
                                              Shape::ArrayWithDefaultLayout(out_t, {c.batch, c.m, c.n}));
  dot->AppendOperand(a);
  dot->AppendOperand(b);
  DotDimensionNumbers dn;
  dn.lhs_batch_dimensions = {0};
  dn.rhs_batch_dimensions = {0};
  dn.lhs_contracting_dimensions = {2};
  dn.rhs_contracting_dimensions = {1};
  dot->attrs().dot_dimension_numbers = dn;
  if (c.precision != Precision::kDefault) dot->attrs().precision_config.operand_precision = {c.precision, c.precision};
  HloInstruction* v = ed.Add(std::move(dot), g);
  const Shape vs = v->shape();
  if (c.alpha != 1) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * s, ed.BroadcastScalar(ed.ScalarConstant(out_t, c.alpha), vs));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kMultiply, v, s));
  }
  if (c.beta != 0) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * cc, ed.Reshape(g->operand(c.c_operand()), vs));
    if (c.beta != 1) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * s, ed.BroadcastScalar(ed.ScalarConstant(out_t, c.beta), vs));
      KILN_ASSIGN_OR_RETURN(cc, ed.Binary(HloOpcode::kMultiply, cc, s));
    }
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, cc));
  }
  if (c.has_bias) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * bias, ed.Broadcast(g->operand(c.bias_operand()), vs, {2}));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, bias));
  }
  if (c.activation == GemmActivation::kRelu) {
    KILN_ASSIGN_OR_RETURN(v, Relu(ed, v));
  } else if (c.activation == GemmActivation::kGelu) {
    KILN_ASSIGN_OR_RETURN(v, Gelu(ed, v));
  }
  KILN_ASSIGN_OR_RETURN(v, ed.Reshape(v, g->shape()));
  KILN_RETURN_IF_ERROR(ReplaceInstruction(g, v));
  return v;
}

// The backward kinds as the HLO convolutions JAX writes for the gradients (conv_rewriter.h),
// over the call's operands in the config's layout.
StatusOr<HloInstruction*> ExpandBackwardConv(HloInstruction* call, const ConvConfig& c) {
  HloEditor ed(call->parent());
  const int64_t n = c.spatial_dims();
  const PrimitiveType t = call->shape().element_type();
  const int64_t g = c.feature_group_count;
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < n; ++i) spatial.push_back(c.channels_last ? 1 + i : 2 + i);
  const int64_t channels = c.channels_last ? n + 1 : 1;
  ConvolutionDimensionNumbers dn;
  Window window;
  auto conv = std::make_unique<HloInstruction>(HloOpcode::kConvolution,
                                               Shape::ArrayWithDefaultLayout(t, c.ResultDims()));
  if (c.kind == ConvCallKind::kBackwardData) {
    // dx = conv(dy, w') with lhs dilation = strides and the filter reversed (window reversal),
    // its features swapped; for groups, w [K, C/G] -> w' [C, K/G].
    HloInstruction* w = call->operand(1);
    dn.kernel_spatial_dimensions = spatial;
    if (g == 1) {
      dn.kernel_input_feature_dimension = 0;
      dn.kernel_output_feature_dimension = channels;
    } else {
      std::vector<int64_t> split = {g, c.output_features / g};
      std::vector<int64_t> perm = {0, c.channels_last ? n + 2 : 2, 1};
      for (int64_t i = 0; i < n; ++i) perm.push_back(c.channels_last ? 2 + i : 3 + i);
      const std::vector<int64_t> fd = c.FilterDims();
      split.insert(split.end(), fd.begin() + 1, fd.end());
      KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Reshape(w, Shape::ArrayWithDefaultLayout(t, split), call));
      KILN_ASSIGN_OR_RETURN(HloInstruction * tr, ed.Transpose(r, perm, nullptr, call));
      std::vector<int64_t> merged = {c.input_features, c.output_features / g};
      merged.insert(merged.end(), c.filter_spatial.begin(), c.filter_spatial.end());
      KILN_ASSIGN_OR_RETURN(w, ed.Reshape(tr, Shape::ArrayWithDefaultLayout(t, merged), call));
      dn.kernel_output_feature_dimension = 0;
      dn.kernel_input_feature_dimension = 1;
      dn.kernel_spatial_dimensions.clear();
      for (int64_t i = 0; i < n; ++i) dn.kernel_spatial_dimensions.push_back(2 + i);
    }
    dn.input_batch_dimension = dn.output_batch_dimension = 0;
    dn.input_feature_dimension = dn.output_feature_dimension = channels;
    dn.input_spatial_dimensions = dn.output_spatial_dimensions = spatial;
    for (int64_t i = 0; i < n; ++i) {
      WindowDimension wd;
      const int64_t k = (c.filter_spatial[i] - 1) * c.dilations[i] + 1;
      wd.size = c.filter_spatial[i];
      wd.base_dilation = c.strides[i];
      wd.window_dilation = c.dilations[i];
      wd.window_reversal = true;
      wd.padding_low = k - 1 - c.padding_low[i];
      wd.padding_high = c.input_spatial[i] - (c.output_spatial[i] - 1) * c.strides[i] - 1 + c.padding_low[i];
      window.dimensions.push_back(wd);
    }
    conv->AppendOperand(call->operand(0));
    conv->AppendOperand(w);
    conv->attrs().feature_group_count = g;
  } else {
    // dw = conv(x, dy): x's batch contracted as the feature, its channels the batch (G batch
    // groups), dy the filter, rhs dilation = strides, stride = the filter dilation.
    dn.input_feature_dimension = 0;
    dn.input_batch_dimension = channels;
    dn.input_spatial_dimensions = spatial;
    dn.kernel_input_feature_dimension = 0;
    dn.kernel_output_feature_dimension = channels;
    dn.kernel_spatial_dimensions = spatial;
    dn.output_feature_dimension = 0;
    dn.output_batch_dimension = channels;
    dn.output_spatial_dimensions = spatial;
    for (int64_t i = 0; i < n; ++i) {
      WindowDimension wd;
      wd.size = c.output_spatial[i];
      wd.stride = c.dilations[i];
      wd.window_dilation = c.strides[i];
      wd.padding_low = c.padding_low[i];
      wd.padding_high = (c.filter_spatial[i] - 1) * c.dilations[i] + (c.output_spatial[i] - 1) * c.strides[i] + 1 -
                        c.input_spatial[i] - c.padding_low[i];
      window.dimensions.push_back(wd);
    }
    conv->AppendOperand(call->operand(0));
    conv->AppendOperand(call->operand(1));
    conv->attrs().batch_group_count = g;
  }
  conv->attrs().convolution_dimension_numbers = dn;
  conv->attrs().window = window;
  if (c.precision != Precision::kDefault) conv->attrs().precision_config.operand_precision = {c.precision, c.precision};
  HloInstruction* v = ed.Add(std::move(conv), call);
  KILN_RETURN_IF_ERROR(ReplaceInstruction(call, v));
  return v;
}

StatusOr<HloInstruction*> ExpandConv(HloInstruction* call) {
  KILN_ASSIGN_OR_RETURN(ConvConfig c, GetConvConfig(*call));
  if (c.kind != ConvCallKind::kForward) return ExpandBackwardConv(call, c);
  HloEditor ed(call->parent());
  const int64_t n = c.spatial_dims();
  ConvolutionDimensionNumbers dn;
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < n; ++i) spatial.push_back(c.channels_last ? 1 + i : 2 + i);
  const int64_t channels = c.channels_last ? n + 1 : 1;
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = channels;
  dn.input_spatial_dimensions = spatial;
  dn.kernel_output_feature_dimension = 0;
  dn.kernel_input_feature_dimension = channels;
  dn.kernel_spatial_dimensions = spatial;
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = channels;
  dn.output_spatial_dimensions = spatial;
  Window window;
  for (int64_t i = 0; i < n; ++i) {
    WindowDimension wd;
    wd.size = c.filter_spatial[i];
    wd.stride = c.strides[i];
    wd.padding_low = c.padding_low[i];
    wd.padding_high = c.padding_high[i];
    wd.window_dilation = c.dilations[i];
    window.dimensions.push_back(wd);
  }
  const PrimitiveType t = call->shape().element_type();
  auto conv = std::make_unique<HloInstruction>(HloOpcode::kConvolution,
                                               Shape::ArrayWithDefaultLayout(t, c.OutputDims()));
  conv->AppendOperand(call->operand(0));
  conv->AppendOperand(call->operand(1));
  conv->attrs().convolution_dimension_numbers = dn;
  conv->attrs().window = window;
  conv->attrs().feature_group_count = c.feature_group_count;
  if (c.precision != Precision::kDefault) conv->attrs().precision_config.operand_precision = {c.precision, c.precision};
  HloInstruction* v = ed.Add(std::move(conv), call);
  const Shape vs = v->shape();
  if (c.alpha != 1) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * s, ed.BroadcastScalar(ed.ScalarConstant(t, c.alpha), vs));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kMultiply, v, s));
  }
  if (c.side_input_scale != 0) {
    HloInstruction* side = call->operand(c.side_operand());
    if (c.side_input_scale != 1) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * s, ed.BroadcastScalar(ed.ScalarConstant(t, c.side_input_scale), vs));
      KILN_ASSIGN_OR_RETURN(side, ed.Binary(HloOpcode::kMultiply, side, s));
    }
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, side));
  }
  if (c.has_bias) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * bias, ed.Broadcast(call->operand(c.bias_operand()), vs, {channels}));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, bias));
  }
  if (c.relu) {
    KILN_ASSIGN_OR_RETURN(v, Relu(ed, v));
  }
  KILN_RETURN_IF_ERROR(ReplaceInstruction(call, v));
  return v;
}

}  // namespace

StatusOr<HloInstruction*> ExpandLibraryCall(HloInstruction* call) {
  if (IsGemmCall(*call)) return ExpandGemm(call);
  if (IsConvCall(*call)) return ExpandConv(call);
  return InvalidArgument("%", call->name(), " is not a kiln library call");
}

Status ExpandLibraryCalls(HloModule& module) {
  for (HloComputation* comp : module.computations())
    for (HloInstruction* i : comp->MakeInstructionPostOrder())
      if (IsGemmCall(*i) || IsConvCall(*i)) KILN_RETURN_IF_ERROR(ExpandLibraryCall(i).status());
  DeadCodeElimination dce;
  return dce.Run(module).status();
}

}  // namespace kiln::cuda
