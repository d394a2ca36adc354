"""red_* and pool_*: reductions, cumulative ops, reduce_window, select_and_scatter."""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax

from .spec import B, C, F, I

NAN, INF = float('nan'), float('inf')


def _argmax_pair(x, axis):
  """A variadic reduce computing (max, first index of max)."""
  idx = lax.broadcasted_iota(jnp.int32, x.shape, axis)

  def body(a, b):
    av, ai = a
    bv, bi = b
    take_a = (av > bv) | ((av == bv) & (ai < bi))
    return lax.select(take_a, av, bv), lax.select(take_a, ai, bi)
  return lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), body, (axis,))


def _maxpool(x, window=(1, 2, 2, 1), strides=(1, 2, 2, 1), padding='VALID'):
  return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, padding)


def _avgpool(x, window=(1, 3, 3, 1), strides=(1, 1, 1, 1), padding='SAME'):
  s = lax.reduce_window(x, 0.0, lax.add, window, strides, padding)
  n = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, window, strides, padding)
  return s / n


def register_reduce(add):
  x3 = F((6, 8, 5))
  for name, axes in (('axis0', 0), ('axis1', 1), ('axis2', 2), ('axes02', (0, 2)), ('all', None)):
    add(f'red_sum_{name}_f32', lambda x, axes=axes: jnp.sum(x, axis=axes), x3)
  add('red_sum_keepdims_f32', lambda x: jnp.sum(x, axis=1, keepdims=True), F((4, 6)))
  add('red_sum_bf16', lambda x: (jnp.sum(x, axis=1), jnp.sum(x, axis=1, dtype=jnp.float32)),
      F((8, 64), 'bf16'))
  add('red_sum_f16', lambda x: jnp.sum(x, axis=0), F((64, 8), 'f16'))
  add('red_sum_f64', lambda x: jnp.sum(x, axis=1), F((8, 64), 'f64'))
  add('red_sum_c64', lambda x: (jnp.sum(x, axis=0), jnp.prod(x, axis=1)), C((4, 6), lo=-1, hi=1))
  add('red_sum_s8', lambda x: (jnp.sum(x, axis=1), jnp.sum(x, axis=1, dtype=jnp.int8)),
      I((4, 32), 's8'))
  add('red_sum_u32', lambda x: jnp.sum(x, axis=0, dtype=jnp.uint32), I((16, 4), 'u32'))
  add('red_sum_s64', lambda x: jnp.sum(x, axis=0), I((16, 4), 's64'))
  add('red_sum_bool', lambda x: (jnp.sum(x, axis=1), jnp.count_nonzero(x, axis=0)), B((5, 7)))
  add('red_sum_empty_f32', lambda x: (jnp.sum(x, axis=1), jnp.max(x, axis=1, initial=-jnp.inf),
                                       jnp.prod(x, axis=1)),
      F((3, 0)))
  add('red_prod_f32', lambda x: (jnp.prod(x, axis=0), jnp.prod(x)), F((4, 5), lo=0.5, hi=1.5))
  add('red_prod_s32', lambda x: jnp.prod(x, axis=1), I((3, 8), 's32', -5, 5))
  for t in ('f32', 'bf16', 'f16'):
    add(f'red_max_min_{t}', lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0), jnp.max(x)),
        F((6, 8), t, special=(NAN, -INF, INF, -0.0)))
  add('red_max_min_nonan_f32', lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0)),
      F((6, 8), special=(0.0, -0.0, -INF)))
  add('red_max_min_s8', lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=1)), I((4, 16), 's8'))
  add('red_max_min_u16', lambda x: (jnp.max(x, axis=0), jnp.min(x, axis=0)), I((4, 16), 'u16'))
  add('red_max_s64', lambda x: jnp.max(x, axis=1), I((4, 16), 's64'))
  add('red_argmax_argmin_f32', lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0),
                                          jnp.argmax(x)),
      F((6, 8), integers=True, lo=-3, hi=3))
  add('red_argmax_nan_f32', lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=1)),
      F((4, 8), special=(1.0, NAN, 2.0, 3.0, INF, INF, 0.0, -0.0)))
  add('red_argmax_s32', lambda x: (jnp.argmax(x, axis=0), jnp.argmin(x, axis=1)),
      I((5, 6), 's32', -3, 3))
  add('red_argmax_bf16', lambda x: jnp.argmax(x, axis=-1), F((4, 16), 'bf16'))
  add('red_any_all', lambda x: (jnp.any(x, axis=1), jnp.all(x, axis=0), jnp.any(x), jnp.all(x)),
      B((5, 6), 0.7))
  add('red_variadic_argmax_f32', lambda x: _argmax_pair(x, 1), F((5, 8), integers=True, lo=-3,
                                                                 hi=3))
  add('red_variadic_three_f32', lambda x, y, z: lax.reduce(
      (x, y, z), (np.float32(0), np.float32(-np.inf), np.int32(0)),
      lambda a, b: (a[0] + b[0], lax.max(a[1], b[1]), a[2] + b[2]), (0,)),
      F((8, 3)), F((8, 3)), I((8, 3), 's32', -10, 10))
  add('red_logsumexp_f32', lambda x: (jsp.logsumexp(x, axis=1), jsp.logsumexp(x)), F((4, 16), lo=-20,
                                                                                    hi=20))
  add('red_mean_var_f32', lambda x: (jnp.mean(x, axis=0), jnp.var(x, axis=0), jnp.std(x, axis=1),
                                     jnp.linalg.norm(x, axis=1)), F((8, 6)))
  add('red_mean_bf16', lambda x: jnp.mean(x, axis=-1), F((4, 32), 'bf16'))


