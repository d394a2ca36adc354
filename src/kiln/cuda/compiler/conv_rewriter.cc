#include "kiln/cuda/compiler/conv_rewriter.h"

#include <algorithm>
#include <numeric>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cuda {

namespace {

bool RowMajor(const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); }

bool CudnnType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 ||
         t == PrimitiveType::kF64;
}

bool EpilogueType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF16 || t == PrimitiveType::kBF16;
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

std::optional<double> ScalarConstantValue(const HloInstruction* i) {
  while (i->opcode() == HloOpcode::kBroadcast || i->opcode() == HloOpcode::kReshape) i = i->operand(0);
  if (i->opcode() != HloOpcode::kConstant || !i->has_literal() || i->literal_elided()) return std::nullopt;
  const Literal& l = i->literal();
  if (!l.shape().IsArray() || l.element_count() < 1 || IsComplexType(l.shape().element_type())) return std::nullopt;
  double v = l.GetAsDouble(0);
  for (int64_t k = 1; k < l.element_count(); ++k)
    if (l.GetAsDouble(k) != v) return std::nullopt;
  return v;
}

bool DependsOn(HloInstruction* from, const HloInstruction* target) {
  std::vector<HloInstruction*> work = {from};
  std::unordered_set<const HloInstruction*> seen;
  while (!work.empty()) {
    HloInstruction* x = work.back();
    work.pop_back();
    if (x == target) return true;
    if (!seen.insert(x).second) continue;
    for (HloInstruction* o : x->operands()) work.push_back(o);
  }
  return false;
}

StatusOr<bool> RewriteConv(HloInstruction* conv, const ConvRewriterOptions& options) {
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
