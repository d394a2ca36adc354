// The backward of attention on the CPU: the __kiln$attention_backward call (Note [Attention
// backward] in passes/attention_rewriter.h) as FlashAttention-2's backward in two passes over
// tiles, never materializing the [q, kv] probabilities beyond one 64 x 64 tile per task:
//   1. per (batch, 64 query rows): each row's log-sum-exp L and D = dO·O -- from the forward's
//      output and statistics when it hands them over (Note [Attention statistics]), else by
//      running the forward again (online softmax); then per key tile P = exp(scale·s − L) (masked: 0),
//      dP = dO·vᵀ, dS = P ∘ (dP − D), dQ += dS·k;
//   2. per (batch, 64 keys): per query tile the same P and dS from L and D, dV += Pᵀ·dO,
//      dK += dSᵀ·q.
// Each task owns the rows it writes, so no two threads touch one gradient element. The
// products are kiln's single-threaded f32 GEMMs on packed tiles; q, k, v, dO and the gradients
// are read and written through the call's strided views (one packed result or three).
// f32 only (CpuAttentionBackwardSupported, the CPU matcher's predicate).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/expr_internal.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/passes/attention_rewriter.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kTile = 64;  // query rows and keys per tile

class AttentionBackwardKernel : public CpuKernel {
 public:
  AttentionBackwardKernel(AttentionConfig c, CpuKernelOptions options) : c_(std::move(c)), options_(options) {
    for (int64_t b : c_.batch) batches_ *= b;
  }
  std::string name() const override { return StrCat("attention_backward[", c_.ToString(), "]"); }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    for (const AttentionView* v : {&c_.q, &c_.k, &c_.v, &c_.d_out})
      if (v->operand < 0 || v->operand >= static_cast<int64_t>(inputs.size()))
        return InvalidArgument("attention backward kernel: view of operand ", v->operand, " of ", inputs.size());
    for (const AttentionView* v : {&c_.dq, &c_.dk, &c_.dv})
      if (v->operand < 0 || v->operand >= static_cast<int64_t>(outputs.size()))
        return InvalidArgument("attention backward kernel: result ", v->operand, " of ", outputs.size());
    const int64_t Q = c_.q_len, K = c_.kv_len, d = c_.head_dim, dv = c_.v_head_dim;
    In in{inputs[c_.q.operand].as<float>(), inputs[c_.k.operand].as<float>(), inputs[c_.v.operand].as<float>(),
          inputs[c_.d_out.operand].as<float>()};
    float* dq = outputs[c_.dq.operand].as<float>();
    float* dk = outputs[c_.dk.operand].as<float>();
    float* dvo = outputs[c_.dv.operand].as<float>();
    std::vector<float> lse(batches_ * Q), dsum(batches_ * Q);
    // The forward's output and statistics, when it hands them over (Note [Attention statistics]).
    const float* fo = c_.stats ? inputs[c_.o.operand].as<float>() : nullptr;
    const float* fl = c_.stats ? inputs[c_.lse.operand].as<float>() : nullptr;
    const int64_t q_blocks = (Q + kTile - 1) / kTile, k_blocks = (K + kTile - 1) / kTile;
    auto parallel = [&](int64_t tasks, const std::function<void(int64_t, int64_t)>& f) {
      if (ctx.pool != nullptr && tasks > 1) ctx.pool->ParallelFor(tasks, 1, f);
      else f(0, tasks);
    };
    // Pass 1: L, D and dQ per query block.
    parallel(batches_ * q_blocks, [&](int64_t begin, int64_t end) {
      Tiles t(d, dv);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / q_blocks, r0 = (q_blocks - 1 - task % q_blocks) * kTile;
        const int64_t rows = std::min(kTile, Q - r0);
        const std::vector<int64_t> bi = BatchIndex(b);
        LoadRows(in.q, c_.q, bi, r0, rows, d, t.q);
        LoadRows(in.g, c_.d_out, bi, r0, rows, dv, t.g);
        const int64_t kv_end = KeyEnd(r0 + rows - 1);
        if (fo != nullptr) {  // L and D from the forward's own results
          const int64_t ob = Base(c_.o, bi), lb = Base(c_.lse, bi);
          for (int64_t i = 0; i < rows; ++i) {
            float dd = 0;
            for (int64_t e = 0; e < dv; ++e) dd += t.g[i * dv + e] * fo[ob + (r0 + i) * c_.o.row + e * c_.o.element];
            lse[b * Q + r0 + i] = fl[lb + (r0 + i) * c_.lse.row];
            dsum[b * Q + r0 + i] = dd;
          }
        } else {
          // The forward: running max and sum, the output for D.
          std::vector<float> mx(rows, -std::numeric_limits<float>::infinity()), sum(rows, 0.f), o(rows * dv, 0.f);
          for (int64_t j0 = 0; j0 < kv_end; j0 += kTile) {
            const int64_t cols = std::min(kTile, kv_end - j0);
            LoadRows(in.k, c_.k, bi, j0, cols, d, t.k);
            LoadRows(in.v, c_.v, bi, j0, cols, dv, t.v);
            Scores(t, rows, cols, d, ctx);
            for (int64_t i = 0; i < rows; ++i) {
              float* row = t.s.data() + i * cols;
              const int64_t keep = Kept(r0 + i, j0, cols);
              float m = mx[i];
              for (int64_t j = 0; j < keep; ++j) m = std::max(m, row[j] * scale());
              const float m_use = std::isinf(m) ? 0.f : m;
              const float alpha = std::exp(mx[i] - m_use);
              float l = 0;
              for (int64_t j = 0; j < cols; ++j) {
                row[j] = j < keep ? std::exp(row[j] * scale() - m_use) : 0.f;
                l += row[j];
              }
              mx[i] = m;
              sum[i] = sum[i] * alpha + l;
              for (int64_t e = 0; e < dv; ++e) o[i * dv + e] *= alpha;
            }
            Gemm(rows, dv, cols, false, false, true, t.s.data(), t.v.data(), o.data(), ctx);
          }
          for (int64_t i = 0; i < rows; ++i) {
            const float inv = sum[i] > 0 ? 1.f / sum[i] : 0.f;
            float dd = 0;
            for (int64_t e = 0; e < dv; ++e) dd += t.g[i * dv + e] * o[i * dv + e] * inv;
            lse[b * Q + r0 + i] = sum[i] > 0 ? mx[i] + std::log(sum[i]) : std::numeric_limits<float>::infinity();
            dsum[b * Q + r0 + i] = dd;
          }
        }
        // dQ = dq_scale · Σ_j dS_ij k_j.
        std::fill(t.acc.begin(), t.acc.begin() + rows * d, 0.f);
        for (int64_t j0 = 0; j0 < kv_end; j0 += kTile) {
          const int64_t cols = std::min(kTile, kv_end - j0);
          LoadRows(in.k, c_.k, bi, j0, cols, d, t.k);
          LoadRows(in.v, c_.v, bi, j0, cols, dv, t.v);
          Probabilities(t, b, r0, rows, j0, cols, d, dv, lse, dsum, ctx);
          Gemm(rows, d, cols, false, false, true, t.ds.data(), t.k.data(), t.acc.data(), ctx);
        }
        StoreRows(dq, c_.dq, bi, r0, rows, d, t.acc, c_.dq_scale);
      }
    });
    // Pass 2: dK and dV per key block.
    parallel(batches_ * k_blocks, [&](int64_t begin, int64_t end) {
      Tiles t(d, dv);
      std::vector<float> dk_acc(kTile * d), dv_acc(kTile * dv);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / k_blocks, j0 = (task % k_blocks) * kTile;
        const int64_t cols = std::min(kTile, K - j0);
        const std::vector<int64_t> bi = BatchIndex(b);
        LoadRows(in.k, c_.k, bi, j0, cols, d, t.k);
        LoadRows(in.v, c_.v, bi, j0, cols, dv, t.v);
        std::fill(dk_acc.begin(), dk_acc.end(), 0.f);
        std::fill(dv_acc.begin(), dv_acc.end(), 0.f);
        // The first query row that keeps key j0 (causal: j0 <= i + offset).
        int64_t i_begin = 0;
        if (c_.mask == AttentionMask::kCausal) i_begin = std::clamp<int64_t>(j0 - c_.causal_offset, 0, Q);
        for (int64_t r0 = i_begin / kTile * kTile; r0 < Q; r0 += kTile) {
          const int64_t rows = std::min(kTile, Q - r0);
          LoadRows(in.q, c_.q, bi, r0, rows, d, t.q);
          LoadRows(in.g, c_.d_out, bi, r0, rows, dv, t.g);
          Probabilities(t, b, r0, rows, j0, cols, d, dv, lse, dsum, ctx);
          // dV += Pᵀ·dO, dK += dSᵀ·q.
          Gemm(cols, dv, rows, true, false, true, t.s.data(), t.g.data(), dv_acc.data(), ctx);
          Gemm(cols, d, rows, true, false, true, t.ds.data(), t.q.data(), dk_acc.data(), ctx);
        }
        StoreRows(dk, c_.dk, bi, j0, cols, d, dk_acc, c_.dk_scale);
        StoreRows(dvo, c_.dv, bi, j0, cols, dv, dv_acc, 1.0);
      }
    });
    return OkStatus();
  }

 private:
  struct In {
    const float *q, *k, *v, *g;
  };
  // One thread's tiles: q and dO rows, k and v keys, the scores/probabilities, dP/dS, and an
  // accumulator.
  struct Tiles {
    Tiles(int64_t d, int64_t dv)
        : q(kTile * d), g(kTile * dv), k(kTile * d), v(kTile * dv), s(kTile * kTile), dp(kTile * kTile),
          ds(kTile * kTile), acc(kTile * d) {}
    std::vector<float> q, g, k, v, s, dp, ds, acc;
  };

  float scale() const { return static_cast<float>(c_.scale); }

  std::vector<int64_t> BatchIndex(int64_t b) const {
    std::vector<int64_t> bi(c_.batch.size());
    for (int64_t i = static_cast<int64_t>(c_.batch.size()) - 1; i >= 0; --i) {
      bi[i] = b % c_.batch[i];
      b /= c_.batch[i];
    }
    return bi;
  }
  static int64_t Base(const AttentionView& v, const std::vector<int64_t>& bi) {
    int64_t at = v.offset;
    for (size_t i = 0; i < bi.size(); ++i) at += bi[i] * v.batch[i];
    return at;
  }
  static void LoadRows(const float* src, const AttentionView& v, const std::vector<int64_t>& bi, int64_t r0,
                       int64_t rows, int64_t width, std::vector<float>& dst) {
    const int64_t base = Base(v, bi);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t e = 0; e < width; ++e) dst[i * width + e] = src[base + (r0 + i) * v.row + e * v.element];
  }
  static void StoreRows(float* dst, const AttentionView& v, const std::vector<int64_t>& bi, int64_t r0, int64_t rows,
                        int64_t width, const std::vector<float>& src, double scale) {
    const int64_t base = Base(v, bi);
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t e = 0; e < width; ++e) dst[base + (r0 + i) * v.row + e * v.element] = src[i * width + e] * s;
  }
  // One past the last key row `i` keeps.
  int64_t KeyEnd(int64_t i) const {
    if (c_.mask != AttentionMask::kCausal) return c_.kv_len;
    return std::clamp<int64_t>(i + c_.causal_offset + 1, 0, c_.kv_len);
  }
  // Keys of the tile at j0 (cols of them) that row i keeps: a prefix.
  int64_t Kept(int64_t i, int64_t j0, int64_t cols) const { return std::clamp<int64_t>(KeyEnd(i) - j0, 0, cols); }

  void Gemm(int64_t m, int64_t n, int64_t k, bool at, bool bt, bool accumulate, const float* a, const float* b,
            float* c, const KernelContext& ctx) const {
    internal::GemmShape g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a_transposed = at;
    g.b_transposed = bt;
    g.accumulate = accumulate;
    internal::Gemm<float>(g, a, b, c, ctx, /*threads=*/false, options_);
  }
  // t.s = q·kᵀ (unscaled).
  void Scores(Tiles& t, int64_t rows, int64_t cols, int64_t d, const KernelContext& ctx) const {
    Gemm(rows, cols, d, false, true, false, t.q.data(), t.k.data(), t.s.data(), ctx);
  }
  // t.s = P (masked: 0), t.ds = P ∘ (dO·vᵀ − D) for the tile (rows at r0, keys at j0).
  void Probabilities(Tiles& t, int64_t b, int64_t r0, int64_t rows, int64_t j0, int64_t cols, int64_t d, int64_t dv,
                     const std::vector<float>& lse, const std::vector<float>& dsum, const KernelContext& ctx) const {
    Scores(t, rows, cols, d, ctx);
    Gemm(rows, cols, dv, false, true, false, t.g.data(), t.v.data(), t.dp.data(), ctx);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t keep = Kept(r0 + i, j0, cols);
      const float L = lse[b * c_.q_len + r0 + i], D = dsum[b * c_.q_len + r0 + i];
      float* p = t.s.data() + i * cols;
      const float* dp = t.dp.data() + i * cols;
      float* ds = t.ds.data() + i * cols;
      for (int64_t j = 0; j < cols; ++j) {
        p[j] = j < keep ? std::exp(p[j] * scale() - L) : 0.f;
        ds[j] = p[j] * (dp[j] - D);
      }
    }
  }

  AttentionConfig c_;
  CpuKernelOptions options_;
  int64_t batches_ = 1;
};

}  // namespace

namespace internal {

bool CpuAttentionBackwardSupported(const AttentionConfig& c) {
  AttentionConfig forward = c;
  forward.backward = false;
  forward.stats = false;
  if (!c.backward || c.has_bias || c.has_mask || !CpuAttentionSupported(forward)) return false;
  for (PrimitiveType t : {c.grad_type, c.dq_type, c.dk_type, c.dv_type})
    if (t != PrimitiveType::kF32) return false;
  // k and v are per batch index (the backward matcher does not take grouped heads).
  return true;
}

StatusOr<std::unique_ptr<CpuKernel>> CreateAttentionBackwardKernel(const HloInstruction& instr,
                                                                   const CpuKernelOptions& options) {
  KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfigOf(instr));
  if (!CpuAttentionBackwardSupported(c))
    return Unimplemented("cpu attention backward kernel: ", c.ToString(), " (f32 only)");
  return std::unique_ptr<CpuKernel>(new AttentionBackwardKernel(std::move(c), options));
}

}  // namespace internal
}  // namespace kiln::cpu
