// The flash-attention kernel (label gpu) against a float64 host reference of softmax(scale·q·kᵀ
// masked)·v on fresh random bf16/f16 inputs, outputs poisoned with NaN first: head dims 64 and
// 128, causal and not, sequence lengths that are not multiples of any tile (1, 7, 1000), fewer
// queries than keys (the causal offset of a decoder step), strided views (heads in the middle of
// [batch, seq, heads, dim], q/k/v slices of one fused buffer) and every kernel config. Skipped
// without a GPU. The descriptor checks and NVRTC compiles of every config are in kernels_test.cc.
#include "kiln/cuda/libs/attention.h"

#include <iostream>

#include "kiln/cuda/libs/attention_cudnn.h"

#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/gpu_test_util.h"
#include "kiln/eval/tolerance.h"

namespace kiln::cuda::libs {
namespace {

using testing::RandomLiteral;

struct Case {
  std::string name;
  int64_t b = 2, h = 3, q = 77, kv = 77, d = 64;
  bool causal = false;
  bool bshd = false;   // operands laid out [b, seq, h, d] instead of [b, h, seq, d]
  bool fused = false;  // q, k, v slices of one [b, seq, 3, h, d] buffer (bshd views)
  PrimitiveType type = PrimitiveType::kBF16;
  double scale = 0;  // 0: 1/sqrt(d)
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// Strides of a [b, h, seq, d] or [b, seq, h, d] operand of `rows` rows, `heads` heads.
AttentionDesc::Operand View(const Case& c, int64_t rows, int64_t offset = 0, int64_t row_mult = 1) {
  AttentionDesc::Operand o;
  o.offset = offset;
  if (c.bshd || c.fused) {
    o.row = c.h * c.d * row_mult;
    o.batch[1] = c.d;
    o.batch[0] = rows * o.row;
  } else {
    o.row = c.d;
    o.batch[1] = rows * c.d;
    o.batch[0] = c.h * rows * c.d;
  }
  return o;
}

AttentionDesc DescFor(const Case& c) {
  AttentionDesc d;
  d.type = c.type;
  d.batch[0] = c.b;
  d.batch[1] = c.h;
  d.q_len = c.q;
  d.kv_len = c.kv;
  d.head_dim = c.d;
  d.scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  d.causal = c.causal;
  d.causal_offset = c.kv - c.q;
  if (c.fused) {  // one buffer [b, seq, 3, h, d]: q at 0, k at h*d, v at 2*h*d
    d.q = View(c, c.q, 0, 3);
    d.k = View(c, c.kv, c.h * c.d, 3);
    d.v = View(c, c.kv, 2 * c.h * c.d, 3);
  } else {
    d.q = View(c, c.q);
    d.k = View(c, c.kv);
    d.v = View(c, c.kv);
  }
  Case out = c;
  out.fused = false;
  d.out = View(out, c.q);
  return d;
}

double At(const Literal& l, const AttentionDesc::Operand& o, int64_t b0, int64_t b1,
          int64_t row, int64_t e) {
  return l.GetAsDouble(o.offset + b0 * o.batch[0] + b1 * o.batch[1] + row * o.row + e);
}

class AttentionTest : public testing::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(AttentionTest, MatchesReferenceInEveryConfig) {
  const Case& c = GetParam();
  const AttentionDesc d = DescFor(c);
  ASSERT_TRUE(CheckAttentionSupported(d, device_->description().compute_capability_major).ok());
  const int64_t q_elems = c.fused ? d.ExtentOf(d.v, c.kv) : d.ExtentOf(d.q, c.q);
  Literal q = RandomLiteral(c.type, {q_elems}, 11);
  Literal k = c.fused ? Literal(q.shape()) : RandomLiteral(c.type, {d.ExtentOf(d.k, c.kv)}, 12);
  Literal v = c.fused ? Literal(q.shape()) : RandomLiteral(c.type, {d.ExtentOf(d.v, c.kv)}, 13);
  const Literal& kl = c.fused ? q : k;
  const Literal& vl = c.fused ? q : v;
  // The float64 reference.
  const Shape out_shape = Shape::ArrayWithDefaultLayout(c.type, {d.ExtentOf(d.out, c.q)});
  Literal expected(out_shape);
  for (int64_t i = 0; i < expected.element_count(); ++i) expected.SetFromDouble(i, 0);
  // Each row's log-sum-exp of its scaled scores, [b, h, q] row-major (statistics).
  const Shape lse_shape = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {c.b * c.h * c.q});
  Literal expected_lse(lse_shape);
  std::vector<double> s(c.kv);
  for (int64_t b0 = 0; b0 < c.b; ++b0)
    for (int64_t b1 = 0; b1 < c.h; ++b1)
      for (int64_t i = 0; i < c.q; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.kv; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < c.d; ++e) acc += At(q, d.q, b0, b1, i, e) * At(kl, d.k, b0, b1, j, e);
          s[j] = (c.causal && j > i + d.causal_offset) ? -INFINITY : acc * d.scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.kv; ++j) sum += (s[j] = std::exp(s[j] - mx));
        expected_lse.SetFromDouble((b0 * c.h + b1) * c.q + i, mx + std::log(sum));
        for (int64_t e = 0; e < c.d; ++e) {
          double o = 0;
          for (int64_t j = 0; j < c.kv; ++j) o += s[j] / sum * At(vl, d.v, b0, b1, j, e);
          expected.SetFromDouble(d.out.offset + b0 * d.out.batch[0] + b1 * d.out.batch[1] + i * d.out.row + e, o);
        }
      }
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory qd, Upload(q));
  runtime::DeviceMemory kd = qd, vd = qd;
  if (!c.fused) {
    KILN_ASSERT_OK_AND_ASSIGN(kd, Upload(k));
    KILN_ASSERT_OK_AND_ASSIGN(vd, Upload(v));
  }
  for (const AttentionKernelConfig& config : AttentionConfigs(d)) {
    SCOPED_TRACE(config.ToString());
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory od, Alloc(out_shape.byte_size()));  // NaN-poisoned
    KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AttentionPlan> plan, AttentionPlan::Create(d, *device_, config));
    KILN_ASSERT_OK(plan->Run(qd, kd, vd, od, *stream_));
    KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(od, out_shape));
    EXPECT_TRUE(testing::Matches(actual, expected, DefaultTolerance(c.type))) << d.ToString();
  }
  // cuDNN's SDPA on the same problem, where this build has it: required for the plain causal
  // and bshd cases (what the bench workloads are), reported where cuDNN declines.
  if (!CudnnAttentionBuilt()) return;
  StatusOr<std::unique_ptr<CudnnAttentionPlan>> cudnn = CudnnAttentionPlan::Create(d, *device_);
  if (c.name == "d64_causal" || c.name == "bshd_causal") {
    ASSERT_TRUE(cudnn.ok()) << cudnn.status().ToString();
  }
  if (!cudnn.ok()) {
    std::cout << "cudnn sdpa declines " << c.name << ": " << cudnn.status().message() << "\n";
    return;
  }
  SCOPED_TRACE("cudnn_sdpa");
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory od, Alloc(out_shape.byte_size()));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws, Alloc((*cudnn)->workspace_bytes()));
  KILN_ASSERT_OK((*cudnn)->Run(qd, kd, vd, od, ws, *stream_));
  KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(od, out_shape));
  EXPECT_TRUE(testing::Matches(actual, expected, DefaultTolerance(c.type))) << d.ToString();
  // With statistics (Note [Attention statistics]): the same output and each row's lse.
  AttentionDesc ds = d;
  ds.stats = true;
  ds.lse.row = 1;
  ds.lse.batch[1] = c.q;
  ds.lse.batch[0] = c.h * c.q;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<CudnnAttentionPlan> with_stats, CudnnAttentionPlan::Create(ds, *device_));
  SCOPED_TRACE("cudnn_sdpa with statistics");
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory od2, Alloc(out_shape.byte_size()));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory lse, Alloc(lse_shape.byte_size()));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws2, Alloc(with_stats->workspace_bytes()));
  EXPECT_FALSE(with_stats->Run(qd, kd, vd, od2, ws2, *stream_).ok()) << "no statistics buffer must be an error";
  KILN_ASSERT_OK(with_stats->Run(qd, kd, vd, od2, ws2, *stream_, lse));
  KILN_ASSERT_OK_AND_ASSIGN(Literal actual2, Download(od2, out_shape));
  EXPECT_TRUE(testing::Matches(actual2, expected, DefaultTolerance(c.type))) << ds.ToString();
  KILN_ASSERT_OK_AND_ASSIGN(Literal actual_lse, Download(lse, lse_shape));
  // The scores are f32 products of 16-bit inputs: lse to a few f32 ulps of their magnitude.
  Tolerance lt;
  lt.rtol = 1e-4;
  lt.atol = 1e-4;
  EXPECT_TRUE(testing::Matches(actual_lse, expected_lse, lt)) << ds.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionTest,
    ::testing::Values(Case{"d64"}, Case{"d64_causal", 2, 3, 77, 77, 64, true},
                      Case{"d128_causal", 1, 2, 130, 130, 128, true}, Case{"d128", 1, 2, 65, 200, 128},
                      Case{"q1", 2, 2, 1, 300, 64, true}, Case{"q7_kv7", 1, 3, 7, 7, 64, true},
                      Case{"decoder_q16_kv1000", 1, 2, 16, 1000, 64, true},
                      Case{"s1000_causal", 1, 1, 1000, 1000, 64, true},
                      Case{"bshd_causal", 2, 4, 96, 96, 64, true, true},
                      Case{"fused_qkv", 2, 2, 50, 50, 128, true, false, true},
                      Case{"f16_causal", 2, 2, 90, 90, 64, true, false, false, PrimitiveType::kF16},
                      Case{"large_scale", 1, 2, 64, 64, 64, false, false, false, PrimitiveType::kBF16, 4.0}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace kiln::cuda::libs