def register_cumulative(add):
  add('red_cumsum_f32', lambda x: (jnp.cumsum(x, axis=0), jnp.cumsum(x, axis=1),
                                   lax.cumsum(x, axis=1, reverse=True)),
      F((6, 8), integers=True, lo=-8, hi=8))
  add('red_cumsum_s32', lambda x: jnp.cumsum(x, axis=-1), I((3, 16), 's32', -100, 100))
  add('red_cumsum_bf16', lambda x: jnp.cumsum(x), F((32,), 'bf16', integers=True, lo=-4, hi=4))
  add('red_cumprod_f32', lambda x: jnp.cumprod(x, axis=1), F((3, 8), lo=0.5, hi=1.5))
  add('red_cummax_cummin_f32', lambda x: (lax.cummax(x, axis=1), lax.cummin(x, axis=0),
                                          lax.cummax(x, axis=1, reverse=True)),
      F((4, 8), special=(1.0, NAN, 2.0)))
  add('red_cumlogsumexp_f32', lambda x: lax.cumlogsumexp(x, axis=0), F((8, 3)))
  add('red_cummax_s8', lambda x: lax.cummax(x, axis=0), I((16,), 's8'))
  add('red_associative_scan_f32', lambda x: lax.associative_scan(jnp.add, x, axis=0),
      F((9, 2), integers=True, lo=-8, hi=8))


def register_window(add):
  nhwc = F((2, 8, 8, 3))
  add('pool_max_2x2_f32', _maxpool, nhwc)
  add('pool_max_3x3_same_f32', lambda x: _maxpool(x, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME'), nhwc)
  add('pool_avg_3x3_same_f32', _avgpool, nhwc)
  add('pool_avg_2x2_valid_f32', lambda x: _avgpool(x, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID'), nhwc)
  add('pool_max_nchw_bf16', lambda x: _maxpool(x, (1, 1, 2, 2), (1, 1, 2, 2)),
      F((2, 3, 8, 8), 'bf16'))
  add('pool_sum_padded_s32', lambda x: lax.reduce_window(x, np.int32(0), lax.add, (3, 2), (2, 1),
                                                         ((1, 2), (0, 1))), I((7, 6), 's32', -9, 9))
  add('pool_dilated_f32', lambda x: lax.reduce_window(
      x, -jnp.inf, lax.max, (2, 2), (1, 2), ((1, 1), (0, 1)), base_dilation=(2, 1),
      window_dilation=(1, 2)), F((5, 7)))
  add('pool_min_f16', lambda x: lax.reduce_window(x, jnp.float16(jnp.inf), lax.min, (1, 3),
                                                  (1, 1), 'VALID'), F((4, 8), 'f16'))
  add('pool_variadic_reduce_window_f32', lambda x, y: lax.reduce_window(
      (x, y), (np.float32(-np.inf), np.float32(0)),
      lambda a, b: (lax.max(a[0], b[0]), a[1] + b[1]), (2, 2), (1, 1), 'VALID'),
      F((4, 5)), F((4, 5)))
  # Gradients: max pool -> select_and_scatter; avg pool -> pad / reduce_window.
  add('pool_max_grad_f32', lambda x, g: jax.vjp(_maxpool, x)[1](g)[0],
      F((2, 8, 8, 3)), F((2, 4, 4, 3)))
  add('pool_max_grad_overlap_f32', lambda x, g: jax.vjp(
      lambda x: _maxpool(x, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME'), x)[1](g)[0],
      F((1, 7, 7, 2), integers=True, lo=-3, hi=3), F((1, 4, 4, 2), integers=True, lo=-4, hi=4))
  add('pool_avg_grad_f32', lambda g: jax.vjp(_avgpool, jnp.zeros_like(g))[1](g)[0],
      F((2, 8, 8, 3)))
  add('pool_select_and_scatter_min_f32', lambda x, g: jax.vjp(
      lambda x: lax.reduce_window(x, jnp.inf, lax.min, (2, 2), (2, 2), 'VALID'), x)[1](g)[0],
      F((6, 6)), F((3, 3)))


def register(add):
  register_reduce(add)
  register_cumulative(add)
  register_window(add)
