#include "kiln/cuda/compiler/conv_rewriter.h"

#include <algorithm>
#include <numeric>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/epilogue_matching.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cuda {

namespace {

using match::DependsOn;
using match::EpilogueType;
using match::RowMajor;
using match::ScalarConstantValue;

bool CudnnType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 ||
         t == PrimitiveType::kF64;
}

bool IsIdentity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<int64_t> Inverse(const std::vector<int64_t>& p) {
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

// Tensor dimension order for a layout: outer, [channels,] spatial..., [channels].
std::vector<int64_t> Order(bool channels_last, int64_t outer, int64_t channels, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> p = {outer};
  if (!channels_last) p.push_back(channels);
  p.insert(p.end(), spatial.begin(), spatial.end());
  if (channels_last) p.push_back(channels);
  return p;
}

// Checks shared by every form: one cuDNN element type, 1-3 spatial dimensions, row-major static
// shapes, a non-empty result, no control dependencies.
bool CommonChecks(const HloInstruction* conv) {
  if (!conv->attrs().convolution_dimension_numbers || !conv->attrs().window) return false;
  if (!conv->control_predecessors().empty() || !conv->control_successors().empty()) return false;
  const ConvolutionDimensionNumbers& dn = *conv->attrs().convolution_dimension_numbers;
  const HloInstruction* x = conv->operand(0);
  const HloInstruction* w = conv->operand(1);
  const PrimitiveType t = conv->shape().element_type();
  if (!CudnnType(t) || x->shape().element_type() != t || w->shape().element_type() != t) return false;
  const size_t n = dn.input_spatial_dimensions.size();
  if (n < 1 || n > 3 || conv->attrs().window->dimensions.size() != n) return false;
  if (!RowMajor(x->shape()) || !RowMajor(w->shape()) || !RowMajor(conv->shape())) return false;
  if (x->shape().is_dynamic() || w->shape().is_dynamic() || conv->shape().is_dynamic()) return false;
  for (const WindowDimension& wd : conv->attrs().window->dimensions)
    if (wd.stride < 1 || wd.window_dilation < 1 || wd.base_dilation < 1 || wd.size < 1) return false;
  for (int64_t d : conv->shape().dimensions())
    if (d == 0) return false;  // an empty result: nothing to run
  for (int64_t d : x->shape().dimensions())
    if (d == 0) return false;
  for (int64_t d : w->shape().dimensions())
    if (d == 0) return false;
  return true;
}

Precision ConvPrecision(const HloInstruction* conv) {
  for (Precision p : conv->attrs().precision_config.operand_precision)
    if (p == Precision::kHighest) return Precision::kHighest;
  return Precision::kDefault;
}

// Adds the custom call computing `c` from `operands` (already in the config's layout) and
// replaces `conv` with it: the call's result is sliced to `slice` when that is not empty, then
// transposed back by the inverse of `result_perm` (the conv's dimensions in the call's order).
Status EmitCall(HloInstruction* conv, const ConvConfig& c, const std::vector<HloInstruction*>& operands,
                const std::vector<SliceDimension>& slice, const std::vector<int64_t>& result_perm) {
  HloComputation* comp = conv->parent();
  HloEditor ed(comp);
  const PrimitiveType t = conv->shape().element_type();
  auto call = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, Shape::ArrayWithDefaultLayout(t, c.ResultDims()),
                                               UniqueInstructionName(*comp, "cudnn_conv"));
  for (HloInstruction* o : operands) call->AppendOperand(o);
  call->attrs().custom_call_target = std::string(kConvCallTarget);
  call->backend_config() = BackendConfig{c.ToJson(), true};
  HloInstruction* v = ed.Add(std::move(call), conv);
  if (!slice.empty()) {
    KILN_ASSIGN_OR_RETURN(v, ed.Slice(v, slice, nullptr, conv));
  }
  Shape result_shape = conv->shape();
  KILN_ASSIGN_OR_RETURN(v, ed.Transpose(v, Inverse(result_perm), &result_shape, conv));
  MoveControlDependencies(conv, v);
  return ReplaceInstruction(conv, v);
}

