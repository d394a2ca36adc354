"""dot_* and conv_*: dot_general and convolution in their forward and gradient forms."""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import B, C, F, I

HIGHEST = lax.Precision.HIGHEST


def register_dot(add):
  add('dot_vv_f32', jnp.dot, F((64,)), F((64,)))
  add('dot_mv_f32', jnp.dot, F((32, 64)), F((64,)))
  add('dot_vm_f32', jnp.dot, F((48,)), F((48, 16)))
  add('dot_mm_f32', jnp.matmul, F((64, 64)), F((64, 64)))
  add('dot_mm_rect_f32', jnp.matmul, F((16, 48)), F((48, 24)))
  add('dot_mm_highest_f32', lambda a, b: jnp.matmul(a, b, precision=HIGHEST), F((32, 40)),
      F((40, 24)))
  for t in ('bf16', 'f16', 'f64', 'c64', 'c128'):
    mk = C if t[0] == 'c' else F
    add(f'dot_mm_{t}', jnp.matmul, mk((32, 48), t, -1, 1), mk((48, 16), t, -1, 1))
  add('dot_mm_bf16_to_f32', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
      F((32, 64), 'bf16'), F((64, 16), 'bf16'))
  add('dot_mm_f16_to_f32', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
      F((16, 32), 'f16'), F((32, 16), 'f16'))
  add('dot_mm_s8_to_s32', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
      I((32, 64), 's8'), I((64, 16), 's8'))
  add('dot_mm_u8_to_s32', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
      I((16, 32), 'u8'), I((32, 8), 'u8'))
  add('dot_mm_s32', jnp.matmul, I((16, 32), 's32', -1000, 1000), I((32, 8), 's32', -1000, 1000))
  add('dot_mm_s8_wrap', jnp.matmul, I((8, 16), 's8'), I((16, 8), 's8'))
  add('dot_mm_s64', jnp.matmul, I((8, 16), 's64', -10**6, 10**6), I((16, 4), 's64', -10**6, 10**6))
  add('dot_mm_pred', jnp.matmul, B((8, 16)), B((16, 4)))
  add('dot_mm_f8e4m3fn', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
      F((16, 32), 'f8e4m3fn', -4, 4), F((32, 16), 'f8e4m3fn', -4, 4))
  add('dot_mm_f8e5m2', lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
      F((16, 32), 'f8e5m2', -4, 4), F((32, 16), 'f8e5m2', -4, 4))
  add('dot_mm_f8e4m3fn_out', jnp.matmul, F((8, 16), 'f8e4m3fn', -2, 2),
      F((16, 8), 'f8e4m3fn', -2, 2))
  add('dot_mm_s4', jnp.matmul, I((8, 16), 's4'), I((16, 8), 's4'))
  add('dot_mm_s4_widened_to_s32', lambda a, b: lax.dot(a.astype(jnp.int8), b.astype(jnp.int8),
                                                       preferred_element_type=jnp.int32),
      I((8, 16), 's4'), I((16, 8), 's4'))
  # einsums / dot_general with batch and several contracting dimensions
  es = lambda spec: (lambda a, b: jnp.einsum(spec, a, b))  # noqa: E731
  add('dot_einsum_bmm_f32', es('bij,bjk->bik'), F((4, 8, 16)), F((4, 16, 8)))
  add('dot_einsum_attn_f32', es('bhqd,bhkd->bhqk'), F((2, 3, 8, 16)), F((2, 3, 8, 16)))
  add('dot_einsum_multi_contract_f32', es('abcd,cdbe->ae'), F((4, 3, 5, 2)), F((5, 2, 3, 6)))
  add('dot_einsum_batch_middle_f32', es('ibj,jbk->bik'), F((5, 3, 4)), F((4, 3, 6)))
  add('dot_einsum_rowdot_f32', es('ij,ij->i'), F((8, 16)), F((8, 16)))
  add('dot_einsum_outer_f32', es('i,j->ij'), F((8,)), F((6,)))
  add('dot_einsum_bf16_f32', lambda a, b: jnp.einsum('bqd,bkd->bqk', a, b,
                                                     preferred_element_type=jnp.float32),
      F((2, 8, 32), 'bf16'), F((2, 8, 32), 'bf16'))
  add('dot_general_batch_not_leading_f32', lambda a, b: lax.dot_general(
      a, b, (((2, 0), (0, 3)), ((1,), (2,)))), F((3, 4, 5, 2)), F((5, 6, 4, 3)))
  add('dot_general_highest_f16', lambda a, b: lax.dot_general(
      a, b, (((1,), (1,)), ((0,), (0,))), precision=HIGHEST, preferred_element_type=jnp.float32),
      F((4, 16, 3), 'f16'), F((4, 16, 5), 'f16'))
  add('dot_general_c64_batch', lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
      C((3, 4, 5)), C((3, 5, 2)))


