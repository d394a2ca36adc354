// AttentionRewriter: attention as JAX writes it in plain HLO, found and replaced by one
// __kiln$attention custom call that a backend runs as fused (flash) attention.
//
// Note [Attention matching]
// JAX lowers softmax(q·kᵀ·scale + mask)·v -- jnp.einsum + jax.nn.softmax, flax's attention,
// jax.nn.dot_product_attention(implementation="xla") -- to
//     s  = dot(q, k)                 one contracting dim (the head dim), batch dims b...
//     x  = chain of: convert, multiply/divide by a scalar constant, select(mask, ., fill),
//          and reshapes/transposes that move only size-1 dimensions
//     m  = reduce-max(x) over the key dim [maximum(m, -inf)]
//     e  = exp(x - broadcast(m));  l = reduce-add(e [converted]) over the key dim
//     p  = e / broadcast(l [converted])  [converted]
//     o  = dot(p, v) (either operand order), contracting the key dim
// The matcher walks that graph from each dot, tracking which dimension of every value is which
// (batch i, query row, key, head, or size 1), and gives up on anything else -- a softmax over
// another axis, a mask that depends on the batch, an intermediate used outside the pattern --
// so the custom call always computes what the HLO computes:
//   * the mask is read symbolically: integer compares of iotas (jnp.tril, is_causal) and
//     conjunctions of them, or a constant pred array, must be "keep key j for row i iff
//     j <= i + c" for a c >= 0 (causal, c = kv_len - q_len for bottom-right alignment), or
//     always true; the fill must be -inf or at most -1e4 after the scaling that follows it
//     (exp of it is then 0 next to any unmasked score);
//   * scalar constant multiplies of q or k (flax scales q) are folded into the scale;
//   * grouped- and multi-query attention (jax.nn.dot_product_attention with fewer k/v heads:
//     q [b, t, kv_heads, group, d] against k [b, s, kv_heads, d]) has two query dims; the group
//     becomes a batch dim that k and v do not have (their stride 0);
//   * q, k and v are strided views of the buffers they are read from: transposes, reshapes,
//     bitcasts, copies and unit-stride slices above the dots are folded into offsets and strides
//     (the heads of [b, s, h, d], the q/k/v thirds of a fused qkv projection), as are the
//     transposes and reshapes after the output dot.
// Rounding differs within the dtype's tolerance: the fused kernel keeps scores in f32 where the
// HLO may round them to bf16 first.
//
// The call: operands are the view roots (each once), the result is the output view's root,
// called_computations={the matched subgraph, outlined with exactly those parameters}. Its value
// IS that computation's value (the evaluator runs it; a backend without a fused kernel may
// inline it back); backend_config holds AttentionConfig (JSON). Backends decide what they run
// fused through AttentionRewriterOptions::supported; only matches it accepts are rewritten.
//
// Note [Attention backward]
// jax.grad through attention reads the forward's probabilities p (and e and l) again:
//     dV = dot(p, dO) contracting the query rows        dP = dot(dO, v) contracting the head
//     Y  = the softmax's gradient of dP, in whatever form autodiff wrote it (jax.nn.softmax:
//          e * (dP / l − rowsum(dP * e / l²)); a custom jvp: p * (dP − rowsum(p * dP)))
//     dS = chain of: convert, multiply by a scalar constant, select(mask, Y, 0), unit views
//     dQ = dot(dS, k) contracting the keys;  dK = dot(dS, q) contracting the query rows
// MatchBackward first matches the forward at the second dot with its intermediates allowed
// other users, then finds the three gradient dots by what they read (p, and views of q, k, v
// and one dO with the forward's strides). Y is checked by value, not by shape: the subgraph
// between it and its leaves (dP, p, e; reduce-adds over the key dim, elementwise arithmetic,
// broadcasts and unit views in between, every dim tracked as in the forward) is evaluated on
// random rows of synthetic data (e > 0 with some zeros, l = sum e, p = e / l) and must equal
// p ∘ (dP − rowsum(p ∘ dP)) to 1e-9 on every trial; any other op, leaf or dim mix refuses.
// The call __kiln$attention_backward(q, k, v, dO) -> (dQ, dK, dV) (or one packed array, Note
// [Packed gradients]) outlines the gradient dots
// with the forward recomputed inside (the forward's own nodes stay for the forward call, which
// the rewriter then matches as usual since p has no other users left).
//
// Note [Attention statistics]
// cuDNN's backward (and any flash backward) needs the forward's output O and each row's
// log-sum-exp; without them it runs the forward again. When the module holds a forward call and
// a backward call of the same problem on the same q, k, v (a training step), the forward also
// returns lse (its outlined computation computes it from the scores in f32: max + log of the
// sum of exp(x - max)) and the backward takes (q, k, v, dO, O, lse); the backward's outlined
// computation gets two parameters it ignores, so its value is unchanged by construction.
//
// Note [Packed gradients]
// A transformer splits q, k and v off one fused projection (jnp.split(x @ wqkv, 3)), so autodiff
// joins their gradients again: concatenate(reshape(transpose(dQ)), ..dK.., ..dV..) along the
// feature dim, which the projection's two gradient dots read. When each gradient dot reaches
// one concatenate through pure views (copy, reshape, bitcast, transpose) nothing else reads,
// and the concatenate's operands are exactly those three, the call computes the concatenate
// itself: its result is that one array, the dq/dk/dv views (result leaf 0) are where each
// gradient's elements land in its row-major buffer (each view inverted back up the chain), and
// the outlined computation ends in the concatenate. The backend then writes the gradients in
// place instead of a copy kernel moving them (50 MiB in the suite's training step).//
// Note [Attention bias and masks]
// Beside the symbolic causal mask, the scores may carry an additive bias and a data mask, as
// jax.nn.dot_product_attention(bias=, mask=, key_value_seq_lengths=) and hand-written
// `jnp.where(mask, s + bias, min)` write them:
//     x = select(M, scale_in * s + B, fill) * scale_out       (either part optional)
// B is read through broadcasts, unit reshapes, transposes and widening converts of one array
// (its root, an operand of the call) whose dims are batch dims, the query row and the key: the
// `bias` view (element = the key's stride, stride 0 along dims it lacks); the softmax sees
// scale * s + bias_scale * B with bias_scale = scale_out. M is the conjunction of a symbolic part
// (causal, iota compares) and at most one data part, a pred array read the same way (the `mask`
// view, nonzero = kept). Its root is what the symbolic reading cannot see through -- a
// parameter, or `iota < broadcast(lengths)` -- so it is computed outside the call. A dropped
// score is exactly mask_fill (= fill * scale_out) for the softmax, causal drops included: a row
// whose every key is dropped therefore averages all of v with equal weights (a finite fill) or
// is NaN (-inf), as the HLO computes it, and kernels must not skip causal tiles for such rows
// (with a data mask they process every tile). A bias after the select (added to the fill), two
// selects or a bias that is itself masked refuse. The backward matcher refuses both for now.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/pass.h"