// The gradient of a convolution with respect to its input, as JAX writes it (conv_rewriter.h):
// dx = conv(dy, w') with lhs_dilation s (the forward strides), stride 1, w' the forward filter
// w with its spatial dimensions reversed (a reverse op, or window reversal) and its feature
// dimensions swapped (for G feature groups: w' [C, K/G] holds w [K, C/G] with the group moved
// from the output to the input features), padding low k-1-p (k the dilated window, p the
// forward padding low). Matched when there is an lhs dilation or the filter is a reverse op
// over all its spatial dimensions (XLA's criterion); depthwise forms stay forward (as in XLA).
//
// cuDNN's backward data pads both sides by the same amount pc and computes dx' of size H';
// dx = dx'[p - pc : p - pc + H]. The first pc (from p down to 0) with an H' >= H + p - pc that
// gives the forward output size is taken, so the usual forms need no slice.
StatusOr<bool> RewriteBackwardData(HloInstruction* conv) {
  if (!CommonChecks(conv) || conv->attrs().batch_group_count != 1) return false;
  const ConvolutionDimensionNumbers& dn = *conv->attrs().convolution_dimension_numbers;
  const Window& window = *conv->attrs().window;
  const int64_t n = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  HloInstruction* dy = conv->operand(0);
  HloInstruction* wg = conv->operand(1);
  const int64_t groups = conv->attrs().feature_group_count;
  bool base_dilated = false, any_window_reversal = false;
  for (const WindowDimension& wd : window.dimensions) {
    if (wd.stride != 1) return false;
    base_dilated |= wd.base_dilation > 1;
    any_window_reversal |= wd.window_reversal;
  }
  std::vector<int64_t> reversed_dims;
  if (wg->opcode() == HloOpcode::kReverse) {
    reversed_dims = wg->attrs().dimensions;
    std::sort(reversed_dims.begin(), reversed_dims.end());
  }
  std::vector<int64_t> spatial_sorted = dn.kernel_spatial_dimensions;
  std::sort(spatial_sorted.begin(), spatial_sorted.end());
  const bool reverse_op = !any_window_reversal && reversed_dims == spatial_sorted;
  if (!base_dilated && !reverse_op) return false;

  const int64_t batch = dy->shape().dimensions(dn.input_batch_dimension);
  const int64_t k_features = dy->shape().dimensions(dn.input_feature_dimension);  // forward K
  const int64_t c_features = conv->shape().dimensions(dn.output_feature_dimension);  // forward C
  if (groups < 1 || c_features % groups != 0 || k_features % groups != 0) return false;
  if (groups > 1 && c_features == groups) return false;  // depthwise: forward
  if (wg->shape().dimensions(dn.kernel_output_feature_dimension) != c_features ||
      wg->shape().dimensions(dn.kernel_input_feature_dimension) * groups != k_features)
    return false;

  ConvConfig c;
  c.kind = ConvCallKind::kBackwardData;
  c.precision = ConvPrecision(conv);
  c.feature_group_count = groups;
  c.batch = batch;
  c.input_features = c_features;
  c.output_features = k_features;
  std::vector<SliceDimension> spatial_slice;
  bool need_slice = false;
  for (int64_t i = 0; i < n; ++i) {
    const WindowDimension& wd = window.dimensions[i];
    const int64_t s = wd.base_dilation, d = wd.window_dilation, r = wd.size;
    const int64_t k = (r - 1) * d + 1;
    const int64_t p_out = dy->shape().dimensions(dn.input_spatial_dimensions[i]);  // forward P
    const int64_t h = conv->shape().dimensions(dn.output_spatial_dimensions[i]);    // forward H
    const int64_t pl = k - 1 - wd.padding_low;
    if (pl < 0) return false;
    int64_t pc = -1, hp = 0;
    for (int64_t cand = pl; cand >= 0; --cand) {
      const int64_t lo = (p_out - 1) * s + k - 2 * cand, hi = p_out * s + k - 1 - 2 * cand;
      const int64_t size = std::max(h + pl - cand, lo);
      if (size <= hi && size >= 1) {
        pc = cand;
        hp = size;
        break;
      }
    }
    if (pc < 0) return false;
    c.input_spatial.push_back(hp);
    c.filter_spatial.push_back(r);
    c.output_spatial.push_back(p_out);
    c.strides.push_back(s);
    c.dilations.push_back(d);
    c.padding_low.push_back(pc);
    c.padding_high.push_back(pc);
    spatial_slice.push_back(SliceDimension{pl - pc, pl - pc + h, 1});
    need_slice |= pl != pc || hp != h;
  }
  const std::vector<int64_t> dy_first = Order(false, dn.input_batch_dimension, dn.input_feature_dimension,
                                              dn.input_spatial_dimensions);
  const std::vector<int64_t> dx_first = Order(false, dn.output_batch_dimension, dn.output_feature_dimension,
                                              dn.output_spatial_dimensions);
  c.channels_last = !(IsIdentity(dy_first) && IsIdentity(dx_first));

  HloEditor ed(conv->parent());
  const PrimitiveType t = conv->shape().element_type();
  // The forward filter: undo the reversal, then rearrange the features.
  HloInstruction* w = wg;
  if (reverse_op) {
    w = wg->operand(0);
  } else {
    std::vector<int64_t> rev;
    for (int64_t i = 0; i < n; ++i)
      if (!window.dimensions[i].window_reversal) rev.push_back(dn.kernel_spatial_dimensions[i]);
    if (!rev.empty()) {
      auto r = std::make_unique<HloInstruction>(HloOpcode::kReverse, wg->shape(), "");
      r->AppendOperand(wg);
      r->attrs().dimensions = rev;
      w = ed.Add(std::move(r), conv);
    }
  }
  std::vector<int64_t> spatial_sizes;
  for (int64_t i = 0; i < n; ++i) spatial_sizes.push_back(w->shape().dimensions(dn.kernel_spatial_dimensions[i]));
  HloInstruction* wt = nullptr;
  if (groups == 1) {
    // w' [O=C, I=K, S...] -> w [K, C, S...] in the layout's order.
    KILN_ASSIGN_OR_RETURN(wt, ed.Transpose(w, Order(c.channels_last, dn.kernel_input_feature_dimension,
                                                     dn.kernel_output_feature_dimension, dn.kernel_spatial_dimensions),
                                           nullptr, conv));
  } else {
    // w' [C, K/G, S...] = [G, C/G, K/G, S...] -> [G, K/G, C/G, S...] -> w [K, C/G, S...].
    KILN_ASSIGN_OR_RETURN(HloInstruction * canon,
                          ed.Transpose(w, Order(false, dn.kernel_output_feature_dimension,
                                                dn.kernel_input_feature_dimension, dn.kernel_spatial_dimensions),
                                       nullptr, conv));
    std::vector<int64_t> split = {groups, c_features / groups, k_features / groups};
    split.insert(split.end(), spatial_sizes.begin(), spatial_sizes.end());
    KILN_ASSIGN_OR_RETURN(HloInstruction * r, ed.Reshape(canon, Shape::ArrayWithDefaultLayout(t, split), conv));
    std::vector<int64_t> spatial_idx;
    for (int64_t i = 0; i < n; ++i) spatial_idx.push_back(3 + i);
    std::vector<int64_t> perm = {0, 2};
    if (!c.channels_last) perm.push_back(1);
    perm.insert(perm.end(), spatial_idx.begin(), spatial_idx.end());
    if (c.channels_last) perm.push_back(1);
    KILN_ASSIGN_OR_RETURN(HloInstruction * tr, ed.Transpose(r, perm, nullptr, conv));
    KILN_ASSIGN_OR_RETURN(wt, ed.Reshape(tr, Shape::ArrayWithDefaultLayout(t, c.FilterDims()), conv));
  }
  KILN_ASSIGN_OR_RETURN(HloInstruction * dyt,
                        ed.Transpose(dy, Order(c.channels_last, dn.input_batch_dimension, dn.input_feature_dimension,
                                               dn.input_spatial_dimensions),
                                     nullptr, conv));
  std::vector<SliceDimension> slice;
  if (need_slice) {
    const std::vector<int64_t> dims = c.InputDims();
    for (int64_t d : dims) slice.push_back(SliceDimension{0, d, 1});
    for (int64_t i = 0; i < n; ++i) slice[c.channels_last ? 1 + i : 2 + i] = spatial_slice[i];
  }
  KILN_RETURN_IF_ERROR(EmitCall(conv, c, {dyt, wt}, slice,
                                Order(c.channels_last, dn.output_batch_dimension, dn.output_feature_dimension,
                                      dn.output_spatial_dimensions)));
  return true;
}

