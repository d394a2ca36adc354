// Convolutions on the GPU (label gpu): cuDNN plans (forward, backward data, backward filter,
// fused bias+relu+residual) against a host reference in double; the host reference itself is
// checked against the evaluator's HLO convolution on every forward case. Every algorithm cuDNN
// lists runs and must be right (the autotuner relies on that). Skipped without a GPU.
#include <iostream>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/gpu_test_util.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"

namespace kiln::cuda::libs {
namespace {

using testing::Matches;
using testing::RandomLiteral;

struct ConvCase {
  std::string name;
  PrimitiveType dtype = PrimitiveType::kF32;
  ConvLayout layout = ConvLayout::kChannelsLast;
  Precision precision = Precision::kDefault;
  int64_t batch = 2, in_features = 8, out_features = 16;
  std::vector<int64_t> in_spatial = {9, 9}, window = {3, 3};
  std::vector<int64_t> strides = {}, padding = {}, dilations = {};  // empty: 1 / 0 / 1
  int64_t groups = 1;
  bool bias = false, relu = false;
  double side_input_scale = 0;
  bool side_separate = false;  // the side input in its own buffer (else y itself)
  double alpha = 1;
};
std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

ConvDesc DescFor(const ConvCase& c, ConvKind kind) {
  ConvDesc d;
  d.kind = kind;
  d.dtype = c.dtype;
  d.precision = c.precision;
  d.input_layout = d.filter_layout = d.output_layout = c.layout;
  d.batch = c.batch;
  d.input_features = c.in_features;
  d.output_features = c.out_features;
  d.input_spatial = c.in_spatial;
  d.filter_spatial = c.window;
  d.strides = c.strides;
  d.padding_low = d.padding_high = c.padding;
  d.dilations = c.dilations;
  d.feature_group_count = c.groups;
  for (size_t i = 0; i < c.in_spatial.size(); ++i) {
    const int64_t s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t p = c.padding.empty() ? 0 : c.padding[i];
    const int64_t dl = c.dilations.empty() ? 1 : c.dilations[i];
    d.output_spatial.push_back((c.in_spatial[i] + 2 * p - dl * (c.window[i] - 1) - 1) / s + 1);
  }
  d.has_bias = c.bias;
  d.activation = c.relu ? ConvActivation::kRelu : ConvActivation::kNone;
  d.side_input_scale = c.side_input_scale;
  d.alpha = c.alpha;
  return d;
}

// Linear index of (outer, channel, spatial...) in a tensor of `layout`.
int64_t Index(ConvLayout layout, int64_t channels, const std::vector<int64_t>& spatial_sizes,
              int64_t outer, int64_t channel, const std::vector<int64_t>& pos) {
  int64_t sp = 0;
  for (size_t i = 0; i < pos.size(); ++i) sp = sp * spatial_sizes[i] + pos[i];
  int64_t spatial_count = 1;
  for (int64_t s : spatial_sizes) spatial_count *= s;
  if (layout == ConvLayout::kChannelsFirst) return (outer * channels + channel) * spatial_count + sp;
  return (outer * spatial_count + sp) * channels + channel;
}

// Visits every (x index, w index, y index) triple of multiply-adds of the forward convolution.
template <typename F>
void ForEachTerm(const ConvDesc& d, F f) {
  const int64_t n_sp = d.spatial_dims();
  const int64_t cg = d.input_features / d.feature_group_count;
  const int64_t kg = d.output_features / d.feature_group_count;
  int64_t out_count = 1, win_count = 1;
  for (int64_t s : d.output_spatial) out_count *= s;
  for (int64_t s : d.filter_spatial) win_count *= s;
  std::vector<int64_t> op(n_sp), wp(n_sp), ip(n_sp);
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t k = 0; k < d.output_features; ++k)
      for (int64_t o = 0; o < out_count; ++o) {
        for (int64_t i = n_sp - 1, r = o; i >= 0; --i) op[i] = r % d.output_spatial[i], r /= d.output_spatial[i];
        const int64_t yi = Index(d.output_layout, d.output_features, d.output_spatial, n, k, op);
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t w = 0; w < win_count; ++w) {
            for (int64_t i = n_sp - 1, r = w; i >= 0; --i) wp[i] = r % d.filter_spatial[i], r /= d.filter_spatial[i];
            bool inside = true;
            for (int64_t i = 0; i < n_sp; ++i) {
              const int64_t s = d.strides.empty() ? 1 : d.strides[i];
              const int64_t p = d.padding_low.empty() ? 0 : d.padding_low[i];
              const int64_t dl = d.dilations.empty() ? 1 : d.dilations[i];
              ip[i] = op[i] * s + wp[i] * dl - p;
              inside = inside && ip[i] >= 0 && ip[i] < d.input_spatial[i];
            }
            if (!inside) continue;
            const int64_t ci = (k / kg) * cg + c;
            const int64_t xi = Index(d.input_layout, d.input_features, d.input_spatial, n, ci, ip);
            const int64_t wi = Index(d.filter_layout, cg, d.filter_spatial, k, c, wp);
            f(xi, wi, yi);
          }
      }
}