namespace kiln {

inline constexpr std::string_view kAttentionCallTarget = "__kiln$attention";
inline constexpr std::string_view kAttentionBackwardCallTarget = "__kiln$attention_backward";

enum class AttentionMask : uint8_t { kNone, kCausal };

// Where element [b_0, ..., b_{n-1}, row, e] of an operand (or the result) lives, in elements from
// the start of operand `operand`'s buffer (row-major): offset + sum b_i*batch[i] + row*row +
// e*element.
struct AttentionView {
  int64_t operand = 0;  // index into the call's operands (unused for the result)
  int64_t offset = 0;
  std::vector<int64_t> batch;
  int64_t row = 0;
  int64_t element = 1;
  bool operator==(const AttentionView&) const = default;
};

struct AttentionConfig {
  std::vector<int64_t> batch;  // sizes of the batch dimensions (size-1 ones left out)
  int64_t q_len = 0, kv_len = 0, head_dim = 0, v_head_dim = 0;
  double scale = 1.0;
  AttentionMask mask = AttentionMask::kNone;
  int64_t causal_offset = 0;  // kCausal: key j is kept for query i iff j <= i + causal_offset
  PrimitiveType input_type = PrimitiveType::kInvalid;    // q, k (and v)
  PrimitiveType score_type = PrimitiveType::kInvalid;    // q·kᵀ as the HLO computes it
  PrimitiveType softmax_type = PrimitiveType::kInvalid;  // the softmax's arithmetic
  PrimitiveType probs_type = PrimitiveType::kInvalid;    // p as the second dot reads it
  PrimitiveType output_type = PrimitiveType::kInvalid;
  AttentionView q, k, v, out;