// The gradient of a convolution with respect to its filter, as JAX writes it: dw = conv(x, dy)
// with x's feature dimension as the batch dimension and its batch dimension contracted as the
// feature dimension, dy as the filter (its batch dimension the input feature), the window the
// size of dy with rhs_dilation s (the forward strides) and stride d (the forward filter
// dilation), padding low p (the forward padding low); batch_group_count G for G feature groups.
// (The form's stride is the forward filter dilation.) Matched (no lhs dilation, no window
// reversal) when there is an rhs
// dilation, batch groups, or the "filter" is larger than the result in every spatial dimension
// (XLA's heuristic: forward filters are small).
//
// cuDNN's backward filter pads symmetrically; when padding (p, p) does not give the forward
// output size, x is padded explicitly (low p, high whatever makes it fit; negative crops what no
// window reads) and cuDNN pads nothing.
StatusOr<bool> RewriteBackwardFilter(HloInstruction* conv) {
  if (!CommonChecks(conv) || conv->attrs().feature_group_count != 1) return false;
  const ConvolutionDimensionNumbers& dn = *conv->attrs().convolution_dimension_numbers;
  const Window& window = *conv->attrs().window;
  const int64_t n = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  HloInstruction* x = conv->operand(0);
  HloInstruction* dy = conv->operand(1);
  const int64_t groups = conv->attrs().batch_group_count;
  bool rhs_dilated = false, big_filter = true;
  for (int64_t i = 0; i < n; ++i) {
    const WindowDimension& wd = window.dimensions[i];
    if (wd.base_dilation != 1 || wd.window_reversal) return false;
    rhs_dilated |= wd.window_dilation > 1;
    big_filter &= wd.size > conv->shape().dimensions(dn.output_spatial_dimensions[i]);
  }
  if (!rhs_dilated && groups == 1 && !big_filter) return false;

  const int64_t batch = x->shape().dimensions(dn.input_feature_dimension);      // forward N
  const int64_t c_features = x->shape().dimensions(dn.input_batch_dimension);   // forward C
  const int64_t k_features = dy->shape().dimensions(dn.kernel_output_feature_dimension);
  if (groups < 1 || c_features % groups != 0 || k_features % groups != 0) return false;
  if (dy->shape().dimensions(dn.kernel_input_feature_dimension) != batch ||
      conv->shape().dimensions(dn.output_feature_dimension) != k_features ||
      conv->shape().dimensions(dn.output_batch_dimension) * groups != c_features)
    return false;

  ConvConfig c;
  c.kind = ConvCallKind::kBackwardFilter;
  c.precision = ConvPrecision(conv);
  c.feature_group_count = groups;
  c.batch = batch;
  c.input_features = c_features;
  c.output_features = k_features;
  bool explicit_pad = false;
  struct Dim {
    int64_t s, d, r, k, p_out, h, pl;
  };
  std::vector<Dim> dims;
  for (int64_t i = 0; i < n; ++i) {
    const WindowDimension& wd = window.dimensions[i];
    Dim g;
    g.s = wd.window_dilation;
    g.d = wd.stride;
    g.r = conv->shape().dimensions(dn.output_spatial_dimensions[i]);
    g.p_out = dy->shape().dimensions(dn.kernel_spatial_dimensions[i]);
    g.h = x->shape().dimensions(dn.input_spatial_dimensions[i]);
    g.pl = wd.padding_low;
    g.k = (g.r - 1) * g.d + 1;
    const int64_t span = g.h + 2 * g.pl - g.k;
    if (g.pl < 0 || span < 0 || span / g.s + 1 != g.p_out) explicit_pad = true;
    dims.push_back(g);
  }
  HloEditor ed(conv->parent());
  const PrimitiveType t = conv->shape().element_type();
  HloInstruction* xin = x;
  if (explicit_pad) {
    std::vector<PaddingDimension> pad(x->shape().rank());
    Shape padded = x->shape();
    for (int64_t i = 0; i < n; ++i) {
      const Dim& g = dims[i];
      const int64_t need = (g.p_out - 1) * g.s + g.k;  // what the windows read
      const int64_t high = need - g.h - g.pl;
      pad[dn.input_spatial_dimensions[i]] = PaddingDimension{g.pl, high, 0};
      padded.set_dimensions(dn.input_spatial_dimensions[i], need);
    }
    HloInstruction* zero = ed.ScalarConstant(t, 0, conv);
    auto p = std::make_unique<HloInstruction>(HloOpcode::kPad, padded, "");
    p->AppendOperand(x);
    p->AppendOperand(zero);
    p->attrs().padding = pad;
    xin = ed.Add(std::move(p), conv);
  }
  for (int64_t i = 0; i < n; ++i) {
    const Dim& g = dims[i];
    c.input_spatial.push_back(xin->shape().dimensions(dn.input_spatial_dimensions[i]));
    c.filter_spatial.push_back(g.r);
    c.output_spatial.push_back(g.p_out);
    c.strides.push_back(g.s);
    c.dilations.push_back(g.d);
    c.padding_low.push_back(explicit_pad ? 0 : g.pl);
    c.padding_high.push_back(explicit_pad ? 0 : g.pl);
  }
  // Forward roles: x [N = the form's feature, C = its batch, S], dy [N = kernel input feature,
  // K = kernel output feature, S], dw [K = output feature, C/G = output batch, S].
  const std::vector<int64_t> x_first = Order(false, dn.input_feature_dimension, dn.input_batch_dimension,
                                             dn.input_spatial_dimensions);
  const std::vector<int64_t> dy_first = Order(false, dn.kernel_input_feature_dimension,
                                              dn.kernel_output_feature_dimension, dn.kernel_spatial_dimensions);
  c.channels_last = !(IsIdentity(x_first) && IsIdentity(dy_first));
  KILN_ASSIGN_OR_RETURN(HloInstruction * xt,
                        ed.Transpose(xin, Order(c.channels_last, dn.input_feature_dimension, dn.input_batch_dimension,
                                                dn.input_spatial_dimensions),
                                     nullptr, conv));
  KILN_ASSIGN_OR_RETURN(HloInstruction * dyt,
                        ed.Transpose(dy, Order(c.channels_last, dn.kernel_input_feature_dimension,
                                               dn.kernel_output_feature_dimension, dn.kernel_spatial_dimensions),
                                     nullptr, conv));
  KILN_RETURN_IF_ERROR(EmitCall(conv, c, {xt, dyt}, {},
                                Order(c.channels_last, dn.output_feature_dimension, dn.output_batch_dimension,
                                      dn.output_spatial_dimensions)));
  return true;
}

