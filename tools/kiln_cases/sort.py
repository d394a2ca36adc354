"""sort_*: sort, argsort, multi-operand sort, top_k, searchsorted."""

import jax.numpy as jnp
from jax import lax

from .spec import B, C, F, I, V

NAN, INF = float('nan'), float('inf')
FLOAT_SPECIALS = (NAN, -0.0, 0.0, INF, -INF, 1.0, -1.0, NAN, 0.0, -0.0)


def register(add):
  add('sort_f32_specials', lambda x: jnp.sort(x), F((32,), special=FLOAT_SPECIALS))
  add('sort_f32_axis0', lambda x: (jnp.sort(x, axis=0), jnp.sort(x, axis=1)), F((6, 8)))
  add('sort_f32_descending', lambda x: jnp.sort(x, descending=True),
      F((16,), special=FLOAT_SPECIALS[:6]))
  add('sort_bf16', lambda x: jnp.sort(x, axis=-1), F((4, 16), 'bf16', special=(NAN, -0.0, 0.0)))
  add('sort_f16', lambda x: jnp.sort(x), F((24,), 'f16', special=(NAN, INF, -0.0)))
  add('sort_f64', lambda x: jnp.sort(x), F((24,), 'f64', special=(NAN, -0.0, 0.0)))
  add('sort_s32', lambda x: jnp.sort(x, axis=1), I((4, 16), 's32', special=(-2**31, 2**31 - 1)))
  add('sort_u8', lambda x: jnp.sort(x), I((32,), 'u8'))
  add('sort_s64', lambda x: jnp.sort(x), I((16,), 's64'))
  add('sort_u32_descending', lambda x: jnp.sort(x, descending=True), I((16,), 'u32'))
  add('sort_bool', lambda x: jnp.sort(x), B((16,)))
  add('sort_c64', lambda x: jnp.sort(x), C((16,), lo=-2, hi=2, special=(1 + 1j, 1 - 1j, 1 + 1j)))
  add('sort_argsort_stable_f32', lambda x: jnp.argsort(x, stable=True),
      F((32,), integers=True, lo=-4, hi=4, special=(NAN, -0.0, 0.0, NAN)))
  add('sort_argsort_stable_desc_s32', lambda x: jnp.argsort(x, axis=0, stable=True,
                                                            descending=True),
      I((12, 3), 's32', -3, 3))
  add('sort_argsort_2d_f32', lambda x: jnp.argsort(x, axis=-1), F((4, 12)))
  add('sort_lax_two_operands', lambda k, v: lax.sort((k, v), num_keys=1),
      I((16,), 's32', -4, 4), F((16,)))
  add('sort_lax_two_keys', lambda a, b, v: lax.sort((a, b, v), num_keys=2),
      I((20,), 's32', 0, 3), F((20,), integers=True, lo=-2, hi=2, special=(NAN, -0.0, 0.0)),
      I((20,), 'u8'))
  add('sort_lax_unstable_unique_f32', lambda k, v: lax.sort((k, v), dimension=0, is_stable=False),
      F((12, 2)), I((12, 2), 's32'))
  add('sort_top_k_f32', lambda x: lax.top_k(x, 4), F((3, 16), integers=True, lo=-4, hi=4))
  add('sort_top_k_nan_f32', lambda x: lax.top_k(x, 5), F((12,), special=(NAN, INF, -0.0, 0.0)))
  add('sort_top_k_s32', lambda x: lax.top_k(x, 3), I((5, 10), 's32', -3, 3))
  add('sort_top_k_bf16_full', lambda x: lax.top_k(x, 8), F((8,), 'bf16'))
  for side in ('left', 'right'):
    for method in ('scan', 'sort', 'compare_all'):
      add(f'sort_searchsorted_{side}_{method}_f32', lambda a, v, side=side, method=method:
          jnp.searchsorted(jnp.sort(a), v, side=side, method=method),
          F((16,), integers=True, lo=-8, hi=8), F((10,), integers=True, lo=-10, hi=10,
                                                    special=(NAN, INF, -INF)))
  add('sort_searchsorted_s32', lambda a, v: jnp.searchsorted(a, v),
      V(list(range(0, 40, 3)), 's32'), I((8,), 's32', -5, 45))
  add('sort_median_quantile_f32', lambda x: (jnp.median(x, axis=1), jnp.quantile(x, 0.3)),
      F((5, 9)))
