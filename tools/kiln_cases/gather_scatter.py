"""gather_* and scatter_*: jnp indexing, take, take_along_axis, one_hot, .at[] updates.

Scatter cases keep results deterministic: `set` never writes one element twice; duplicates
appear only with add/mul/min/max on exactly representable values (integer-valued floats,
powers of two), where the order of the updates cannot change the result.
"""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import B, C, F, I, V

NAN = float('nan')
GS = lax.GatherScatterMode


def register_gather(add):
  add('gather_index_1d_f32', lambda x, i: x[i], F((16,)), I((10,), 's32', 0, 15))
  add('gather_negative_index_f32', lambda x, i: x[i], F((16,)), I((10,), 's32', -16, 15,
                                                                   (-1, -16, 0, 15)))
  add('gather_clip_f32', lambda x, i: x.at[i].get(mode='clip'), F((16,)),
      I((10,), 's32', -40, 40, (100, -100, 16, 0, 15)))
  add('gather_fill_f32', lambda x, i: x.at[i].get(mode='fill', fill_value=-99.0), F((16,)),
      I((10,), 's32', -40, 40, (100, -100, 16, -17, 15, 0)))
  add('gather_fill_nan_default_f32', lambda x, i: x.at[i].get(mode='fill'), F((16,)),
      I((8,), 's32', -20, 20, (16, -17, 3)))
  add('gather_oob_raw_f32', lambda x, i: x.at[i].get(mode='promise_in_bounds'), F((16,)),
      I((10,), 's32', 0, 15, (16, 100, -1, -100, 15)),
      note='out-of-range indices of a raw HLO gather clamp (XLA semantics)')
  add('gather_rows_f32', lambda x, i: x[i, :], F((8, 16)), I((5,), 's32', 0, 7))
  add('gather_cols_bf16', lambda x, i: x[:, i], F((8, 16), 'bf16'), I((3, 2), 's32', 0, 15))
  add('gather_points_s32', lambda x, i, j: x[i, j], I((8, 16), 's32'), I((6,), 's32', 0, 7),
      I((6,), 's32', -16, 15))
  add('gather_mixed_slices_f32', lambda x, i: x[1:3, i, ::2], F((4, 6, 8)), I((2, 2), 's32', 0, 5))
  add('gather_u8_index_c64', lambda x, i: x[i], C((12, 3)), I((5,), 'u8', 0, 11))
  add('gather_s64_index_f64', lambda x, i: x[i], F((12,), 'f64'), I((5,), 's64', -12, 11))
  add('gather_bool_mask_where_f32', lambda x, m: jnp.where(m, x, 0.0).sum(), F((16,)), B((16,)))
  for mode in ('clip', 'fill', 'wrap'):
    add(f'gather_take_{mode}_f32', lambda x, i, mode=mode: jnp.take(x, i, axis=1, mode=mode),
        F((4, 8)), I((6,), 's32', -12, 12, (8, -9, 100)))
  add('gather_take_along_axis_f32', lambda x, i: jnp.take_along_axis(x, i, axis=1),
      F((4, 6)), I((4, 5), 's32', 0, 5))
  add('gather_take_along_axis0_s32', lambda x, i: jnp.take_along_axis(x, i, axis=0),
      I((4, 6), 's32'), I((3, 6), 's32', 0, 3))
  add('gather_argmax_take_f32', lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=-1), -1),
      F((3, 8)))
  add('gather_one_hot_f32', lambda l: (jax.nn.one_hot(l, 10), jax.nn.one_hot(l, 4,
                                                                               dtype=jnp.int8)),
      I((3, 5), 's32', -2, 11))
  # lax.gather with windows: patches of 2x3 at start positions; raw semantics clamp starts.
  dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                  start_index_map=(0, 1))
  add('gather_lax_patches_f32', lambda x, s: lax.gather(x, s, dn, (2, 3),
                                                        mode=GS.PROMISE_IN_BOUNDS),
      F((6, 7)), I((5, 2), 's32', -2, 8, (0, 0, 5, 6, 4, 4, -1, 7)))
  add('gather_lax_patches_clip_f32', lambda x, s: lax.gather(x, s, dn, (2, 3), mode=GS.CLIP),
      F((6, 7)), I((5, 2), 's32', -2, 8, (0, 0, 5, 6, 4, 4, -1, 7)))
  add('gather_lax_patches_fill_f32', lambda x, s: lax.gather(x, s, dn, (2, 3),
                                                             mode=GS.FILL_OR_DROP, fill_value=-1),
      F((6, 7)), I((5, 2), 's32', -2, 8, (0, 0, 5, 6, 4, 4, -1, 7)))
  dnb = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,),
                                   start_index_map=(1,), operand_batching_dims=(0,),
                                   start_indices_batching_dims=(0,))
  add('gather_lax_batching_dims_f32', lambda x, s: lax.gather(x, s, dnb, (1, 1, 4),
                                                              mode=GS.PROMISE_IN_BOUNDS),
      F((3, 5, 4)), I((3, 1), 's32', 0, 4))
  add('gather_index_vector_dim_first_s32', lambda x, s: lax.gather(
      x, s, lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                       start_index_map=(0,)),
      (1, 3), mode=GS.PROMISE_IN_BOUNDS), I((5, 3), 's32'), I((4, 1), 's32', 0, 4))


