"""shape_*: broadcast, reshape, transpose, slicing, dynamic slicing, concatenate, pad, rev, iota."""

import jax.numpy as jnp
import numpy as np
from jax import lax

from .spec import B, C, F, I, V

NAN = float('nan')


def register(add):
  # broadcast / reshape / transpose
  add('shape_broadcast_in_dim_f32', lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)),
      F((3,)))
  add('shape_broadcast_scalar_s32', lambda x: lax.broadcast_in_dim(x, (4, 5), ()),
      I((), 's32', 1, 100))
  add('shape_broadcast_to_bf16', lambda x: jnp.broadcast_to(x, (2, 3, 5)), F((3, 1), 'bf16'))
  add('shape_broadcast_pred', lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (0, 2)), B((4, 3)))
  add('shape_reshape_f32', lambda x: (x.reshape(2, 3, 4), x.reshape(24), x.reshape(4, 1, 6)),
      F((4, 6)))
  add('shape_reshape_c64', lambda x: x.reshape(3, 8), C((2, 3, 4)))
  add('shape_squeeze_expand_f32', lambda x: (jnp.squeeze(x), jnp.expand_dims(x, (0, 3)),
                                             x[:, None, :, :]),
      F((3, 1, 4)))
  add('shape_transpose_2d_f32', lambda x: x.T, F((5, 7)))
  add('shape_transpose_3d_s8', lambda x: (jnp.transpose(x, (2, 0, 1)), jnp.transpose(x, (1, 2, 0))),
      I((3, 4, 5), 's8'))
  add('shape_transpose_4d_f16', lambda x: jnp.transpose(x, (0, 2, 3, 1)), F((2, 3, 4, 5), 'f16'))
  add('shape_transpose_c64', lambda x: jnp.transpose(x, (1, 0, 2)), C((3, 4, 2)))
  add('shape_transpose_reshape_f32', lambda x: jnp.transpose(x, (1, 0, 2)).reshape(4, 6) * 2,
      F((3, 2, 4)))
  add('shape_tile_repeat_f32', lambda x: (jnp.tile(x, (2, 3)), jnp.repeat(x, 2, axis=0),
                                          jnp.stack([x, -x], axis=1)), F((3, 4)))
  # slicing
  add('shape_slice_f32', lambda x: (x[1:5, 2:7], lax.slice(x, (1, 0), (7, 8), (2, 3)), x[::3, 1::2],
                                    x[-1]), F((8, 8)))
  add('shape_slice_3d_u16', lambda x: lax.slice(x, (0, 1, 2), (3, 4, 6), (2, 2, 3)),
      I((4, 5, 7), 'u16'))
  add('shape_split_f32', lambda x: tuple(jnp.split(x, [2, 5], axis=1)), F((3, 8)))
  for t in ('s32', 'u8'):
    add(f'shape_dynamic_slice_{t}',
        lambda x, i, j: (lax.dynamic_slice(x, (i, j), (3, 4)),),
        F((8, 8)), I((), t, 2, 3), I((), t, 1, 3))
  add('shape_dynamic_slice_oob_s32',
      lambda x, i, j, k: (lax.dynamic_slice(x, (i, j), (3, 4)), lax.dynamic_slice(x, (j, k), (3, 4)),
                          lax.dynamic_slice(x, (k, i), (8, 2))),
      F((8, 8)), V(7, 's32'), V(100, 's32'), V(-3, 's32'))
  add('shape_dynamic_slice_oob_u32', lambda x, i, j: lax.dynamic_slice(x, (i, j), (3, 4)),
      F((8, 8)), V(7, 'u32'), V(4294967295, 'u32'))
  add('shape_dynamic_slice_s64', lambda x, i: lax.dynamic_slice_in_dim(x, i, 4, axis=1),
      F((4, 8)), V(6, 's64'))
  add('shape_dynamic_index_f32', lambda x, i: x[i], F((6, 5)), V(-2, 's32'))
  add('shape_dynamic_update_slice_f32',
      lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
      F((8, 8)), F((3, 4), lo=10, hi=20), V(2, 's32'), V(3, 's32'))
  add('shape_dynamic_update_slice_oob_s32',
      lambda x, u, i, j, k: (lax.dynamic_update_slice(x, u, (i, j)),
                             lax.dynamic_update_slice(x, u, (k, i)),
                             lax.dynamic_update_slice(x, u, (j, k))),
      I((8, 8), 's32', -100, 100), I((3, 4), 's32', 1000, 2000), V(7, 's32'), V(100, 's32'),
      V(-5, 's32'))
  add('shape_dynamic_update_slice_bf16', lambda x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, 1),
      F((4, 8), 'bf16'), F((4, 2), 'bf16', 5, 6), V(5, 'u8'))
  # concatenate / pad / rev
  add('shape_concatenate_f32', lambda x, y, z: (jnp.concatenate([x, y], 0),
                                                jnp.concatenate([x, z, x], 1)),
      F((2, 3)), F((4, 3)), F((2, 5)))
  add('shape_concatenate_pred', lambda x, y: jnp.concatenate([x, y], 0), B((2, 3)), B((1, 3)))
  add('shape_concatenate_bf16', lambda x, y: jnp.concatenate([x, y, x], -1), F((2, 2, 1), 'bf16'),
      F((2, 2, 3), 'bf16'))
  add('shape_pad_f32', lambda x, v: (lax.pad(x, v, [(1, 2, 0), (0, 3, 1)]),
                                     lax.pad(x, v, [(-1, 2, 1), (2, -3, 0)]),
                                     lax.pad(x, v, [(0, 0, 2), (-2, -1, 1)])),
      F((4, 5)), V(-9.5))
  add('shape_pad_s8', lambda x: lax.pad(x, np.int8(7), [(2, -1, 1)]), I((6,), 's8'))
  add('shape_pad_negative_interior_f16', lambda x: lax.pad(x, jnp.float16(0), [(-3, -2, 2), (1, 1, 0)]),
      F((4, 3), 'f16'))
  add('shape_jnp_pad_modes_f32', lambda x: (jnp.pad(x, ((1, 2), (2, 1)), mode='reflect'),
                                            jnp.pad(x, 2, mode='edge'),
                                            jnp.pad(x, ((0, 1), (1, 0)), mode='wrap'),
                                            jnp.pad(x, 1, mode='symmetric')),
      F((4, 5)))
  add('shape_rev_f32', lambda x: (lax.rev(x, (0,)), lax.rev(x, (0, 2)), jnp.flip(x)), F((3, 4, 2)))
  add('shape_roll_s32', lambda x, s: (jnp.roll(x, 3, axis=1), jnp.roll(x, s, axis=0)),
      I((4, 6), 's32'), V(-5, 's32'))
  add('shape_tril_triu_f32', lambda x: (jnp.tril(x), jnp.triu(x, 1), jnp.diagonal(x), jnp.trace(x)),
      F((5, 5)))
  # iota
  add('shape_iota_s32', lambda: (lax.iota(jnp.int32, 10), lax.broadcasted_iota(jnp.int32, (3, 4), 1),
                                 lax.broadcasted_iota(jnp.int32, (3, 4), 0)))
  add('shape_iota_f32', lambda: (lax.iota(jnp.float32, 7),
                                 lax.broadcasted_iota(jnp.float32, (2, 3, 4), 2)))
  add('shape_iota_u8', lambda: lax.iota(jnp.uint8, 300))
  add('shape_iota_bf16', lambda: (lax.iota(jnp.bfloat16, 300), lax.iota(jnp.float16, 17)))
  add('shape_iota_s64', lambda: lax.broadcasted_iota(jnp.int64, (4, 5), 1))
  add('shape_arange_linspace_f32', lambda x: (jnp.arange(12, dtype=jnp.float32) * x,
                                              jnp.linspace(0.0, 1.0, 9) + x),
      V(1.5))
  add('shape_eye_f32', lambda x: jnp.eye(5, 7, k=1) * x, V(2.5))
