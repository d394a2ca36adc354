"""cf_*: loops, scans, conditionals, remat."""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import F, I, V


def _rnn(h0, xs, w, u, b):
  def step(h, x):
    h = jnp.tanh(x @ w + h @ u + b)
    return h, h
  return lax.scan(step, h0, xs)


def _lstm(params, xs, h0, c0):
  wx, wh, b = params

  def step(carry, x):
    h, c = carry
    z = x @ wx + h @ wh + b
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h
  (h, c), hs = lax.scan(step, (h0, c0), xs)
  return h, c, hs


def _rnn_mixed(h0, xs, w, u, b):
  # A mixed-precision RNN: the closed-over f32 weights are cast to bf16 inside every step, and
  # u is used transposed (loop-invariant code motion moves both out of the loop).
  def step(h, x):
    z = jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
    z = z + jnp.dot(h.astype(jnp.bfloat16), u.T.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
    h = jnp.tanh(z + b * 2.0)
    return h, h
  return lax.scan(step, h0, xs)


def _collatz_steps(n):
  def cond(s):
    return s[0] != 1

  def body(s):
    x, k = s
    return jnp.where(x % 2 == 0, x // 2, 3 * x + 1), k + 1
  return lax.while_loop(cond, body, (n, jnp.int32(0)))[1]


def register(add):
  add('cf_fori_static_f32', lambda x: lax.fori_loop(0, 5, lambda i, a: a * 0.5 + i, x), F((8,)))
  add('cf_fori_dynamic_s32', lambda x, n: lax.fori_loop(0, n, lambda i, a: a + i * a, x),
      I((6,), 's32', -5, 5), V(4, 's32'))
  add('cf_fori_zero_trip_f32', lambda x, n: lax.fori_loop(n, 3, lambda i, a: a + 1.0, x),
      F((4,)), V(5, 's32'))
  add('cf_while_data_dependent_s32', jax.vmap(_collatz_steps), I((6,), 's32', 1, 30, (27, 1, 7)))
  add('cf_while_until_f32', lambda x, lim: lax.while_loop(
      lambda s: jnp.max(s[0]) < lim, lambda s: (s[0] * 1.5 + 0.25, s[1] + 1), (x, 0)),
      F((5,), lo=0.1, hi=1.0), V(100.0))
  add('cf_while_mixed_state', lambda x, flag: lax.while_loop(
      lambda s: s[2] & (s[0] < 10),
      lambda s: (s[0] + 1, s[1] * jnp.float16(1.25), jnp.sum(s[1]) < 50,
                 s[3] ^ s[0].astype(jnp.uint8)),
      (jnp.int32(0), x, flag, jnp.uint8(5))),
      F((4,), 'f16', 0.5, 2.0), V(True, 'pred'))
  add('cf_scan_rnn_f32', _rnn, F((2, 16), lo=-0.5, hi=0.5), F((8, 2, 8)), F((8, 16), lo=-0.3, hi=0.3),
      F((16, 16), lo=-0.3, hi=0.3), F((16,), lo=-0.1, hi=0.1))
  add('cf_scan_rnn_invariant_weights_f32', _rnn_mixed, F((2, 16), lo=-0.5, hi=0.5), F((8, 2, 8)),
      F((8, 16), lo=-0.3, hi=0.3), F((16, 16), lo=-0.3, hi=0.3), F((16,), lo=-0.1, hi=0.1))
  add('cf_fori_invariant_transpose_f32', lambda x, w: lax.fori_loop(
      0, 4, lambda i, a: jnp.tanh(a @ (w.T @ w) * 0.5) + jnp.exp(w[0, 0]), x),
      F((3, 8), lo=-0.5, hi=0.5), F((8, 8), lo=-0.4, hi=0.4))
  add('cf_scan_lstm_f32', lambda wx, wh, b, xs, h0, c0: _lstm((wx, wh, b), xs, h0, c0),
      F((4, 32), lo=-0.4, hi=0.4), F((8, 32), lo=-0.4, hi=0.4), F((32,), lo=-0.1, hi=0.1),
      F((6, 2, 4)), F((2, 8), lo=-0.5, hi=0.5), F((2, 8), lo=-0.5, hi=0.5))
  add('cf_scan_reverse_s32', lambda xs: lax.scan(lambda c, x: (c * 3 + x, c), jnp.ones(2, jnp.int32), xs,
                                                 reverse=True), I((7, 2), 's32', -9, 9))
  add('cf_scan_unroll_f32', lambda xs: lax.scan(lambda c, x: (c + jnp.sin(x), c * x), 0.0 * xs[0], xs,
                                                unroll=2), F((5, 3)))
  add('cf_cond_f32', lambda p, x: lax.cond(p, lambda x: jnp.sin(x) * 2, lambda x: x - 1, x),
      V(True, 'pred'), F((8,)))
  add('cf_cond_false_tuple', lambda p, x, y: lax.cond(p, lambda a, b: (a + b, b),
                                                     lambda a, b: (a * b, -b), x, y),
      V(False, 'pred'), F((4,)), F((4,)), allow_zero=True)
  for name, idx in (('in_range', 1), ('above', 7), ('below', -3)):
    add(f'cf_switch_{name}_f32', lambda i, x: lax.switch(i, [lambda x: x + 1, lambda x: x * 2,
                                                             lambda x: -x], x),
        V(idx, 's32'), F((6,)))
  add('cf_nested_loops_f32', lambda x: lax.fori_loop(
      0, 3, lambda i, a: lax.fori_loop(0, i + 1, lambda j, b: b + jnp.cos(b) * (j + 1), a), x),
      F((5,)))
  add('cf_scan_in_while_f32', lambda x: lax.while_loop(
      lambda s: s[1] < 3, lambda s: (lax.scan(lambda c, y: (c + y * s[0][0], c), 0.0, s[0])[1] + 1,
                                     s[1] + 1), (x, 0))[0], F((6,), lo=-0.5, hi=0.5))
  add('cf_cond_in_scan_f32', lambda xs: lax.scan(
      lambda c, x: (lax.cond(x > 0, lambda: c + x, lambda: c * 0.5), c), 1.0, xs), F((8,)))
  add('cf_map_f32', lambda xs: lax.map(lambda x: jnp.sum(x ** 2) + jnp.max(x), xs), F((5, 4)))
  add('cf_checkpoint_grad_f32', lambda x, w: jax.grad(
      lambda x: jnp.sum(jax.checkpoint(lambda x: jnp.tanh(x @ w) @ w.T)(x) ** 2))(x),
      F((4, 8)), F((8, 8), lo=-0.5, hi=0.5))
  add('cf_grad_through_scan_f32', lambda w, xs: jax.grad(
      lambda w: lax.scan(lambda c, x: (jnp.tanh(c * w + x), None), jnp.zeros_like(w), xs)[0].sum())(w),
      F((4,)), F((6, 4)))
  add('cf_optimization_barrier_f32', lambda x: lax.optimization_barrier((x * 2, x + 1)),
      F((4,)))