def register_scatter(add):
  uniq = V([3, 0, 7, 12, 5], 's32')
  add('scatter_set_f32', lambda x, i, v: x.at[i].set(v), F((16,)), uniq, F((5,), lo=10, hi=20))
  add('scatter_set_negative_index_f32', lambda x, i, v: x.at[i].set(v), F((16,)),
      V([-1, 2, -16, 9], 's32'), F((4,), lo=10, hi=20))
  add('scatter_set_drop_f32', lambda x, i, v: x.at[i].set(v, mode='drop'), F((16,)),
      V([3, 16, 7, 100, -17, 5], 's32'), F((6,), lo=10, hi=20))
  add('scatter_set_clip_f32', lambda x, i, v: x.at[i].set(v, mode='clip'), F((16,)),
      V([3, 100, 7, -100], 's32'), F((4,), lo=10, hi=20))
  add('scatter_set_promise_f32', lambda x, i, v: x.at[i].set(v, mode='promise_in_bounds'),
      F((16,)), uniq, F((5,), lo=10, hi=20))
  add('scatter_set_oob_raw_f32', lambda x, i, v: x.at[i].set(v, mode='promise_in_bounds'),
      F((16,)), V([3, 16, 7, 100, 5], 's32'), F((5,), lo=10, hi=20),
      note='out-of-range updates of a raw HLO scatter are skipped (XLA semantics)')
  dup = V([3, 3, 0, 7, 3, 15, 0, 20, -30], 's32')
  for op in ('add', 'min', 'max'):
    add(f'scatter_{op}_dup_f32', lambda x, i, v, op=op: getattr(x.at[i], op)(v),
        F((16,), integers=True, lo=-8, hi=8), dup, F((9,), integers=True, lo=-8, hi=8,
                                                     special=(NAN,) if op != 'add' else ()))
    add(f'scatter_{op}_dup_s32', lambda x, i, v, op=op: getattr(x.at[i], op)(v, mode='drop'),
        I((16,), 's32', -100, 100), dup, I((9,), 's32', -100, 100))
  add('scatter_mul_dup_f32', lambda x, i, v: x.at[i].multiply(v), F((16,), integers=True,
                                                                    lo=-4, hi=4),
      dup, V([2, 0.5, -1, 4, 2, 0.25, 2, 8, 8], 'f32'))
  add('scatter_add_clip_f32', lambda x, i, v: x.at[i].add(v, mode='clip'),
      F((16,), integers=True, lo=-8, hi=8), dup, F((9,), integers=True, lo=-8, hi=8))
  add('scatter_add_bf16', lambda x, i, v: x.at[i].add(v), F((16,), 'bf16', integers=True,
                                                            lo=-8, hi=8),
      dup, F((9,), 'bf16', integers=True, lo=-8, hi=8))
  add('scatter_add_rows_f32', lambda x, i, v: x.at[i, :].add(v), F((8, 6), integers=True,
                                                                   lo=-8, hi=8),
      V([1, 5, 1, 7], 's32'), F((4, 6), integers=True, lo=-8, hi=8))
  add('scatter_set_points_s32', lambda x, i, j, v: x.at[i, j].set(v), I((6, 7), 's32'),
      V([0, 5, 2, 3], 's32'), V([6, 0, 2, -1], 's32'), I((4,), 's32'))
  add('scatter_set_slice_f32', lambda x, v: x.at[1:3, ::2].set(v), F((4, 6)), F((2, 3)))
  add('scatter_set_bool', lambda x, i: x.at[i].set(True), B((16,), 0.2), V([1, 4, 9], 's32'))
  add('scatter_apply_f32', lambda x, i: x.at[i].apply(jnp.sin), F((16,)), uniq)
  add('scatter_segment_sum_f32', lambda v, s: jax.ops.segment_sum(v, s, num_segments=5),
      F((12,), integers=True, lo=-8, hi=8), V([0, 0, 1, 4, 2, 2, 2, 5, -1, 3, 4, 0], 's32'))
  add('scatter_segment_max_s32', lambda v, s: jax.ops.segment_max(v, s, num_segments=6),
      I((10, 2), 's32'), V([0, 0, 1, 4, 2, 2, 2, 5, 3, 4], 's32'))
  # lax.scatter with windows: 2x2 patches added at positions (some overlapping, one clipped).
  dn = lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                   scatter_dims_to_operand_dims=(0, 1))
  add('scatter_lax_patches_add_f32', lambda x, s, u: lax.scatter_add(x, s, u, dn,
                                                                     mode=GS.PROMISE_IN_BOUNDS),
      F((5, 6), integers=True, lo=-8, hi=8), V([[0, 0], [1, 1], [3, 4], [4, 5], [-1, 2]], 's32'),
      F((5, 2, 2), integers=True, lo=-8, hi=8))
  add('scatter_lax_patches_fill_f32', lambda x, s, u: lax.scatter(x, s, u, dn,
                                                                  mode=GS.FILL_OR_DROP),
      F((5, 6)), V([[0, 0], [2, 2], [3, 4], [4, 5], [-1, 2]], 's32'), F((5, 2, 2), lo=10, hi=20))
  add('scatter_sorted_unique_f32', lambda x, i, v: lax.scatter(
      x, i, v, lax.ScatterDimensionNumbers((), (0,), (0,)), indices_are_sorted=True,
      unique_indices=True), F((10,)), V([[1], [4], [6]], 's32'), F((3,), lo=5, hi=6))
  add('scatter_batching_dims_f32', lambda x, i, v: lax.scatter_add(
      x, i, v, lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(1,),
                                           scatter_dims_to_operand_dims=(1,),
                                           operand_batching_dims=(0,),
                                           scatter_indices_batching_dims=(0,)),
      mode=GS.PROMISE_IN_BOUNDS),
      F((3, 5), integers=True, lo=-8, hi=8), V([[[1], [1]], [[0], [4]], [[2], [3]]], 's32'),
      F((3, 2), integers=True, lo=-8, hi=8))


def register(add):
  register_gather(add)
  register_scatter(add)
