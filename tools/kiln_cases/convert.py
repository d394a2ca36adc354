"""ew_convert_*, ew_bitcast_*, ew_reduce_precision_*: type conversions."""

import jax.numpy as jnp
import numpy as np
from jax import lax

from .spec import B, BITS, C, DTYPES, F, FBITS, I, V, int_range

NAN, INF = float('nan'), float('inf')
BASE_TYPES = ('pred', 's8', 'u8', 's16', 'u16', 's32', 'u32', 'f16', 'bf16', 'f32', 'c64')
X64_TYPES = ('s64', 'u64', 'f64', 'c128')
F8_TYPES = ('f8e4m3fn', 'f8e5m2', 'f8e4m3fnuz', 'f8e5m2fnuz', 'f8e4m3b11fnuz', 'f8e4m3',
            'f8e3m4', 'f8e8m0fnu')

# Values a float source holds: exact small integers, ties, out-of-range magnitudes, specials.
FLOAT_SOURCE = (NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.9, -0.9, 127.0, 127.5,
                128.0, -128.0, -129.0, 255.0, 256.0, 300.0, -300.0, 32767.0, 32768.0, 65535.0,
                65536.0, 70000.0, -70000.0, 2147483520.0, 2147483648.0, -2147483648.0,
                4294967040.0, 4294967296.0, 1e10, -1e10, 1e30, -1e30, 1.0, -1.0, 3.0, -7.0,
                1e-3, 6.1e-5, 3e-5, 1e-7)


def _convert_all(dsts):
  def fn(x):
    return tuple(lax.convert_element_type(x, DTYPES[t]) for t in dsts if DTYPES[t] != x.dtype)
  return fn


def _source(t):
  if t == 'pred':
    return B((64,))
  if t in ('c64', 'c128'):
    return C((64,), t, -300, 300, (complex(NAN, 1), complex(1, NAN), complex(INF, -INF),
                                  -0.0 + 0j, 0.5 + 0.5j, 2.5 - 7j, 1e10 + 1j))
  if t in ('f16', 'bf16', 'f32', 'f64'):
    special = FLOAT_SOURCE
    if t == 'f16':
      special = tuple(v for v in FLOAT_SOURCE if not (abs(v) > 65504 and abs(v) != INF))
    return F((64,), t, -200, 200, special)
  lo, hi = int_range(t)
  return I((64,), t, special=(lo, hi, 0, 1, -1, lo + 1, hi - 1, 127, 128, 255, 256, 32767, 32768,
                              65535, 65536, 16777217, 2**31 - 1, 2**31))


def _allbits(dtype):
  """Every bit pattern of an 8-bit float type (256 values)."""
  def make(rng):
    del rng
    return np.arange(256, dtype=np.uint8).view(DTYPES[dtype]).reshape(16, 16)
  return make


def _finite_bits(dtype):
  """The 8-bit patterns of a float type that widen to finite values or canonical NaNs."""
  def make(rng):
    del rng
    x = np.arange(256, dtype=np.uint8).view(DTYPES[dtype])
    wide = x.astype(np.float32)
    keep = np.isfinite(wide) | (x.view(np.uint8) == np.array([np.nan], DTYPES[dtype]).view(
        np.uint8)[0])
    y = x[keep]
    return np.resize(y, 256).reshape(16, 16)
  return make