std::string SpatialText(const std::vector<int64_t>& v, int64_t fallback, size_t n) {
  std::vector<int64_t> full(n, fallback);
  if (!v.empty()) full = v;
  return StrJoin(full, "x");
}

// The forward convolution through the reference evaluator (HLO text).
StatusOr<Literal> EvaluatorForward(const ConvDesc& d, const Literal& x, const Literal& w) {
  const size_t n = d.input_spatial.size();
  const std::string sp = n == 1 ? "0" : n == 2 ? "01" : "012";
  const bool last = d.input_layout == ConvLayout::kChannelsLast;
  const std::string labels =
      last ? StrCat("b", sp, "f_o", sp, "i->b", sp, "f") : StrCat("bf", sp, "_oi", sp, "->bf", sp);
  std::string pad;
  for (size_t i = 0; i < n; ++i) {
    const int64_t p = d.padding_low.empty() ? 0 : d.padding_low[i];
    pad += StrCat(i ? "x" : "", p, "_", p);
  }
  const std::string t(PrimitiveTypeName(d.dtype));
  const std::string text = StrCat(
      "HloModule conv\nENTRY e {\n  x = ", t, "[", StrJoin(d.InputDims(), ","), "] parameter(0)\n",
      "  w = ", t, "[", StrJoin(d.FilterDims(), ","), "] parameter(1)\n", "  ROOT c = ", t, "[",
      StrJoin(d.OutputDims(), ","), "] convolution(x, w), window={size=",
      SpatialText(d.filter_spatial, 1, n), " stride=", SpatialText(d.strides, 1, n), " pad=", pad,
      " rhs_dilate=", SpatialText(d.dilations, 1, n), "}, dim_labels=", labels,
      ", feature_group_count=", d.feature_group_count, "\n}\n");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
  std::vector<Literal> args;
  args.push_back(x);
  args.push_back(w);
  return EvaluateModule(*module, args);
}

Tolerance ConvTolerance(const ConvDesc& d) {
  if (d.dtype == PrimitiveType::kF32) {
    return d.precision == Precision::kHighest ? Tolerance{1e-5, 1e-5, 1e-5} : kTf32Tolerance;
  }
  if (d.dtype == PrimitiveType::kF64) return {1e-9, 1e-9, 1e-9};
  return {2e-2, 2e-2, 4e-3};  // bf16/f16: two roundings (inputs exact, output rounded)
}

