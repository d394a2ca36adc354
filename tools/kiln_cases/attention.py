"""attn_*: attention as JAX users write it, for the attention matcher (passes/attention_rewriter.h).

Every form the matcher must recognize (layouts, scales, masks, lengths, head dims, dtypes) and
forms it must refuse (a softmax over the wrong axis, a mask that is not a mask, a bias added to
the fill, probabilities used elsewhere). Additive biases and data masks (padding masks, key
lengths) match (Note [Attention bias and masks]). Head dims are 64 or 128 so the GPU's fused kernel runs them.
"""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import B, F, I, V


def sdpa(q, k, v, mask=None, fill=None, scale=None, layout='bhqd', axis=-1):
  """softmax(scale * q.k^T masked) . v, written with einsum as most JAX code does."""
  d = q.shape[-1]
  scale = 1.0 / (d ** 0.5) if scale is None else scale
  if layout == 'bhqd':
    s = jnp.einsum('bhqd,bhkd->bhqk', q, k)
  else:  # bshd
    s = jnp.einsum('bqhd,bkhd->bhqk', q, k)
  s = s * jnp.asarray(scale, s.dtype)
  if mask is not None:
    s = jnp.where(mask, s, jnp.finfo(s.dtype).min if fill is None else fill)
  p = jax.nn.softmax(s.astype(jnp.float32), axis=axis).astype(q.dtype)
  if layout == 'bhqd':
    return jnp.einsum('bhqk,bhkd->bhqd', p, v)
  return jnp.einsum('bhqk,bkhd->bqhd', p, v)


def causal(nq, nk):
  """Bottom-right aligned causal mask from iotas (query i sees keys j <= i + nk - nq)."""
  i = lax.broadcasted_iota(jnp.int32, (nq, nk), 0)
  j = lax.broadcasted_iota(jnp.int32, (nq, nk), 1)
  return j <= i + (nk - nq)


def tril(n):
  return jnp.tril(jnp.ones((n, n), bool))


def qkv(b, h, s, d, dtype='bf16', layout='bhqd'):
  shape = (b, h, s, d) if layout == 'bhqd' else (b, s, h, d)
  return F(shape, dtype, -1.0, 1.0)


def fused_qkv_attention(qkv_proj, heads=2):
  """A transformer's attention on its fused qkv projection [b, n, 3*dm]: the heads split off by
  reshape/transpose, q, k and v slices of one buffer."""
  b, n, dm3 = qkv_proj.shape
  dm = dm3 // 3
  y = qkv_proj.reshape(b, n, 3, heads, dm // heads).transpose(2, 0, 3, 1, 4)
  o = sdpa(y[0], y[1], y[2], mask=tril(n))
  return o.transpose(0, 2, 1, 3).reshape(b, n, dm)


def flax_style(q, k, v):
  """q scaled before the product, -inf fill, f32 softmax."""
  q = q / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))
  s = jnp.einsum('bhqd,bhkd->bhqk', q, k)
  s = jnp.where(tril(q.shape[2]), s, -jnp.inf)
  p = jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(v.dtype)
  return jnp.einsum('bhqk,bhkd->bhqd', p, v)


def attention_and_probs(q, k, v):
  """The probabilities are an output too: fusing would have to recompute them."""
  s = jnp.einsum('bhqd,bhkd->bhqk', q, k) * jnp.asarray(0.125, q.dtype)
  p = jax.nn.softmax(s.astype(jnp.float32), axis=-1)
  return jnp.einsum('bhqk,bhkd->bhqd', p.astype(q.dtype), v), p


@jax.custom_jvp
def softmax_jvp(x):
  """A softmax with its own jvp, as libraries that predate jax.nn.softmax's write it."""
  e = jnp.exp(x - lax.stop_gradient(x.max(-1, keepdims=True)))
  return e / e.sum(-1, keepdims=True)


@softmax_jvp.defjvp
def _softmax_jvp(primals, tangents):
  y = softmax_jvp(primals[0])
  return y, y * (tangents[0] - jnp.sum(y * tangents[0], -1, keepdims=True))