def register_convert(add):
  for src in BASE_TYPES:
    add(f'ew_convert_from_{src}', _convert_all(BASE_TYPES), _source(src))
  for src in X64_TYPES:
    add(f'ew_convert_from_{src}', _convert_all(BASE_TYPES + X64_TYPES), _source(src))
  for src in BASE_TYPES:
    add(f'ew_convert_to64_from_{src}', _convert_all(X64_TYPES), _source(src), x64=True)

  sat_targets = ('s8', 'u8', 's16', 'u16', 's32', 'u32')
  add('ew_convert_sat_f32', _convert_all(sat_targets), V(FLOAT_SOURCE + (1.0,) * 4, 'f32'))
  add('ew_convert_sat_f64', _convert_all(sat_targets + ('s64', 'u64')),
      V(FLOAT_SOURCE + (9.3e18, -9.3e18, 1.8e19, 1.9e19), 'f64'))
  # f32 -> bf16 / f16 rounding: exact ties (even and odd), just above/below, NaN payloads in
  # the dropped bits, overflow to infinity, f16 subnormal results.
  bf16_bits = [0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0xbf808000, 0xbf818000,
               0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x7f800001, 0xff800001, 0x7fc00000,
               0x7f800000, 0xff800000, 0x00800000, 0x80800000, 0x3f800000, 0x40490fdb,
               0x477fe000, 0x477ff000, 0x477fefff, 0x38800000, 0x33800000, 0x33000000,
               0x33000001, 0x337fffff, 0x387fc000, 0x387fe000, 0x38000000, 0x3a000000,
               0x3f801000, 0x3f803000]
  add('ew_convert_round_f32', lambda x: (x.astype(jnp.bfloat16), x.astype(jnp.float16)),
      FBITS(bf16_bits, 'f32'))
  add('ew_convert_f16_bf16', lambda x, y: (x.astype(jnp.bfloat16), y.astype(jnp.float16)),
      F((64,), 'f16', -65504, 65504, (6.1e-5, 6e-8, 1e-7, 65504.0, NAN, INF, -0.0, 1.0 / 3)),
      F((64,), 'bf16', -1e5, 1e5, (1e-5, 1e-7, 3e-8, 65520.0, 65504.0, 1e30, NAN, INF, -0.0)))
  add('ew_convert_round_f64', lambda x: (x.astype(jnp.float32), x.astype(jnp.bfloat16),
                                         x.astype(jnp.float16)),
      V([1 + 2**-24, 1 + 3 * 2**-24, 1 + 2**-24 + 2**-50, 1 - 2**-25, 3.4028235e38, 3.5e38,
         1e-300, NAN, INF, -INF, -0.0, 1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40, 65520.0,
         65519.99, 0.1, 1.0 / 3, -2.5e-8, 6e-8, 2.9802322387695312e-08] * 2, 'f64'))
  add('ew_convert_int_to_float', lambda x, y: (x.astype(jnp.float32), x.astype(jnp.float16),
                                               x.astype(jnp.bfloat16), y.astype(jnp.float32)),
      V([16777217, 16777219, -16777217, 2**31 - 1, -2**31, 65504, 65520, 65519, 2049, 2051,
         257, 259, 0, -1, 33554435, 100000], 's32'),
      V([16777217, 4294967295, 2**31, 4294967040, 4294967168, 1, 0, 3] * 2, 'u32'))
  add('ew_convert_int64_to_float', lambda x, y: (x.astype(jnp.float32), x.astype(jnp.float64),
                                                 y.astype(jnp.float32), y.astype(jnp.float64)),
      V([2**53 + 1, 2**53 + 3, -2**63, 2**63 - 1, 2**24 + 1, -(2**24 + 1), 0, 7], 's64'),
      V([2**64 - 1, 2**63, 2**53 + 1, 2**32 + 1, 1, 0, 2**60 + 2**36, 3], 'u64'), x64=True)
  add('ew_convert_int_narrowing', lambda x: (x.astype(jnp.int8), x.astype(jnp.uint8),
                                             x.astype(jnp.int16), x.astype(jnp.uint16),
                                             x.astype(jnp.uint32)),
      I((64,), 's32', special=(-2**31, 2**31 - 1, 255, 256, -1, -129, 65535, 65536, 32768)))
  add('ew_convert_bool_numbers', lambda b, x, c: (b.astype(jnp.float32), b.astype(jnp.int32),
                                                  x.astype(jnp.bool_), c.astype(jnp.bool_),
                                                  b.astype(jnp.complex64)),
      B((32,)), F((32,), 'f32', -2, 2, (0.0, -0.0, NAN, INF, 1e-30)),
      C((32,), 'c64', -1, 1, (0j, 1j, -0.0 + 0j, complex(NAN, 0))))


def register_bitcast(add):
  bc = lax.bitcast_convert_type
  add('ew_bitcast_f32_s32', lambda x, y: (bc(x, jnp.int32), bc(y, jnp.float32)),
      F((8, 8), 'f32', -1e3, 1e3, (NAN, -0.0, INF)),
      BITS((8, 8), 'u32'))
  add('ew_bitcast_f32_u8', lambda x: bc(x, jnp.uint8), F((4, 4), 'f32', -10, 10, (NAN, -0.0)))
  add('ew_bitcast_u8_f32', lambda x: bc(x, jnp.float32), BITS((4, 4, 4), 'u8'))
  add('ew_bitcast_s32_s16', lambda x: bc(x, jnp.int16), BITS((4, 4), 's32'))
  add('ew_bitcast_s16_s32', lambda x: bc(x, jnp.int32), BITS((4, 4, 2), 's16'))
  add('ew_bitcast_f16_s16', lambda x, y: (bc(x, jnp.int16), bc(y, jnp.float16)),
      F((8, 8), 'f16', -100, 100, (NAN, -0.0, INF)), BITS((8, 8), 's16'))
  add('ew_bitcast_bf16_u16', lambda x, y: (bc(x, jnp.uint16), bc(y, jnp.bfloat16)),
      F((8, 8), 'bf16', -100, 100, (NAN, -0.0, INF)), BITS((8, 8), 'u16'))
  add('ew_bitcast_s8_u8', lambda x: (bc(x, jnp.uint8),), BITS((16,), 's8'))
  add('ew_bitcast_f64_u64', lambda x, y: (bc(x, jnp.uint64), bc(y, jnp.float64)),
      F((16,), 'f64', -1e3, 1e3, (NAN, -0.0, INF)), BITS((16,), 'u64'))
  add('ew_bitcast_f64_u32', lambda x: bc(x, jnp.uint32), F((4, 4), 'f64', -1e3, 1e3))
  add('ew_bitcast_s32_f64', lambda x: bc(x, jnp.float64), BITS((4, 2), 's32'), x64=True)
  add('ew_bitcast_f8e4m3fn_u8', lambda x: bc(x, jnp.uint8), _finite_bits('f8e4m3fn'))