  // Backward calls (kAttentionBackwardCallTarget) only; see Note [Attention backward]. With
  // P = softmax(scale * q·kᵀ masked), dP = dO·vᵀ and dS = P ∘ (dP − rowsum(P ∘ dP)):
  //   dQ = dq_scale * dS·k,  dK = dk_scale * dSᵀ·q,  dV = Pᵀ·dO
  // (dq_scale and dk_scale are `scale` when the HLO differentiates q·kᵀ·scale; a q scaled
  // before the product leaves its factor outside). `out` is unused.
  bool backward = false;
  AttentionView d_out;       // dO, an operand view [batch, row, v_head]
  AttentionView dq, dk, dv;  // the results; `operand` is the index in the result tuple (0 for
                             // all three when the result is one packed array)
  double dq_scale = 1.0, dk_scale = 1.0;
  // Note [Attention statistics]. A forward with `stats` returns (out, lse): `out` is result leaf
  // 0 and lse[batch..., row] = log sum_j exp(s_j) over the row's kept scaled scores (f32, at
  // the `lse` view of leaf 1; `element` unused). A backward with `stats` also takes its
  // forward's output and lse as operands (`o`, `lse`: operand views); its value does not
  // depend on them (the outlined computation ignores them), a backend may use them instead of
  // running the forward again.
  bool stats = false;
  AttentionView lse, o;
  PrimitiveType grad_type = PrimitiveType::kInvalid;  // dO
  PrimitiveType dq_type = PrimitiveType::kInvalid, dk_type = PrimitiveType::kInvalid,
                dv_type = PrimitiveType::kInvalid;
  // Note [Attention bias and masks]. `bias`: an operand view [batch..., row, key] (`element` is
  // the key's stride) added as bias_scale * bias to the scaled scores; `mask`: an operand view
  // of a pred array, key j kept for row i iff it is nonzero (and, with kCausal, j <= i +
  // causal_offset); a dropped score is mask_fill exactly.
  bool has_bias = false;
  AttentionView bias;
  PrimitiveType bias_type = PrimitiveType::kInvalid;
  double bias_scale = 1.0;
  bool has_mask = false;
  AttentionView mask_view;
  double mask_fill = -1e30;

  std::string ToJson() const;
  static StatusOr<AttentionConfig> FromJson(std::string_view text);
  // One line for --stats: "bf16 [4x16] q 4096 kv 4096 d 64 causal(0) scale 0.125 f32 softmax".
  std::string ToString() const;
  bool operator==(const AttentionConfig&) const = default;
};

bool IsAttentionCall(const HloInstruction& instr);
bool IsAttentionBackwardCall(const HloInstruction& instr);
// The config of an attention call (InvalidArgument for anything else or a malformed config).
StatusOr<AttentionConfig> AttentionConfigOf(const HloInstruction& call);
// What `config` means, computed directly (double precision, no rounding in between) on the
// call's operands into a value of `result` (elements the output view does not reach are NaN):
// the reference the matcher's configs are checked against, and a slow host fallback.
StatusOr<Literal> EvaluateAttention(const AttentionConfig& config, std::span<const Literal* const> operands,
                                    const Shape& result);
// What a backward config means (dQ, dK, dV as above, double precision) on the call's operands,
// into a tuple of `result`'s element shapes, or into one array when `result` is not a tuple
// (elements the views do not reach are NaN).
StatusOr<Literal> EvaluateAttentionBackward(const AttentionConfig& config, std::span<const Literal* const> operands,
                                            const Shape& result);
// The computations outlined into attention calls (passes that rewrite for a backend skip them).
std::unordered_set<const HloComputation*> AttentionBodies(const HloModule& module);

struct AttentionRewriterOptions {
  // Whether the backend runs `config` fused; empty: every match is rewritten.
  std::function<bool(const AttentionConfig&)> supported;
  // Whether backward graphs are matched too (Note [Attention backward]), and which of those
  // configs the backend runs fused (empty: all).
  bool backward = false;
  std::function<bool(const AttentionConfig&)> supported_backward;
};

class AttentionRewriter : public HloPass {
 public:
  explicit AttentionRewriter(AttentionRewriterOptions options = {}) : options_(std::move(options)) {}
  std::string_view name() const override { return "attention-rewriter"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  AttentionRewriterOptions options_;
};

}  // namespace kiln