class ConvTest : public testing::GpuTest, public ::testing::WithParamInterface<ConvCase> {
 protected:
  void RunKind(const ConvCase& c, ConvKind kind) {
    const ConvDesc desc = DescFor(c, kind);
    SCOPED_TRACE(desc.ToString());
    KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ConvPlan> plan, ConvPlan::Create(desc, *device_));
    const uint64_t seed = std::hash<std::string>()(c.name) + static_cast<int>(kind);
    const Shape xs = Shape::ArrayWithDefaultLayout(c.dtype, desc.InputDims());
    const Shape ws = Shape::ArrayWithDefaultLayout(c.dtype, desc.FilterDims());
    const Shape ys = Shape::ArrayWithDefaultLayout(c.dtype, desc.OutputDims());
    Literal x = RandomLiteral(c.dtype, desc.InputDims(), seed);
    Literal w = RandomLiteral(c.dtype, desc.FilterDims(), seed + 1);
    Literal y = RandomLiteral(c.dtype, desc.OutputDims(), seed + 2);  // dy, or the side input
    Literal bias = RandomLiteral(c.dtype, {c.out_features}, seed + 3);

    // Host reference in double.
    const Shape* result_shape = kind == ConvKind::kForward ? &ys : kind == ConvKind::kBackwardData ? &xs : &ws;
    Literal expected(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, result_shape->dimensions()));
    std::vector<double> acc(expected.element_count(), 0.0);
    ForEachTerm(desc, [&](int64_t xi, int64_t wi, int64_t yi) {
      switch (kind) {
        case ConvKind::kForward: acc[yi] += x.GetAsDouble(xi) * w.GetAsDouble(wi); break;
        case ConvKind::kBackwardData: acc[xi] += y.GetAsDouble(yi) * w.GetAsDouble(wi); break;
        case ConvKind::kBackwardFilter: acc[wi] += x.GetAsDouble(xi) * y.GetAsDouble(yi); break;
      }
    });
    if (kind == ConvKind::kForward) {
      // The host loop is HLO's convolution: check it against the evaluator.
      KILN_ASSERT_OK_AND_ASSIGN(Literal eval, EvaluatorForward(desc, x, w));
      Literal host(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, ys.dimensions()));
      for (int64_t i = 0; i < host.element_count(); ++i) host.SetFromDouble(i, acc[i]);
      EXPECT_TRUE(Matches(eval, host, DefaultTolerance(c.dtype), "evaluator vs host loop"));
      if (desc.fused()) {
        const int64_t k_count = c.out_features;
        for (int64_t i = 0; i < host.element_count(); ++i) {
          const int64_t k = c.layout == ConvLayout::kChannelsLast
                                ? i % k_count
                                : (i / (host.element_count() / c.batch / k_count)) % k_count;
          double v = desc.alpha * acc[i] + desc.side_input_scale * y.GetAsDouble(i) +
                     (c.bias ? bias.GetAsDouble(k) : 0.0);
          if (c.relu) v = std::max(v, 0.0);
          acc[i] = v;
        }
      }
    }
    for (int64_t i = 0; i < expected.element_count(); ++i) expected.SetFromDouble(i, acc[i]);

    ConvBuffers buffers;
    const Shape& out_shape = *result_shape;
    switch (kind) {
      case ConvKind::kForward: {
        KILN_ASSERT_OK_AND_ASSIGN(buffers.x, Upload(x));
        KILN_ASSERT_OK_AND_ASSIGN(buffers.w, Upload(w));
        if (c.side_input_scale != 0 && c.side_separate) {
          KILN_ASSERT_OK_AND_ASSIGN(buffers.side_input, Upload(y));
          KILN_ASSERT_OK_AND_ASSIGN(buffers.y, Alloc(plan->output_bytes()));
        } else if (c.side_input_scale != 0) {
          KILN_ASSERT_OK_AND_ASSIGN(buffers.y, Upload(y));  // residual in place: z = y
        } else {
          KILN_ASSERT_OK_AND_ASSIGN(buffers.y, Alloc(plan->output_bytes()));
        }
        if (c.bias) {
          KILN_ASSERT_OK_AND_ASSIGN(buffers.bias, Upload(bias));
        }
        break;
      }
      case ConvKind::kBackwardData: {
        KILN_ASSERT_OK_AND_ASSIGN(buffers.y, Upload(y));
        KILN_ASSERT_OK_AND_ASSIGN(buffers.w, Upload(w));
        KILN_ASSERT_OK_AND_ASSIGN(buffers.x, Alloc(plan->input_bytes()));
        break;
      }
      case ConvKind::kBackwardFilter: {
        KILN_ASSERT_OK_AND_ASSIGN(buffers.x, Upload(x));
        KILN_ASSERT_OK_AND_ASSIGN(buffers.y, Upload(y));
        KILN_ASSERT_OK_AND_ASSIGN(buffers.w, Alloc(plan->filter_bytes()));
        break;
      }
    }
    const runtime::DeviceMemory result =
        kind == ConvKind::kForward ? buffers.y : kind == ConvKind::kBackwardData ? buffers.x : buffers.w;

    KILN_ASSERT_OK_AND_ASSIGN(std::vector<ConvAlgorithm> algos, plan->ListAlgorithms());
    ASSERT_FALSE(algos.empty());
    KILN_ASSERT_OK_AND_ASSIGN(ConvAlgorithm default_algo, plan->DefaultAlgorithm());
    EXPECT_EQ(default_algo.description, algos[0].description);
    int ran = 0, split = 0, rejected = 0;
    for (const ConvAlgorithm& a : algos) {
      // Fused residual cases read y: run each algorithm on a fresh copy.
      if (c.side_input_scale != 0 && !c.side_separate) {
        KILN_ASSERT_OK(stream_->MemcpyHostToDevice(buffers.y, y.untyped_data(), y.size_bytes()));
      } else {
        KILN_ASSERT_OK(stream_->Memset8(result, 0xFF));
      }
      KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory workspace, Alloc(a.workspace_bytes));
      Status s = plan->Run(a, buffers, workspace, *stream_);
      if (s.ok()) s = stream_->Synchronize();
      if (!s.ok()) {
        // cuDNN's fused call may reject a configuration at run time (the autotuner drops such
        // candidates); the default algorithm and every other algorithm must run.
        if (a.index == 0 || !desc.fused() || a.split_epilogue) {
          ADD_FAILURE() << a.description << ": " << s.ToString();
        } else {
          ++rejected;
          std::cout << "  rejected: " << a.description << ": " << s.ToString() << "\n";
        }
        continue;
      }
      ++ran;
      if (a.split_epilogue) ++split;
      KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(result, out_shape));
      EXPECT_TRUE(Matches(actual, expected, ConvTolerance(desc))) << a.description;
    }
    std::cout << desc.ToString() << ": " << ran << " of " << algos.size()
              << " algorithms ran (" << split << " split, " << rejected
              << " fused calls rejected)\n";
    if (desc.fused()) {
      EXPECT_GT(split, 0) << "no split algorithm ran";
    }
  }
};