def _conv(dn, strides=None, padding='VALID', lhs_dil=None, rhs_dil=None, groups=1, bgroups=1,
          pet=None):
  def fn(x, k):
    nd = x.ndim - 2
    return lax.conv_general_dilated(
        x, k, strides or (1,) * nd, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
        dimension_numbers=dn, feature_group_count=groups, batch_group_count=bgroups,
        preferred_element_type=pet)
  return fn


NCHW = ('NCHW', 'OIHW', 'NCHW')
NHWC = ('NHWC', 'HWIO', 'NHWC')


def register_conv(add):
  add('conv_1d_nwc_same_f32', _conv(('NWC', 'WIO', 'NWC'), padding='SAME'), F((2, 16, 3)),
      F((3, 3, 4)))
  add('conv_1d_ncw_stride_f32', _conv(('NCH', 'OIH', 'NCH'), strides=(2,)), F((2, 3, 17)),
      F((4, 3, 5)))
  x = F((2, 3, 10, 10))
  k = F((4, 3, 3, 3))
  add('conv_2d_nchw_valid_f32', _conv(NCHW), x, k)
  add('conv_2d_nchw_same_f32', _conv(NCHW, padding='SAME'), x, k)
  add('conv_2d_nchw_stride_f32', _conv(NCHW, strides=(2, 3), padding='SAME'), x, k)
  add('conv_2d_explicit_pad_f32', _conv(NCHW, padding=((1, 2), (0, 1))), x, k)
  add('conv_2d_negative_pad_f32', _conv(NCHW, padding=((-1, 0), (1, -2))), x, k)
  add('conv_2d_lhs_dilation_f32', _conv(NCHW, padding=((2, 2), (1, 1)), lhs_dil=(2, 2)),
      F((2, 3, 5, 5)), k)
  add('conv_2d_rhs_dilation_f32', _conv(NCHW, padding='SAME', rhs_dil=(2, 1)), x, k)
  add('conv_2d_all_dilations_f32', _conv(NCHW, strides=(2, 1), padding=((1, 0), (2, 1)),
                                         lhs_dil=(1, 2), rhs_dil=(2, 2)), F((1, 3, 9, 6)), k)
  add('conv_2d_nhwc_same_f32', _conv(NHWC, padding='SAME'), F((2, 10, 10, 3)), F((3, 3, 3, 4)))
  add('conv_2d_nhwc_stride_f32', _conv(NHWC, strides=(2, 2), padding='VALID'),
      F((2, 11, 11, 3)), F((3, 3, 3, 8)))
  add('conv_2d_mixed_layout_f32', _conv(('NHWC', 'OIHW', 'NCHW'), padding='SAME'),
      F((2, 6, 7, 3)), F((4, 3, 3, 2)))
  add('conv_2d_1x1_f32', _conv(NHWC), F((2, 6, 6, 8)), F((1, 1, 8, 16)))
  add('conv_2d_grouped_f32', _conv(NCHW, padding='SAME', groups=2), F((2, 4, 8, 8)),
      F((6, 2, 3, 3)))
  add('conv_2d_depthwise_f32', _conv(NHWC, padding='SAME', groups=4), F((2, 8, 8, 4)),
      F((3, 3, 1, 8)))
  add('conv_2d_batch_group_f32', _conv(NCHW, bgroups=2), F((4, 3, 6, 6)), F((4, 3, 3, 3)))
  add('conv_3d_ncdhw_f32', _conv(('NCDHW', 'OIDHW', 'NCDHW'), padding='SAME'),
      F((1, 2, 5, 6, 6)), F((3, 2, 3, 3, 3)))
  add('conv_3d_ndhwc_stride_f32', _conv(('NDHWC', 'DHWIO', 'NDHWC'), strides=(1, 2, 2)),
      F((1, 4, 7, 7, 2)), F((2, 3, 3, 2, 3)))
  add('conv_2d_bf16', _conv(NHWC, padding='SAME'), F((2, 8, 8, 3), 'bf16'), F((3, 3, 3, 4), 'bf16'))
  add('conv_2d_bf16_to_f32', _conv(NHWC, padding='SAME', pet=jnp.float32), F((2, 8, 8, 3), 'bf16'),
      F((3, 3, 3, 4), 'bf16'))
  add('conv_2d_f16', _conv(NCHW, padding='SAME'), F((2, 3, 8, 8), 'f16'), F((4, 3, 3, 3), 'f16'))
  add('conv_2d_f64', _conv(NCHW, padding='SAME'), F((2, 3, 8, 8), 'f64'), F((4, 3, 3, 3), 'f64'))
  add('conv_2d_c64', _conv(NCHW, padding='SAME'), C((1, 2, 6, 6)), C((2, 2, 3, 3)))
  add('conv_2d_s8_to_s32', _conv(NHWC, padding='SAME', pet=jnp.int32), I((1, 6, 6, 3), 's8'),
      I((3, 3, 3, 4), 's8'))
  add('conv_2d_s32', _conv(NHWC, padding='VALID'), I((1, 6, 6, 3), 's32', -100, 100),
      I((3, 3, 3, 4), 's32', -100, 100))
  add('conv_transpose_2d_f32', lambda x, k: lax.conv_transpose(
      x, k, (2, 2), 'SAME', dimension_numbers=NHWC), F((2, 5, 5, 4)), F((3, 3, 4, 3)))

  # Gradients: w.r.t. the input (backward data: lhs-dilated conv with a reversed kernel) and
  # w.r.t. the kernel (backward filter); grouped convs produce batch_group_count.
  def grad_input(fwd, xs):
    def fn(k, g):  # the input gradient of a conv is linear in g and does not read x
      return jax.vjp(lambda x: fwd(x, k), jnp.zeros(xs, k.dtype))[1](g)[0]
    return fn

  def grad_kernel(fwd, ks):
    def fn(x, g):  # the kernel gradient does not read the kernel
      return jax.vjp(lambda k: fwd(x, k), jnp.zeros(ks, x.dtype))[1](g)[0]
    return fn

  cases = [
      ('strided', _conv(NCHW, strides=(2, 2), padding=((1, 1), (1, 1))), (2, 3, 9, 9),
       (4, 3, 3, 3), (2, 4, 5, 5)),
      ('same_nhwc', _conv(NHWC, padding='SAME'), (2, 8, 8, 3), (3, 3, 3, 4), (2, 8, 8, 4)),
      ('dilated', _conv(NCHW, rhs_dil=(2, 2), padding='VALID'), (1, 2, 9, 9), (3, 2, 3, 3),
       (1, 3, 5, 5)),
      ('grouped', _conv(NCHW, padding='SAME', groups=2), (2, 4, 6, 6), (6, 2, 3, 3),
       (2, 6, 6, 6)),
      ('depthwise', _conv(NHWC, padding='SAME', groups=3), (2, 6, 6, 3), (3, 3, 1, 3),
       (2, 6, 6, 3)),
      ('1d', _conv(('NWC', 'WIO', 'NWC'), strides=(2,), padding='SAME'), (2, 12, 3), (5, 3, 4),
       (2, 6, 4)),
  ]
  for name, fwd, xs, ks, gs in cases:
    add(f'conv_grad_input_{name}_f32', grad_input(fwd, xs), F(ks), F(gs))
    add(f'conv_grad_kernel_{name}_f32', grad_kernel(fwd, ks), F(xs), F(gs))


def register(add):
  register_dot(add)
  register_conv(add)