def register_reduce_precision(add):
  rp = lax.reduce_precision
  special = (NAN, INF, -INF, 0.0, -0.0, 65504.0, 65519.0, 65520.0, 70000.0, 1e-5, 6e-8, 3e-8,
             2.9e-8, 1e-10, 448.0, 464.0, 240.0, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8,
             1 + 3 * 2**-8, 3.4e38, 1e-30)
  add('ew_reduce_precision_f32', lambda x: (rp(x, 5, 10), rp(x, 8, 7), rp(x, 4, 3), rp(x, 5, 2),
                                            rp(x, 8, 23), rp(x, 3, 1)),
      F((64,), 'f32', -100, 100, special))
  add('ew_reduce_precision_f64', lambda x: (rp(x, 8, 23), rp(x, 5, 10), rp(x, 11, 30)),
      F((64,), 'f64', -100, 100, special + (1e300, 1e-300, 1 + 2**-24, 1 + 2**-40)))
  add('ew_reduce_precision_bf16', lambda x: rp(x, 5, 3), F((64,), 'bf16', -100, 100, special))
  add('ew_reduce_precision_f16', lambda x: (rp(x, 5, 3), rp(x, 4, 7)),
      F((64,), 'f16', -100, 100, special[:20]))


def register_narrow(add):
  for t in F8_TYPES:
    add(f'ew_convert_f32_to_{t}', lambda x, t=t: x.astype(DTYPES[t]),
        F((64,), 'f32', -500, 500, (NAN, INF, -INF, 0.0, -0.0, 448.0, 449.0, 464.0, 480.0, 500.0,
                                    57344.0, 61440.0, 1e6, 0.0009765625, 0.001953125, 0.0029296875,
                                    2**-9, 3 * 2**-10, 2**-17, 1.0625, 1.125, 1.1875, 17.0, 18.0,
                                    240.0, 248.0, 1e-10, 2.0**-126, 2.0**127)))
    add(f'ew_convert_{t}_to_wide', lambda x: (x.astype(jnp.float32), x.astype(jnp.float16),
                                              x.astype(jnp.bfloat16)), _finite_bits(t))
  add('ew_convert_f8e4m3fn_f8e5m2', lambda x, y: (x.astype(jnp.float8_e5m2),
                                                  y.astype(jnp.float8_e4m3fn)),
      _finite_bits('f8e4m3fn'), _finite_bits('f8e5m2'))
  add('ew_convert_f16_to_f8e4m3fn', lambda x: (x.astype(jnp.float8_e4m3fn),
                                               x.astype(jnp.float8_e5m2)),
      F((64,), 'f16', -500, 500, (NAN, INF, 0.0009765625, 0.0029296875, 464.0, 1.0625)))
  add('ew_convert_s4', lambda x: (x.astype(jnp.int32), x.astype(jnp.float32), x.astype(jnp.uint8)),
      I((16,), 's4', special=(-8, 7, 0, -1)))
  add('ew_convert_u4', lambda x: (x.astype(jnp.int32), x.astype(jnp.float32), x.astype(jnp.int4)),
      I((16,), 'u4', special=(0, 15, 8, 7)))
  add('ew_convert_to_s4', lambda x, y: (x.astype(jnp.int4), y.astype(jnp.int4), y.astype(jnp.uint4)),
      I((16,), 's32', -20, 20, (-8, 7, 8, -9, 15, 16)),
      F((16,), 'f32', -10, 10, (7.5, -8.5, 100.0, NAN, -0.5, 15.5)))
  add('ew_convert_e8m0fnu', lambda x: x.astype(jnp.float8_e8m0fnu),
      F((64,), 'f32', 0.001, 1000, (1.0, 1.5, 3.0, 0.75, NAN, 2.0**127, 2.0**-126, 2.0**-125)))


def register(add):
  register_convert(add)
  register_bitcast(add)
  register_reduce_precision(add)
  register_narrow(add)