TEST_P(ConvTest, Forward) { RunKind(GetParam(), ConvKind::kForward); }
bool Fused(const ConvCase& c) { return c.bias || c.relu || c.side_input_scale != 0; }

TEST_P(ConvTest, BackwardData) {
  if (Fused(GetParam())) GTEST_SKIP() << "fused cases are forward only";
  RunKind(GetParam(), ConvKind::kBackwardData);
}
TEST_P(ConvTest, BackwardFilter) {
  if (Fused(GetParam())) GTEST_SKIP() << "fused cases are forward only";
  RunKind(GetParam(), ConvKind::kBackwardFilter);
}

std::vector<ConvCase> Cases() {
  using PT = PrimitiveType;
  const ConvLayout first = ConvLayout::kChannelsFirst;
  return {
      {.name = "f32_nhwc_pad1", .padding = {1, 1}},
      {.name = "f32_nchw_highest_groups_stride_dilation", .layout = first,
       .precision = Precision::kHighest, .in_spatial = {11, 10}, .strides = {2, 1},
       .padding = {1, 2}, .dilations = {2, 1}, .groups = 2},
      {.name = "bf16_nhwc_3x3", .dtype = PT::kBF16, .padding = {1, 1}},
      {.name = "bf16_nhwc_depthwise", .dtype = PT::kBF16, .in_features = 16,
       .out_features = 16, .padding = {1, 1}, .groups = 16},
      {.name = "f16_nchw_stride2", .dtype = PT::kF16, .layout = first, .strides = {2, 2}},
      {.name = "f16_nwc_1d", .dtype = PT::kF16, .in_spatial = {33}, .window = {5},
       .padding = {2}},
      {.name = "f32_ncw_1d_dilated", .layout = first, .in_spatial = {40}, .window = {3},
       .dilations = {3}},
      {.name = "f64_ncdhw_3d", .dtype = PT::kF64, .layout = first, .batch = 1, .in_features = 3,
       .out_features = 4, .in_spatial = {5, 6, 7}, .window = {3, 3, 3}, .padding = {1, 1, 1}},
      {.name = "f32_ndhwc_3d", .batch = 1, .in_features = 4, .out_features = 8,
       .in_spatial = {6, 6, 6}, .window = {3, 3, 3}},
      {.name = "bf16_nhwc_bias_relu", .dtype = PT::kBF16, .padding = {1, 1}, .bias = true,
       .relu = true},
      {.name = "bf16_nhwc_bias_relu_residual", .dtype = PT::kBF16, .padding = {1, 1},
       .bias = true, .relu = true, .side_input_scale = 1},
      {.name = "f32_nchw_bias_only", .layout = first, .padding = {1, 1}, .bias = true},
      {.name = "f16_nhwc_bias_relu", .dtype = PT::kF16, .in_features = 16, .out_features = 32,
       .padding = {1, 1}, .bias = true, .relu = true},
      {.name = "f32_nhwc_bias_relu_separate_residual", .padding = {1, 1}, .bias = true,
       .relu = true, .side_input_scale = 0.5, .side_separate = true, .alpha = 2},
      {.name = "bf16_nchw_relu_only", .dtype = PT::kBF16, .layout = first, .padding = {1, 1},
       .relu = true},
      {.name = "f64_nhwc_bias_residual", .dtype = PT::kF64, .padding = {1, 1}, .bias = true,
       .side_input_scale = -1},
      {.name = "f16_nchw_residual_only", .dtype = PT::kF16, .layout = first, .strides = {2, 2},
       .side_input_scale = 1, .side_separate = true},
  };
}

// The host loop agrees with the evaluator's convolution on every forward case (no GPU needed).
TEST(ConvReferenceTest, HostLoopIsHloConvolution) {
  for (const ConvCase& c : Cases()) {
    const ConvDesc desc = DescFor(c, ConvKind::kForward);
    KILN_EXPECT_OK(ValidateConvDesc(desc));
    Literal x = RandomLiteral(c.dtype, desc.InputDims(), 1);
    Literal w = RandomLiteral(c.dtype, desc.FilterDims(), 2);
    Literal host(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, desc.OutputDims()));
    std::vector<double> acc(host.element_count(), 0.0);
    ForEachTerm(desc, [&](int64_t xi, int64_t wi, int64_t yi) {
      acc[yi] += x.GetAsDouble(xi) * w.GetAsDouble(wi);
    });
    for (int64_t i = 0; i < host.element_count(); ++i) host.SetFromDouble(i, acc[i]);
    StatusOr<Literal> eval = EvaluatorForward(desc, x, w);
    ASSERT_TRUE(eval.ok()) << c.name << ": " << eval.status().ToString();
    EXPECT_TRUE(Matches(*eval, host, DefaultTolerance(c.dtype), c.name));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kiln::cuda::libs
