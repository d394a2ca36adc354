"""nn_*: layers, a transformer block, a conv block, training steps."""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import F, I, KEY

D, H, S, FF = 32, 4, 8, 64  # model width, heads, sequence length, MLP width


def W(shape, dtype='f32', scale=None):
  """A weight of fan-in scaling (uniform with variance ~1/fan_in)."""
  fan_in = shape[0] if len(shape) > 1 else 1
  s = scale if scale is not None else (3.0 / fan_in) ** 0.5
  return F(shape, dtype, -s, s)


def mlp(x, w1, b1, w2, b2, act=jax.nn.relu):
  return act(x @ w1 + b1) @ w2 + b2


def layernorm(x, g, b, eps=1e-5):
  m = jnp.mean(x, -1, keepdims=True)
  v = jnp.mean((x - m) ** 2, -1, keepdims=True)
  return (x - m) * lax.rsqrt(v + eps) * g + b


def rmsnorm(x, g, eps=1e-6):
  return x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + eps) * g


def attention(q, k, v, causal=True):
  """q, k, v: [batch, heads, seq, dim]."""
  s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / jnp.sqrt(jnp.float32(q.shape[-1])).astype(q.dtype)
  if causal:
    n = q.shape[2]
    mask = jnp.tril(jnp.ones((n, n), bool))
    s = jnp.where(mask, s, jnp.finfo(s.dtype).min)
  p = jax.nn.softmax(s, axis=-1)
  return jnp.einsum('bhqk,bhkd->bhqd', p, v)


def transformer_block(x, g1, b1, wqkv, wo, g2, b2, w1, w2):
  bsz, n, d = x.shape
  h = layernorm(x, g1, b1)
  qkv = (h @ wqkv).reshape(bsz, n, 3, H, d // H).transpose(2, 0, 3, 1, 4)
  a = attention(qkv[0], qkv[1], qkv[2]).transpose(0, 2, 1, 3).reshape(bsz, n, d)
  x = x + a @ wo
  h = layernorm(x, g2, b2)
  return x + jax.nn.gelu(h @ w1) @ w2


def conv_bn_relu(x, k, gamma, beta):
  y = lax.conv_general_dilated(x, k, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
  m = jnp.mean(y, (0, 1, 2))
  v = jnp.var(y, (0, 1, 2))
  return jax.nn.relu((y - m) * lax.rsqrt(v + 1e-5) * gamma + beta)


def cross_entropy(logits, labels):
  logp = jax.nn.log_softmax(logits)
  return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def mlp_train_step(w1, b1, w2, b2, x, y, lr=0.1):
  def loss(p):
    return cross_entropy(mlp(x, *p), y)
  params = (w1, b1, w2, b2)
  l, g = jax.value_and_grad(loss)(params)
  return (l,) + tuple(p - lr * gp for p, gp in zip(params, g))


def cnn(params, x):
  k1, k2, w, b = params
  dn = ('NHWC', 'HWIO', 'NHWC')
  h = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), 'SAME', dimension_numbers=dn))
  h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')
  h = jax.nn.relu(lax.conv_general_dilated(h, k2, (2, 2), 'SAME', dimension_numbers=dn))
  h = jnp.mean(h, axis=(1, 2))
  return h @ w + b


def cnn_train_step(k1, k2, w, b, x, y, lr=0.05):
  params = (k1, k2, w, b)
  l, g = jax.value_and_grad(lambda p: cross_entropy(cnn(p, x), y))(params)
  return (l,) + tuple(p - lr * gp for p, gp in zip(params, g))