StatusOr<bool> RewriteConv(HloInstruction* conv, const ConvRewriterOptions& options) {
  if (options.backward_convolutions) {
    KILN_ASSIGN_OR_RETURN(bool data, RewriteBackwardData(conv));
    if (data) return true;
    KILN_ASSIGN_OR_RETURN(bool filter, RewriteBackwardFilter(conv));
    if (filter) return true;
  }
  if (!conv->attrs().convolution_dimension_numbers || !conv->attrs().window) return false;
  if (!conv->control_predecessors().empty() || !conv->control_successors().empty()) return false;
  const ConvolutionDimensionNumbers& dn = *conv->attrs().convolution_dimension_numbers;
  const Window& window = *conv->attrs().window;
  HloInstruction* x = conv->operand(0);
  HloInstruction* w = conv->operand(1);
  const PrimitiveType t = conv->shape().element_type();
  if (!CudnnType(t) || x->shape().element_type() != t || w->shape().element_type() != t) return false;
  const int64_t n = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  if (n < 1 || n > 3 || conv->attrs().batch_group_count != 1) return false;
  if (static_cast<int64_t>(window.dimensions.size()) != n) return false;
  if (!RowMajor(x->shape()) || !RowMajor(w->shape()) || !RowMajor(conv->shape())) return false;
  if (x->shape().is_dynamic() || w->shape().is_dynamic() || conv->shape().is_dynamic()) return false;
  for (int64_t d : conv->shape().dimensions())
    if (d == 0) return false;  // an empty result: nothing to run

  HloComputation* comp = conv->parent();
  HloEditor ed(comp);
  ConvConfig c;
  c.feature_group_count = conv->attrs().feature_group_count;
  for (Precision p : conv->attrs().precision_config.operand_precision)
    if (p == Precision::kHighest) c.precision = Precision::kHighest;

  // Explicit padding (base dilation, padding cuDNN cannot express).
  bool explicit_pad = false;
  for (int64_t i = 0; i < n; ++i) {
    const WindowDimension& wd = window.dimensions[i];
    if (wd.stride < 1 || wd.window_dilation < 1 || wd.base_dilation < 1) return false;
    const int64_t in = x->shape().dimensions(dn.input_spatial_dimensions[i]);
    const int64_t k = (wd.size - 1) * wd.window_dilation + 1;
    const int64_t padded_low_low = (in - 1) * wd.base_dilation + 1 + 2 * wd.padding_low;
    const int64_t out = conv->shape().dimensions(dn.output_spatial_dimensions[i]);
    const bool symmetric_ok = wd.padding_low >= 0 && wd.padding_high >= 0 &&
                              padded_low_low >= k && (padded_low_low - k) / wd.stride + 1 == out;
    if (wd.base_dilation != 1 || !symmetric_ok) explicit_pad = true;
  }
  HloInstruction* xin = x;
  if (explicit_pad) {
    std::vector<PaddingDimension> pad(x->shape().rank());
    Shape padded = x->shape();
    for (int64_t i = 0; i < n; ++i) {
      const WindowDimension& wd = window.dimensions[i];
      const int64_t d = dn.input_spatial_dimensions[i];
      pad[d] = PaddingDimension{wd.padding_low, wd.padding_high, wd.base_dilation - 1};
      const int64_t in = x->shape().dimensions(d);
      const int64_t size = in + wd.padding_low + wd.padding_high + (in > 0 ? (in - 1) * (wd.base_dilation - 1) : 0);
      if (size < 1) return false;
      padded.set_dimensions(d, size);
    }
    HloInstruction* zero = ed.ScalarConstant(t, 0, conv);
    auto p = std::make_unique<HloInstruction>(HloOpcode::kPad, padded, "");
    p->AppendOperand(x);
    p->AppendOperand(zero);
    p->attrs().padding = pad;
    xin = ed.Add(std::move(p), conv);
  }
  // Window reversal.
  HloInstruction* win = w;
  std::vector<int64_t> reversed;
  for (int64_t i = 0; i < n; ++i)
    if (window.dimensions[i].window_reversal) reversed.push_back(dn.kernel_spatial_dimensions[i]);
  if (!reversed.empty()) {
    auto r = std::make_unique<HloInstruction>(HloOpcode::kReverse, w->shape(), "");
    r->AppendOperand(w);
    r->attrs().dimensions = reversed;
    win = ed.Add(std::move(r), conv);
  }
  // Layouts.
  const std::vector<int64_t> x_first = Order(false, dn.input_batch_dimension, dn.input_feature_dimension,
                                             dn.input_spatial_dimensions);
  const std::vector<int64_t> y_first = Order(false, dn.output_batch_dimension, dn.output_feature_dimension,
                                             dn.output_spatial_dimensions);
  c.channels_last = !(IsIdentity(x_first) && IsIdentity(y_first));
  const std::vector<int64_t> xp = Order(c.channels_last, dn.input_batch_dimension, dn.input_feature_dimension,
                                        dn.input_spatial_dimensions);
  const std::vector<int64_t> wp = Order(c.channels_last, dn.kernel_output_feature_dimension,
                                        dn.kernel_input_feature_dimension, dn.kernel_spatial_dimensions);
  const std::vector<int64_t> yp = Order(c.channels_last, dn.output_batch_dimension, dn.output_feature_dimension,
                                        dn.output_spatial_dimensions);
  KILN_ASSIGN_OR_RETURN(HloInstruction * xt, ed.Transpose(xin, xp, nullptr, conv));
  KILN_ASSIGN_OR_RETURN(HloInstruction * wt, ed.Transpose(win, wp, nullptr, conv));

  c.batch = xin->shape().dimensions(dn.input_batch_dimension);
  c.input_features = xin->shape().dimensions(dn.input_feature_dimension);
  c.output_features = w->shape().dimensions(dn.kernel_output_feature_dimension);
  for (int64_t i = 0; i < n; ++i) {
    const WindowDimension& wd = window.dimensions[i];
    c.input_spatial.push_back(xin->shape().dimensions(dn.input_spatial_dimensions[i]));
    c.filter_spatial.push_back(w->shape().dimensions(dn.kernel_spatial_dimensions[i]));
    c.output_spatial.push_back(conv->shape().dimensions(dn.output_spatial_dimensions[i]));
    c.strides.push_back(wd.stride);
    c.dilations.push_back(wd.window_dilation);
    c.padding_low.push_back(explicit_pad ? 0 : wd.padding_low);
    c.padding_high.push_back(explicit_pad ? 0 : wd.padding_high);
  }
  if (c.input_features != w->shape().dimensions(dn.kernel_input_feature_dimension) * c.feature_group_count)
    return false;

  // Epilogue, through an identity output transpose only.
  std::vector<HloInstruction*> extra;
  HloInstruction* value = conv;
  const bool identity_out = IsIdentity(yp);
  if (options.fuse_epilogues && identity_out && EpilogueType(t)) {
    const int64_t feature = dn.output_feature_dimension;
    HloInstruction* bias = nullptr;
    HloInstruction* side = nullptr;
    HloInstruction* scale = nullptr;
    while (value->user_count() == 1 && !value->IsRoot()) {
      HloInstruction* u = value->users()[0];
      if (u->shape().element_type() != t || u->shape().dimensions() != value->shape().dimensions() ||
          u->operand_count() != 2 || !u->control_predecessors().empty() || !u->control_successors().empty())
        break;
      HloInstruction* other = u->operand(u->operand(0) == value ? 1 : 0);
      if (other == value) break;
      // conv(x, w) * s[K] == conv(x, w * s[K]): a per-output-feature scale folds into the
      // filter (first, before anything else was taken).
      if (u->opcode() == HloOpcode::kMultiply && !scale && !bias && !side && !c.relu &&
          other->opcode() == HloOpcode::kBroadcast && other->attrs().dimensions == std::vector<int64_t>{feature} &&
          other->operand(0)->shape().element_type() == t) {
        scale = other->operand(0);
        value = u;
        continue;
      }
      if (u->opcode() == HloOpcode::kAdd && !c.relu) {
        if (!bias && other->opcode() == HloOpcode::kBroadcast &&
            other->attrs().dimensions == std::vector<int64_t>{feature} &&
            other->operand(0)->shape().element_type() == t) {
          bias = other->operand(0);
          c.has_bias = true;
          value = u;
          continue;
        }
        if (!side && other->opcode() != HloOpcode::kBroadcast && RowMajor(other->shape()) &&
            !DependsOn(other, conv)) {
          side = other;
          c.side_input_scale = 1.0;
          value = u;
          continue;
        }
        break;
      }
      if (u->opcode() == HloOpcode::kMaximum && !c.relu) {
        std::optional<double> z = ScalarConstantValue(other);
        if (!z || *z != 0) break;
        c.relu = true;
        value = u;
        break;
      }
      break;
    }
    if (scale) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * sb, ed.Broadcast(scale, wt->shape(), {0}, conv));
      KILN_ASSIGN_OR_RETURN(wt, ed.Binary(HloOpcode::kMultiply, wt, sb, nullptr, conv));
    }
    // cuDNN's fused call needs a bias (it is the bias-activation call).
    if (c.has_bias || c.relu || side) {
      if (bias) extra.push_back(bias);
      if (side) extra.push_back(side);
      if (!bias) {
        // A zero bias lets the fused call run side input / relu alone.
        Literal zeros(Shape::ArrayWithDefaultLayout(t, {c.output_features}));
        extra.insert(extra.begin(), ed.Constant(std::move(zeros), conv));
        c.has_bias = true;
      }
    }
  }

  Shape out = Shape::ArrayWithDefaultLayout(t, c.OutputDims());
  auto call = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, out, UniqueInstructionName(*comp, "cudnn_conv"));
  call->AppendOperand(xt);
  call->AppendOperand(wt);
  for (HloInstruction* e : extra) call->AppendOperand(e);
  call->attrs().custom_call_target = std::string(kConvCallTarget);
  call->backend_config() = BackendConfig{c.ToJson(), true};
  HloInstruction* added = ed.Add(std::move(call), conv);
  Shape result_shape = value->shape();
  KILN_ASSIGN_OR_RETURN(HloInstruction * y, ed.Transpose(added, Inverse(yp), &result_shape, conv));
  MoveControlDependencies(value, y);
  KILN_RETURN_IF_ERROR(ReplaceInstruction(value, y));
  return true;
}

}  // namespace

StatusOr<bool> ConvRewriter::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* comp : module.computations()) {
    std::vector<HloInstruction*> convs;
    for (HloInstruction* i : comp->MakeInstructionPostOrder())
      if (i->opcode() == HloOpcode::kConvolution) convs.push_back(i);
    for (HloInstruction* c : convs) {
      KILN_ASSIGN_OR_RETURN(bool did, RewriteConv(c, options_));
      changed |= did;
    }
  }
  return changed;
}

}  // namespace kiln::cuda