def custom_jvp_attention(q, k, v, mask):
  s = jnp.einsum('bhqd,bhkd->bhqk', q, k) * jnp.asarray(q.shape[-1] ** -0.5, q.dtype)
  s = jnp.where(mask, s, -1e30)
  return jnp.einsum('bhqk,bhkd->bhqd', softmax_jvp(s), v)


def attention_layer(x, wqkv, wo, heads=2):
  """Projections around causal attention: the gradients of a transformer's attention weights."""
  b, n, dm = x.shape
  y = (x @ wqkv).reshape(b, n, 3, heads, dm // heads).transpose(2, 0, 3, 1, 4)
  o = sdpa(y[0], y[1], y[2], mask=tril(n))
  return o.transpose(0, 2, 1, 3).reshape(b, n, dm) @ wo


def split_qkv_layer(x, wqkv, wo, heads=2):
  """The suite's transformer block's attention (jnp.split of the fused projection): its
  gradients dq, dk and dv meet again in one concatenate, which the backward call writes in
  place (Note [Packed gradients])."""
  b, n, dm = x.shape
  q, k, v = jnp.split(x @ wqkv, 3, axis=-1)
  sh = lambda t: t.reshape(b, n, heads, dm // heads).transpose(0, 2, 1, 3)
  o = sdpa(sh(q), sh(k), sh(v), mask=tril(n))
  return o.transpose(0, 2, 1, 3).reshape(b, n, dm) @ wo


def register(add):
  add('attn_bhqd_causal_bf16', lambda q, k, v: sdpa(q, k, v, tril(128)),
      qkv(1, 2, 128, 64), qkv(1, 2, 128, 64), qkv(1, 2, 128, 64))
  add('attn_bhqd_nomask_bf16', sdpa, qkv(2, 2, 64, 64), qkv(2, 2, 64, 64), qkv(2, 2, 64, 64))
  add('attn_bshd_causal_bf16', lambda q, k, v: sdpa(q, k, v, causal(96, 96), layout='bshd'),
      qkv(1, 2, 96, 64, layout='bshd'), qkv(1, 2, 96, 64, layout='bshd'), qkv(1, 2, 96, 64, layout='bshd'))
  add('attn_dpa_causal_bf16', lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
      qkv(1, 2, 80, 64, layout='bshd'), qkv(1, 2, 80, 64, layout='bshd'), qkv(1, 2, 80, 64, layout='bshd'))
  add('attn_dpa_nomask_bf16', lambda q, k, v: jax.nn.dot_product_attention(q, k, v),
      qkv(2, 2, 48, 64, layout='bshd'), qkv(2, 2, 48, 64, layout='bshd'), qkv(2, 2, 48, 64, layout='bshd'))
  add('attn_bshd_nomask_f16', lambda q, k, v: sdpa(q, k, v, layout='bshd'),
      qkv(2, 2, 48, 64, 'f16', 'bshd'), qkv(2, 2, 48, 64, 'f16', 'bshd'), qkv(2, 2, 48, 64, 'f16', 'bshd'))
  add('attn_flax_scaled_q_bf16', flax_style, qkv(1, 2, 64, 64), qkv(1, 2, 64, 64), qkv(1, 2, 64, 64))
  add('attn_decoder_q16_kv96_bf16', lambda q, k, v: sdpa(q, k, v, causal(16, 96), fill=-1e9),
      qkv(1, 2, 16, 64), qkv(1, 2, 96, 64), qkv(1, 2, 96, 64))
  add('attn_q1_kv100_bf16', sdpa, qkv(2, 2, 1, 64), qkv(2, 2, 100, 64), qkv(2, 2, 100, 64))
  add('attn_s7_causal_bf16', lambda q, k, v: sdpa(q, k, v, tril(7)),
      qkv(1, 3, 7, 64), qkv(1, 3, 7, 64), qkv(1, 3, 7, 64))
  add('attn_s500_causal_bf16', lambda q, k, v: sdpa(q, k, v, tril(500)),
      qkv(1, 1, 500, 64), qkv(1, 1, 500, 64), qkv(1, 1, 500, 64))
  add('attn_d128_causal_bf16', lambda q, k, v: sdpa(q, k, v, tril(72)),
      qkv(1, 2, 72, 128), qkv(1, 2, 72, 128), qkv(1, 2, 72, 128))
  add('attn_fused_qkv_bf16', fused_qkv_attention, F((1, 32, 384), 'bf16', -1, 1))
  add('attn_causal_f32', lambda q, k, v: sdpa(q, k, v, tril(32)),
      qkv(1, 2, 32, 64, 'f32'), qkv(1, 2, 32, 64, 'f32'), qkv(1, 2, 32, 64, 'f32'))
  # Grouped-query and multi-query attention: 4 query heads over 2 (1) k/v heads.
  add('attn_gqa_dpa_causal_bf16', lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
      qkv(1, 4, 64, 64, layout='bshd'), qkv(1, 2, 64, 64, layout='bshd'), qkv(1, 2, 64, 64, layout='bshd'))
  add('attn_mqa_dpa_bf16', lambda q, k, v: jax.nn.dot_product_attention(q, k, v),
      qkv(2, 4, 40, 64, layout='bshd'), qkv(2, 1, 40, 64, layout='bshd'), qkv(2, 1, 40, 64, layout='bshd'))
  # f32 forms the CPU's fused kernel runs: a decoder step's offset mask, bshd heads, grouped heads.
  add('attn_decoder_q8_kv40_f32', lambda q, k, v: sdpa(q, k, v, causal(8, 40), fill=-1e9),
      qkv(1, 2, 8, 32, 'f32'), qkv(1, 2, 40, 32, 'f32'), qkv(1, 2, 40, 32, 'f32'))
  add('attn_bshd_causal_f32', lambda q, k, v: sdpa(q, k, v, causal(70, 70), layout='bshd'),
      qkv(2, 2, 70, 16, 'f32', 'bshd'), qkv(2, 2, 70, 16, 'f32', 'bshd'), qkv(2, 2, 70, 16, 'f32', 'bshd'))
  add('attn_nomask_q70_kv300_f32', sdpa, qkv(1, 2, 70, 16, 'f32'), qkv(1, 2, 300, 16, 'f32'),
      qkv(1, 2, 300, 16, 'f32'))
  add('attn_gqa_causal_f32', lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
      qkv(1, 4, 33, 16, 'f32', 'bshd'), qkv(1, 2, 33, 16, 'f32', 'bshd'), qkv(1, 2, 33, 16, 'f32', 'bshd'))
  # Additive biases and data masks (Note [Attention bias and masks]): jax.nn.dot_product_attention's
  # bias, mask and key lengths; a random data mask (some rows lose every key: they average v);
  # an ALiBi-like bias broadcast over rows; a padding mask with a -inf fill; f32 forms for the
  # CPU's fused kernel over several tiles.
  add('attn_data_mask_bf16', lambda q, k, v, m: sdpa(q, k, v, m),
      qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), B((32, 32), 0.7))
  add('attn_dpa_bias_bf16', lambda q, k, v, b: jax.nn.dot_product_attention(q, k, v, bias=b),
      qkv(1, 2, 40, 64, layout='bshd'), qkv(1, 2, 40, 64, layout='bshd'), qkv(1, 2, 40, 64, layout='bshd'),
      F((1, 2, 40, 40), 'bf16', -2, 2))
  add('attn_dpa_mask_causal_bf16', lambda q, k, v, m: jax.nn.dot_product_attention(q, k, v, mask=m, is_causal=True),
      qkv(2, 2, 48, 64, layout='bshd'), qkv(2, 2, 48, 64, layout='bshd'), qkv(2, 2, 48, 64, layout='bshd'),
      B((2, 1, 48, 48), 0.8))
  add('attn_dpa_kv_lengths_bf16',
      lambda q, k, v, n: jax.nn.dot_product_attention(q, k, v, key_value_seq_lengths=n),
      qkv(2, 2, 40, 64, layout='bshd'), qkv(2, 2, 40, 64, layout='bshd'), qkv(2, 2, 40, 64, layout='bshd'),
      V([17, 40], 's32'))
  add('attn_dpa_bias_mask_f32', lambda q, k, v, b, m: jax.nn.dot_product_attention(q, k, v, bias=b, mask=m),
      qkv(1, 2, 100, 32, 'f32', 'bshd'), qkv(1, 2, 100, 32, 'f32', 'bshd'), qkv(1, 2, 100, 32, 'f32', 'bshd'),
      F((1, 1, 100, 100), 'f32', -2, 2), B((1, 1, 100, 100), 0.6))
  add('attn_alibi_padding_f32',
      lambda q, k, v, slopes, keep: jax.nn.softmax(
          jnp.where(keep[:, None, None, :],
                    jnp.einsum('bhqd,bhkd->bhqk', q, k) * 0.25 + slopes[None, :, None, None] * jnp.arange(200.0),
                    -jnp.inf), axis=-1) @ v,
      qkv(2, 2, 70, 16, 'f32'), qkv(2, 2, 200, 16, 'f32'), qkv(2, 2, 200, 16, 'f32'), F((2,), 'f32', -0.1, 0.0),
      V([[1] * 120 + [0] * 80, [1] * 3 + [0] * 197], 'pred'))
  add('attn_data_mask_causal_f32', lambda q, k, v, m: sdpa(q, k, v, jnp.logical_and(m, tril(130))),
      qkv(1, 2, 130, 16, 'f32'), qkv(1, 2, 130, 16, 'f32'), qkv(1, 2, 130, 16, 'f32'), B((1, 1, 130, 130), 0.3))
  # Rows 0-3 lose every key (a finite fill: they average all of v, causal keys included).
  add('attn_mask_empty_rows_causal_f32', lambda q, k, v, m: sdpa(q, k, v, jnp.logical_and(m, causal(40, 150))),
      qkv(1, 2, 40, 16, 'f32'), qkv(1, 2, 150, 16, 'f32'), qkv(1, 2, 150, 16, 'f32'),
      V([[(i >= 4) and (i * 7 + j * 3) % 5 != 0 for j in range(150)] for i in range(40)], 'pred'))
  add('attn_mask_empty_rows_bf16', lambda q, k, v, m: sdpa(q, k, v, m),
      qkv(1, 2, 40, 64), qkv(1, 2, 150, 64), qkv(1, 2, 150, 64),
      V([[(i >= 4) and (i * 7 + j * 3) % 5 != 0 for j in range(150)] for i in range(40)], 'pred'))
  # Gradients through attention (the backward pass a training step runs: the backward matcher's
  # cases, Note [Attention backward]): layouts, masks, jax.nn.dot_product_attention, a q scaled
  # before the product, a fused qkv buffer, a softmax with a custom jvp, odd lengths, head dim
  # 128, weights in front; grouped-query heads are not matched backward.
  def grad_of(f):
    return jax.grad(lambda *a: jnp.sum(jnp.square(f(*a).astype(jnp.float32))), argnums=(0, 1, 2))
  grad = grad_of(lambda q, k, v: sdpa(q, k, v, tril(24)))
  add('attn_grad_causal_f32', grad, qkv(1, 2, 24, 16, 'f32'), qkv(1, 2, 24, 16, 'f32'), qkv(1, 2, 24, 16, 'f32'))
  add('attn_grad_causal_bf16', grad, qkv(1, 2, 24, 64), qkv(1, 2, 24, 64), qkv(1, 2, 24, 64))
  add('attn_grad_bshd_nomask_bf16', grad_of(lambda q, k, v: sdpa(q, k, v, layout='bshd')),
      qkv(2, 2, 32, 64, layout='bshd'), qkv(2, 2, 32, 64, layout='bshd'), qkv(2, 2, 32, 64, layout='bshd'))
  add('attn_grad_dpa_causal_bf16', grad_of(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)),
      qkv(1, 2, 40, 64, layout='bshd'), qkv(1, 2, 40, 64, layout='bshd'), qkv(1, 2, 40, 64, layout='bshd'))
  add('attn_grad_flax_scaled_q_bf16', grad_of(flax_style), qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), qkv(1, 2, 32, 64))
  add('attn_grad_s7_causal_bf16', grad_of(lambda q, k, v: sdpa(q, k, v, tril(7))),
      qkv(1, 3, 7, 64), qkv(1, 3, 7, 64), qkv(1, 3, 7, 64))
  add('attn_grad_d128_causal_bf16', grad_of(lambda q, k, v: sdpa(q, k, v, tril(40))),
      qkv(1, 2, 40, 128), qkv(1, 2, 40, 128), qkv(1, 2, 40, 128))
  add('attn_grad_custom_jvp_f32', grad_of(lambda q, k, v: custom_jvp_attention(q, k, v, tril(20))),
      qkv(1, 2, 20, 16, 'f32'), qkv(1, 2, 20, 16, 'f32'), qkv(1, 2, 20, 16, 'f32'))
  add('attn_grad_fused_qkv_bf16', jax.grad(lambda x: jnp.sum(jnp.square(fused_qkv_attention(x).astype(jnp.float32)))),
      F((1, 32, 384), 'bf16', -1, 1))
  # Several 64-row/64-key tiles (the CPU backward kernel's), causal with an offset, no mask.
  add('attn_grad_s150_causal_f32', grad_of(lambda q, k, v: sdpa(q, k, v, tril(150))),
      qkv(1, 2, 150, 32, 'f32'), qkv(1, 2, 150, 32, 'f32'), qkv(1, 2, 150, 32, 'f32'))
  add('attn_grad_q70_kv150_causal_f32', grad_of(lambda q, k, v: sdpa(q, k, v, causal(70, 150))),
      qkv(1, 2, 70, 32, 'f32'), qkv(1, 2, 150, 32, 'f32'), qkv(1, 2, 150, 32, 'f32'))
  add('attn_grad_bshd_nomask_f32', grad_of(lambda q, k, v: sdpa(q, k, v, layout='bshd')),
      qkv(2, 2, 100, 16, 'f32', layout='bshd'), qkv(2, 2, 100, 16, 'f32', layout='bshd'),
      qkv(2, 2, 100, 16, 'f32', layout='bshd'))
  add('attn_grad_split_qkv_bf16',
      jax.grad(lambda x, wqkv, wo: jnp.mean(jnp.square(split_qkv_layer(x, wqkv, wo).astype(jnp.float32))),
               argnums=(0, 1, 2)),
      F((2, 40, 64), 'bf16', -1.0, 1.0), F((64, 192), 'bf16', -0.15, 0.15), F((64, 64), 'bf16', -0.15, 0.15))
  add('attn_grad_block_f32', jax.grad(lambda x, wqkv, wo: jnp.mean(jnp.square(attention_layer(x, wqkv, wo))), argnums=(0, 1, 2)),
      F((2, 16, 32), 'f32', -1, 1), F((32, 96), 'f32', -0.2, 0.2), F((32, 32), 'f32', -0.2, 0.2))
  add('attn_grad_gqa_dpa_bf16', grad_of(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)),
      qkv(1, 4, 32, 64, layout='bshd'), qkv(1, 2, 32, 64, layout='bshd'), qkv(1, 2, 32, 64, layout='bshd'))
  # Must not match: the softmax runs over the query axis; a random mask; probabilities kept.
  add('attn_refuse_wrong_axis_bf16', lambda q, k, v: sdpa(q, k, v, axis=-2),
      qkv(1, 2, 64, 64), qkv(1, 2, 64, 64), qkv(1, 2, 64, 64))
  # A mask that is not a mask: the fill 0 keeps dropped keys in the softmax.
  add('attn_refuse_fill_zero_bf16', lambda q, k, v, m: sdpa(q, k, v, m, fill=0.0),
      qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), B((32, 32), 0.7))
  # A bias added after the mask (to the fill): refused.
  add('attn_refuse_bias_after_mask_f32',
      lambda q, k, v, b: jax.nn.softmax(jnp.where(tril(24), jnp.einsum('bhqd,bhkd->bhqk', q, k) * 0.25,
                                                  -1e9) + b, axis=-1) @ v,
      qkv(1, 2, 24, 16, 'f32'), qkv(1, 2, 24, 16, 'f32'), qkv(1, 2, 24, 16, 'f32'), F((1, 2, 24, 24), 'f32', -1, 1))
  add('attn_refuse_probs_used_bf16', attention_and_probs,
      qkv(1, 2, 32, 64), qkv(1, 2, 32, 64), qkv(1, 2, 32, 64))