def adam_step(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
  m = b1 * m + (1 - b1) * g
  v = b2 * v + (1 - b2) * g * g
  mh = m / (1 - b1 ** t)
  vh = v / (1 - b2 ** t)
  return p - lr * mh / (jnp.sqrt(vh) + eps), m, v


def dropout(k, x, rate=0.25):
  keep = jax.random.bernoulli(jax.random.wrap_key_data(k), 1 - rate, x.shape)
  return jnp.where(keep, x / (1 - rate), 0.0)


def register(add):
  mlp_args = (F((8, D)), W((D, FF)), W((FF,), scale=0.1), W((FF, 16)), W((16,), scale=0.1))
  add('nn_mlp_relu_f32', mlp, *mlp_args)
  add('nn_mlp_gelu_tanh_f32', lambda *a: mlp(*a, act=lambda h: jax.nn.gelu(h, approximate=True)),
      *mlp_args)
  add('nn_mlp_gelu_erf_f32', lambda *a: mlp(*a, act=lambda h: jax.nn.gelu(h, approximate=False)),
      *mlp_args)
  add('nn_mlp_silu_bf16', lambda *a: mlp(*a, act=jax.nn.silu),
      F((8, D), 'bf16'), W((D, FF), 'bf16'), W((FF,), 'bf16', 0.1), W((FF, 16), 'bf16'),
      W((16,), 'bf16', 0.1))
  add('nn_softmax_f32', lambda x: (jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0)),
      F((6, 16), lo=-10, hi=10))
  add('nn_softmax_bf16', lambda x: jax.nn.softmax(x, axis=-1), F((4, 32), 'bf16', -10, 10))
  add('nn_layernorm_f32', layernorm, F((4, 8, D)), F((D,), lo=0.5, hi=1.5), F((D,), lo=-0.5, hi=0.5))
  add('nn_layernorm_bf16', layernorm, F((4, D), 'bf16'), F((D,), 'bf16', 0.5, 1.5),
      F((D,), 'bf16', -0.5, 0.5))
  add('nn_rmsnorm_f32', rmsnorm, F((4, 8, D)), F((D,), lo=0.5, hi=1.5))
  qkv = F((2, H, S, 16))
  add('nn_attention_causal_f32', attention, qkv, qkv, qkv)
  add('nn_attention_noncausal_f32', lambda q, k, v: attention(q, k, v, causal=False), qkv, qkv, qkv)
  add('nn_attention_causal_bf16', attention, F((1, 2, S, 16), 'bf16'), F((1, 2, S, 16), 'bf16'),
      F((1, 2, S, 16), 'bf16'))
  add('nn_transformer_block_f32', transformer_block, F((2, S, D)), F((D,), lo=0.8, hi=1.2),
      F((D,), lo=-0.1, hi=0.1), W((D, 3 * D)), W((D, D)), F((D,), lo=0.8, hi=1.2),
      F((D,), lo=-0.1, hi=0.1), W((D, FF)), W((FF, D)))
  add('nn_conv_bn_relu_f32', conv_bn_relu, F((2, 8, 8, 3)), W((3, 3, 3, 8), scale=0.3),
      F((8,), lo=0.5, hi=1.5), F((8,), lo=-0.5, hi=0.5))
  add('nn_resblock_f32', lambda x, k1, k2, g, b: jax.nn.relu(
      x + conv_bn_relu(conv_bn_relu(x, k1, g, b), k2, g, b)),
      F((2, 6, 6, 8)), W((3, 3, 8, 8), scale=0.2), W((3, 3, 8, 8), scale=0.2),
      F((8,), lo=0.5, hi=1.5), F((8,), lo=-0.5, hi=0.5))
  add('nn_cross_entropy_f32', cross_entropy, F((8, 10), lo=-4, hi=4), I((8,), 's32', 0, 9))
  add('nn_embedding_lookup_f32', lambda table, ids, pos: table[ids] + pos,
      F((64, 16)), I((4, 8), 's32', 0, 63), F((8, 16)))
  add('nn_dropout_f32', dropout, KEY(2), F((8, 16)))
  add('nn_mlp_train_step_f32', mlp_train_step, W((16, 32)), W((32,), scale=0.1), W((32, 10)),
      W((10,), scale=0.1), F((8, 16)), I((8,), 's32', 0, 9))
  add('nn_cnn_train_step_f32', cnn_train_step, W((3, 3, 3, 8), scale=0.3),
      W((3, 3, 8, 8), scale=0.2), W((8, 10)), W((10,), scale=0.1), F((4, 8, 8, 3)),
      I((4,), 's32', 0, 9))
  add('nn_adam_step_f32', adam_step, F((8, 16)), F((8, 16), lo=-0.1, hi=0.1),
      F((8, 16), lo=-0.01, hi=0.01), F((8, 16), lo=1e-5, hi=1e-3), F((), lo=3, hi=3, integers=True))
  add('nn_mlp_grad_bf16', lambda w, x: jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w),
      W((16, 16), 'bf16'), F((4, 16), 'bf16'))
