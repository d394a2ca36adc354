// Fused attention on the CPU: the __kiln$attention call (passes/attention_rewriter.h) as a
// flash-attention loop -- per (batch, 64 query rows) task, the rows' running max, sum and
// output accumulator stay in a small buffer while k/v tiles of 128 keys stream past; each tile
// is two small GEMMs (s = q·kᵀ, acc += p·v) on kiln's single-threaded f32 kernels, between them
// the online softmax. Keys past the causal diagonal are never multiplied. The [q, kv] scores
// are never materialized beyond one 64 x 128 tile per task.
//
// f32 only (the CPU matcher's predicate, cpu/compiler.cc); q, k, v and the output are read and
// written through the call's strided views (packed into contiguous tiles first). Paired with a
// backward (Note [Attention statistics]) it also writes each row's log-sum-exp. An f32 additive
// bias and a data mask (Note [Attention bias and masks]) are read per score through their views;
// with a data mask a dropped score is the fill exactly and every key tile is processed (a row
// whose keys are all dropped averages all of v, or is NaN for a -inf fill, as the HLO says).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/expr_internal.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/passes/attention_rewriter.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kRows = 64;   // query rows per task
constexpr int64_t kKeys = 128;  // keys per tile

class AttentionKernel : public CpuKernel {
 public:
  AttentionKernel(AttentionConfig c, CpuKernelOptions options) : c_(std::move(c)), options_(options) {
    batches_ = 1;
    for (int64_t b : c_.batch) batches_ *= b;
  }
  std::string name() const override { return StrCat("attention[", c_.ToString(), "]"); }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    std::vector<const AttentionView*> views = {&c_.q, &c_.k, &c_.v};
    if (c_.has_bias) views.push_back(&c_.bias);
    if (c_.has_mask) views.push_back(&c_.mask_view);
    for (const AttentionView* v : views)
      if (v->operand < 0 || v->operand >= static_cast<int64_t>(inputs.size()))
        return InvalidArgument("attention kernel: view of operand ", v->operand, " of ", inputs.size());
    // With statistics (Note [Attention statistics]): (out, lse).
    if (outputs.size() != (c_.stats ? 2u : 1u))
      return InvalidArgument("attention kernel: ", c_.stats ? 2 : 1, " outputs, got ", outputs.size());
    float* lse = c_.stats ? outputs[1].as<float>() : nullptr;
    const float* q = inputs[c_.q.operand].as<float>();
    const float* k = inputs[c_.k.operand].as<float>();
    const float* v = inputs[c_.v.operand].as<float>();
    float* o = outputs[0].as<float>();
    const float* bias = c_.has_bias ? inputs[c_.bias.operand].as<float>() : nullptr;
    const uint8_t* keep_mask = c_.has_mask ? inputs[c_.mask_view.operand].as<uint8_t>() : nullptr;
    const bool extras = c_.has_bias || c_.has_mask;
    const bool causal = c_.mask == AttentionMask::kCausal;
    const float bias_scale = static_cast<float>(c_.bias_scale), fill = static_cast<float>(c_.mask_fill);
    const int64_t q_blocks = (c_.q_len + kRows - 1) / kRows;
    const int64_t tasks = batches_ * q_blocks;
    auto body = [&](int64_t begin, int64_t end) {
      const int64_t d = c_.head_dim, dv = c_.v_head_dim;
      std::vector<float> qb(kRows * d), kb(kKeys * d), vb(kKeys * dv), s(kRows * kKeys), acc(kRows * dv);
      std::vector<float> mx(kRows), sum(kRows), shifted(kKeys);
      std::vector<int64_t> bi(c_.batch.size());
      for (int64_t t = begin; t < end; ++t) {
        // The heaviest (last) query blocks first under a causal mask.
        const int64_t qblk = q_blocks - 1 - t % q_blocks;
        int64_t rest = t / q_blocks;
        for (int64_t i = static_cast<int64_t>(c_.batch.size()) - 1; i >= 0; --i) {
          bi[i] = rest % c_.batch[i];
          rest /= c_.batch[i];
        }
        auto base = [&](const AttentionView& view) {
          int64_t at = view.offset;
          for (size_t i = 0; i < bi.size(); ++i) at += bi[i] * view.batch[i];
          return at;
        };
        const int64_t qo = base(c_.q), ko = base(c_.k), vo = base(c_.v), oo = base(c_.out);
        const int64_t bo = c_.has_bias ? base(c_.bias) : 0, mo = c_.has_mask ? base(c_.mask_view) : 0;
        const int64_t r0 = qblk * kRows, rows = std::min(kRows, c_.q_len - r0);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t e = 0; e < d; ++e) qb[i * d + e] = q[qo + (r0 + i) * c_.q.row + e * c_.q.element];
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<float>::infinity());
        std::fill(sum.begin(), sum.end(), 0.f);
        std::fill(acc.begin(), acc.end(), 0.f);
        int64_t kv_end = c_.kv_len;
        if (causal && !c_.has_mask) kv_end = std::clamp<int64_t>(r0 + rows + c_.causal_offset, 0, c_.kv_len);
        const float scale = static_cast<float>(c_.scale);
        for (int64_t j0 = 0; j0 < kv_end; j0 += kKeys) {
          const int64_t cols = std::min(kKeys, kv_end - j0);
          for (int64_t j = 0; j < cols; ++j) {
            for (int64_t e = 0; e < d; ++e) kb[j * d + e] = k[ko + (j0 + j) * c_.k.row + e * c_.k.element];
            for (int64_t e = 0; e < dv; ++e) vb[j * dv + e] = v[vo + (j0 + j) * c_.v.row + e * c_.v.element];
          }
          internal::GemmShape g1;
          g1.m = rows;
          g1.n = cols;
          g1.k = d;
          g1.b_transposed = true;
          internal::Gemm<float>(g1, qb.data(), kb.data(), s.data(), ctx, /*threads=*/false, options_);
          const bool diagonal = causal && j0 + cols - 1 > r0 + c_.causal_offset;
          for (int64_t i = 0; i < rows; ++i) {
            float* row = s.data() + i * cols;
            int64_t keep = diagonal ? std::clamp<int64_t>(r0 + i + c_.causal_offset + 1 - j0, 0, cols) : cols;
            float sc = scale;
            if (extras) {
              // The softmax's input itself: scale * s + bias, the fill where dropped.
              const int64_t r = r0 + i;
              for (int64_t j = 0; j < cols; ++j) {
                float x = row[j] * scale;
                if (bias != nullptr) x += bias_scale * bias[bo + r * c_.bias.row + (j0 + j) * c_.bias.element];
                if (keep_mask != nullptr) {
                  const bool kept = (!causal || j < keep) &&
                                    keep_mask[mo + r * c_.mask_view.row + (j0 + j) * c_.mask_view.element] != 0;
                  x = kept ? x : fill;
                }
                row[j] = x;
              }
              if (keep_mask != nullptr) keep = cols;
              sc = 1.f;
            }
            float m = mx[i];
            for (int64_t j = 0; j < keep; ++j) m = std::max(m, row[j] * sc);
            const float m_use = std::isinf(m) && m < 0 ? 0.f : m;
            const float alpha = std::exp(mx[i] - m_use);
            for (int64_t j = 0; j < keep; ++j) shifted[j] = row[j] * sc - m_use;
            internal::VectorExpF32(shifted.data(), row, keep);
            float l = 0;
            for (int64_t j = 0; j < keep; ++j) l += row[j];
            for (int64_t j = keep; j < cols; ++j) row[j] = 0.f;
            mx[i] = m;
            sum[i] = sum[i] * alpha + l;
            float* a = acc.data() + i * dv;
            for (int64_t e = 0; e < dv; ++e) a[e] *= alpha;
          }
          internal::GemmShape g2;
          g2.m = rows;
          g2.n = dv;
          g2.k = cols;
          g2.accumulate = true;
          internal::Gemm<float>(g2, s.data(), vb.data(), acc.data(), ctx, /*threads=*/false, options_);
        }
        for (int64_t i = 0; i < rows; ++i) {
          // No key kept under a data mask with a -inf fill: exp(-inf - -inf) is NaN in the HLO.
          const float inv = sum[i] > 0 ? 1.f / sum[i] : c_.has_mask ? std::numeric_limits<float>::quiet_NaN() : 0.f;
          for (int64_t e = 0; e < dv; ++e) o[oo + (r0 + i) * c_.out.row + e * c_.out.element] = acc[i * dv + e] * inv;
          if (lse != nullptr)
            lse[base(c_.lse) + (r0 + i) * c_.lse.row] =
                sum[i] > 0 ? mx[i] + std::log(sum[i]) : std::numeric_limits<float>::infinity();
        }
      }
    };
    if (ctx.pool != nullptr && tasks > 1) {
      ctx.pool->ParallelFor(tasks, 1, body);
    } else {
      body(0, tasks);
    }
    return OkStatus();
  }

 private:
  AttentionConfig c_;
  CpuKernelOptions options_;
  int64_t batches_ = 1;
};

}  // namespace

namespace internal {

bool CpuAttentionSupported(const AttentionConfig& c) {
  return c.input_type == PrimitiveType::kF32 && c.output_type == PrimitiveType::kF32 && c.q_len > 0 &&
         c.kv_len > 0 && c.head_dim > 0 && c.v_head_dim > 0 && c.scale > 0 &&
         !(c.mask == AttentionMask::kCausal && c.causal_offset < 0) &&
         (!c.has_bias || c.bias_type == PrimitiveType::kF32);
}

StatusOr<std::unique_ptr<CpuKernel>> CreateAttentionKernel(const HloInstruction& instr,
                                                           const CpuKernelOptions& options) {
  KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfigOf(instr));
  if (!CpuAttentionSupported(c)) return Unimplemented("cpu attention kernel: ", c.ToString(), " (f32 only)");
  const Shape& out = c.stats && instr.shape().IsTuple() ? instr.shape().tuple_shapes(0) : instr.shape();
  if (out.element_type() != PrimitiveType::kF32) return Unimplemented("cpu attention kernel: non-f32 result");
  return std::unique_ptr<CpuKernel>(new AttentionKernel(std::move(c), options));
}

}  // namespace internal
}  // namespace kiln::cpu
