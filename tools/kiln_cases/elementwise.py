"""ew_*: elementwise math over every dtype where the op is defined.

Inputs avoid f32 denormals (XLA's CPU backend flushes them, see the README), except where a
case says otherwise.
"""


import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax

from .spec import B, C, F, I, V, int_range

FLOATS = ('f32', 'f16', 'bf16', 'f64')
SIGNED = ('s8', 's16', 's32', 's64')
UNSIGNED = ('u8', 'u16', 'u32', 'u64')
INTS = SIGNED + UNSIGNED
NAN, INF = float('nan'), float('inf')
GENERIC_SPECIALS = (NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0)
SHAPE = (8, 8)

# (name, fn, lo, hi, extra specials for the f32 special case)
UNARY_FLOAT = [
    ('abs', jnp.abs, -4, 4, (-2.5,)),
    ('neg', lax.neg, -4, 4, ()),
    ('sign', jnp.sign, -4, 4, (1e-30, -1e-30)),
    ('floor', jnp.floor, -5, 5, (-0.5, 0.5, -1.5, 1e30, 8388609.0)),
    ('ceil', jnp.ceil, -5, 5, (-0.5, 0.5, -1.5, 1e30, 8388609.0)),
    ('round_even', jnp.round, -5, 5, (0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 8388609.0)),
    ('round_afz', lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), -5, 5,
     (0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 8388609.0)),
    ('exp', jnp.exp, -8, 8, (89.0, -80.0, 1e-8)),
    ('exp2', jnp.exp2, -10, 10, (128.0, -120.0, 0.5)),
    ('expm1', jnp.expm1, -5, 5, (1e-8, -1e-8, 89.0, -80.0)),
    ('log', jnp.log, 0.01, 100, (-1.0, 1e-30, 1e30, 2.0)),
    ('log1p', jnp.log1p, -0.99, 10, (-2.0, 1e-8, -1e-8, 1e30)),
    ('sqrt', jnp.sqrt, 0, 100, (-1.0, 1e-30, 4.0, 1e30)),
    ('rsqrt', lax.rsqrt, 0.01, 100, (-1.0, 1e-30, 4.0, 1e30)),
    ('cbrt', jnp.cbrt, -100, 100, (-8.0, 27.0, 1e-30, 1e30)),
    ('sin', jnp.sin, -10, 10, (100.0, -100.0, 3.1415927)),
    ('cos', jnp.cos, -10, 10, (100.0, -100.0, 3.1415927)),
    ('tan', jnp.tan, -1.5, 1.5, (1.5707964, -1.5707964, 100.0)),
    ('tanh', jnp.tanh, -6, 6, (20.0, -20.0, 1e-8, 0.5)),
    ('sinh', jnp.sinh, -5, 5, (89.0, -89.0, 90.0, 1e-8)),
    ('cosh', jnp.cosh, -5, 5, (89.0, -89.0, 90.0, 1e-8)),
    ('asin', jnp.arcsin, -1, 1, (1.5, -1.5, 0.5, 1e-8)),
    ('acos', jnp.arccos, -1, 1, (1.5, -1.5, 0.5, 1e-8)),
    ('atan', jnp.arctan, -10, 10, (1e30, -1e30, 1e-8)),
    ('asinh', jnp.arcsinh, -10, 10, (1e30, -1e30, 1e-8)),
    ('acosh', jnp.arccosh, 1, 10, (0.5, 1e30, 2.0)),
    ('atanh', jnp.arctanh, -0.99, 0.99, (1.5, -1.5, 0.5, 1e-8)),
    ('erf', jsp.erf, -2.5, 2.5, (5.0, -5.0, 1e-8)),
    ('erfc', jsp.erfc, -2.5, 2.5, (5.0, -5.0, 1e-8)),
    ('erf_inv', jsp.erfinv, -0.99, 0.99, (1.5, -1.5, 0.5, 1e-8)),
    ('logistic', jax.nn.sigmoid, -8, 8, (80.0, -80.0, 1e-8)),
    ('square', jnp.square, -8, 8, (1e20, 1e-20)),
    ('reciprocal', jnp.reciprocal, 0.25, 4, (1e30, -1e30, 1e-30, -4.0)),
    ('lgamma', jsp.gammaln, 0.1, 10, (-2.5, -1.0, 100.0)),
    ('digamma', jsp.digamma, 0.1, 10, (-2.5, -1.0, 100.0)),
    ('is_finite', jnp.isfinite, -4, 4, (1e30,)),
]

# (name, fn, (lo, hi) of x, (lo, hi) of y, |y| kept at least this)
BINARY_FLOAT = [
    ('add', jnp.add, (-8, 8), (-8, 8), 0),
    ('sub', jnp.subtract, (-8, 8), (-8, 8), 0),
    ('mul', jnp.multiply, (-8, 8), (-8, 8), 0),
    ('div', lax.div, (-8, 8), (-4, 4), 0.25),
    ('max', lax.max, (-4, 4), (-4, 4), 0),
    ('min', lax.min, (-4, 4), (-4, 4), 0),
    ('pow', lax.pow, (0.1, 4), (-3, 3), 0),
    ('atan2', jnp.arctan2, (-3, 3), (-3, 3), 0),
    ('rem', lax.rem, (-10, 10), (-4, 4), 0.5),
    ('nextafter', jnp.nextafter, (-4, 4), (-4, 4), 0),
    ('copysign', jnp.copysign, (-4, 4), (-4, 4), 0),
    ('hypot', jnp.hypot, (-4, 4), (-4, 4), 0),
    ('logaddexp', jnp.logaddexp, (-8, 8), (-8, 8), 0),
    ('floor_divide', jnp.floor_divide, (-10, 10), (-4, 4), 0.5),
    ('mod', jnp.mod, (-10, 10), (-4, 4), 0.5),
]

# Pairs for the f32 special binary cases: every combination of the interesting values.
_SPECIAL_VALUES = (NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5)
SPECIAL_X = tuple(a for a in _SPECIAL_VALUES for _ in _SPECIAL_VALUES)
SPECIAL_Y = tuple(b for _ in _SPECIAL_VALUES for b in _SPECIAL_VALUES)


def compares(x, y):
  return (x == y, x != y, x < y, x <= y, x > y, x >= y)


def away_from_zero(make, min_abs):
  """Wraps an argument maker so that |x| >= min_abs (sign kept)."""
  if not min_abs:
    return make

  def wrapped(rng):
    x = make(rng)
    small = np.abs(x.astype(np.float64)) < min_abs
    x[small] = np.where(x[small].astype(np.float64) < 0, -min_abs, min_abs).astype(x.dtype)
    return x
  return wrapped


def register_float(add):
  for name, fn, lo, hi, extra in UNARY_FLOAT:
    for t in FLOATS:
      add(f'ew_{name}_{t}', fn, F(SHAPE, t, lo, hi))
    add(f'ew_{name}_special_f32', fn, F(SHAPE, 'f32', lo, hi, GENERIC_SPECIALS + extra))
  for name, fn, (xlo, xhi), (ylo, yhi), min_abs in BINARY_FLOAT:
    for t in FLOATS:
      add(f'ew_{name}_{t}', fn, F(SHAPE, t, xlo, xhi),
          away_from_zero(F(SHAPE, t, ylo, yhi), min_abs))
    add(f'ew_{name}_special_f32', fn, F(SHAPE, 'f32', xlo, xhi, SPECIAL_X),
        F(SHAPE, 'f32', ylo, yhi, SPECIAL_Y))
  for t in FLOATS:
    add(f'ew_cmp_{t}', compares, F(SHAPE, t, -3, 3, (NAN, 1.0, NAN, 0.0, INF), integers=True),
        F(SHAPE, t, -3, 3, (1.0, NAN, NAN, -0.0, INF), integers=True))
  add('ew_cmp_special_f32', compares, F(SHAPE, 'f32', -3, 3, SPECIAL_X),
      F(SHAPE, 'f32', -3, 3, SPECIAL_Y))
  # Integer exponents: lax.pow(float, int) and x ** n (integer_pow, unrolled multiplies).
  add('ew_pow_intexp_f32', lax.pow, F(SHAPE, 'f32', -3, 3, (0.0, -0.0, 2.0, NAN, INF)),
      I(SHAPE, 's32', -4, 4, (0, -1, 3, 0, -2)))
  add('ew_pow_intexp_f16', lax.pow, F(SHAPE, 'f16', -3, 3), I(SHAPE, 's32', -3, 3))
  add('ew_integer_pow_f32', lambda x: (x ** 2, x ** 3, x ** -2, x ** 7, lax.integer_pow(x, 0)),
      F(SHAPE, 'f32', -2, 2, (0.0, -0.0, NAN, INF, -INF)))
  add('ew_integer_pow_bf16', lambda x: (x ** 3, x ** -1), F(SHAPE, 'bf16', -2, 2))
  add('ew_pow_special_f32_cases', lax.pow,
      V([0, 0, -0.0, -2, -2, -8, 1, 1, NAN, NAN, INF, -INF, -INF, 0.5, 2, -1] * 4),
      V([0, -1, -1, 2, 3, 1 / 3, NAN, INF, 0, 1, -1, 3, 2, INF, -INF, INF] * 4))
  # Clamp and select.
  add('ew_clamp_f32', lambda lo, x, hi: lax.clamp(lo, x, hi), V(-1.0),
      F(SHAPE, 'f32', -3, 3, (NAN, INF, -INF, -0.0)), V(1.5))
  add('ew_clamp_array_f32', lambda lo, x, hi: lax.clamp(lo, x, hi), F(SHAPE, 'f32', -2, 0),
      F(SHAPE, 'f32', -3, 3, (NAN, INF, -INF)), F(SHAPE, 'f32', 0, 2))
  add('ew_clamp_bf16', lambda lo, x, hi: lax.clamp(lo, x, hi), V(-1.0, 'bf16'),
      F(SHAPE, 'bf16', -3, 3), V(1.5, 'bf16'))
  add('ew_select_f32', lax.select, B(SHAPE), F(SHAPE, 'f32'), F(SHAPE, 'f32', special=(NAN,)))
  add('ew_where_scalar_f32', lambda c, x: jnp.where(c, x, jnp.float32(-7.5)), B(SHAPE),
      F(SHAPE, 'f32'))
  add('ew_where_broadcast_f16', lambda c, x, y: jnp.where(c, x, y), B((8, 1)), F((1, 8), 'f16'),
      F((8, 8), 'f16'))
  add('ew_select_c64', lax.select, B(SHAPE), C(SHAPE), C(SHAPE))
  add('ew_max_min_signed_zero_f32', lambda x, y: (lax.max(x, y), lax.min(x, y)),
      V([0.0, -0.0, 0.0, -0.0] * 4), V([-0.0, 0.0, 0.0, -0.0] * 4), allow_zero=True)
  add('ew_fma_chain_f32', lambda a, b, c: a * b + c * (a - b) / (c + 4), F(SHAPE), F(SHAPE),
      F(SHAPE, lo=0, hi=3))


def _int_specials(t):
  lo, hi = int_range(t)
  return (lo, hi, 0, 1, lo + 1, hi - 1) if lo < 0 else (hi, 0, 1, hi - 1, hi // 2 + 1)


def register_int(add):
  for t in INTS:
    signed = t[0] == 's'
    bits = {'8': 8, '16': 16, '32': 32, '64': 64}[t[1:]]
    lo, hi = int_range(t)
    full_x = I(SHAPE, t, special=_int_specials(t))
    full_y = I(SHAPE, t, special=tuple(reversed(_int_specials(t))))

    def arith(x, y, signed=signed):
      r = [x + y, x - y, x * y, -x, jnp.sign(x), lax.max(x, y), lax.min(x, y)]
      if signed:
        r.append(jnp.abs(x))
      return tuple(r)
    add(f'ew_intarith_{t}', arith, full_x, full_y)

    if signed:
      dx = (lo, lo, 7, -7, 7, -7, 0, 5, hi, lo, hi, -1)
      dy = (-1, 0, 2, 2, -2, -2, 0, 0, -1, lo, lo, lo)
    else:
      dx = (hi, 7, 7, 0, hi, 1, hi, 5)
      dy = (0, 2, 0, 0, hi, hi, 1, hi)
    small = min(hi, 20)
    add(f'ew_intdiv_{t}', lambda x, y: (lax.div(x, y), lax.rem(x, y)),
        I(SHAPE, t, special=dx), I(SHAPE, t, -small if signed else 0, small, dy))
    add(f'ew_intfloordiv_{t}', lambda x, y: (jnp.floor_divide(x, y), jnp.remainder(x, y)),
        I(SHAPE, t, max(lo, -100), min(hi, 100), dx[2:]), I(SHAPE, t, -small if signed else 0,
                                                            small, dy[2:]))
    add(f'ew_intbit_{t}', lambda x, y: (x & y, x | y, x ^ y, ~x, lax.population_count(x),
                                        lax.clz(x)), full_x, full_y)
    amounts = tuple(range(bits - 2, bits + 3)) + (0, 1) + ((-1, -bits) if signed else ())
    add(f'ew_intshift_{t}', lambda x, y: (lax.shift_left(x, y), lax.shift_right_arithmetic(x, y),
                                          lax.shift_right_logical(x, y)),
        full_x, I(SHAPE, t, 0, bits - 1, amounts))
    base = I(SHAPE, t, -6 if signed else 0, 6, (0, 1, 2, 3) + ((-1, -2) if signed else ()))
    add(f'ew_intpow_{t}', lambda x, y: (lax.integer_pow(x, 3), lax.integer_pow(x, 2),
                                        jnp.power(x, y)),
        base, I(SHAPE, t, 0, 9, (0, 1, 5, 9)))
    add(f'ew_intcmp_{t}', lambda x, y, hi=hi: compares(x, y) + (lax.clamp(y, x, y + (hi // 4)),
                                                           lax.select(x < y, x, y)),
        I(SHAPE, t, lo // 2, hi // 2, (0, lo // 2, hi // 2)),
        I(SHAPE, t, lo // 2, hi // 4, (0, hi // 2)))
  add('ew_intmul_wrap_s32', lambda x, y: (x * y, x + y), V([2**31 - 1, -2**31, 65536, 46341] * 4,
                                                           's32'),
      V([2, -1, 65536, 46341] * 4, 's32'))
  add('ew_bool_logic', lambda x, y: (x & y, x | y, x ^ y, ~x, x == y, x != y, x < y, lax.max(x, y),
                                     lax.min(x, y), lax.select(x, y, ~y)), B(SHAPE), B(SHAPE))


UNARY_COMPLEX = [
    ('abs', jnp.abs), ('sign', jnp.sign), ('neg', lax.neg), ('exp', jnp.exp),
    ('expm1', jnp.expm1), ('log', jnp.log), ('log1p', jnp.log1p), ('sqrt', jnp.sqrt),
    ('rsqrt', lax.rsqrt), ('sin', jnp.sin), ('cos', jnp.cos), ('tan', jnp.tan),
    ('tanh', jnp.tanh), ('square', jnp.square), ('reciprocal', jnp.reciprocal),
    ('conj', jnp.conj), ('real', jnp.real), ('imag', jnp.imag), ('is_finite', jnp.isfinite),
]
UNARY_COMPLEX_128 = ('abs', 'exp', 'log', 'sqrt', 'sin', 'tanh', 'conj', 'real', 'imag')


def register_complex(add):
  for name, fn in UNARY_COMPLEX:
    add(f'ew_{name}_c64', fn, C(SHAPE, 'c64', -2, 2))
    if name in UNARY_COMPLEX_128:
      add(f'ew_{name}_c128', fn, C(SHAPE, 'c128', -2, 2))
  add('ew_log_special_c64', jnp.log, C(SHAPE, 'c64', -2, 2, (0j, -1 + 0j, -1 - 0j, complex(INF, 1),
                                                              complex(NAN, 0), 1j, -1j)))
  add('ew_complex_make_f32', lax.complex, F(SHAPE, 'f32', special=(NAN, -0.0)), F(SHAPE, 'f32'))
  add('ew_complex_make_f64', lax.complex, F(SHAPE, 'f64'), F(SHAPE, 'f64'))
  for t in ('c64', 'c128'):
    add(f'ew_cbinary_{t}', lambda x, y: (x + y, x - y, x * y, x / y, x == y, x != y),
        C(SHAPE, t, -3, 3), C(SHAPE, t, -3, 3, (1 + 0j,)))
  add('ew_pow_c64', lax.pow, C(SHAPE, 'c64', 0.2, 2), C(SHAPE, 'c64', -1, 1))
  add('ew_integer_pow_c64', lambda x: (x ** 3, x ** -2), C(SHAPE, 'c64', -1.5, 1.5))
  add('ew_div_special_c64', lax.div, C((16,), 'c64', -3, 3, (1 + 1j, 1e30 + 1e30j, 1 + 0j,
                                                              complex(NAN, 1))),
      C((16,), 'c64', -3, 3, (0j, 1e30 + 1e30j, 1e-30 + 0j, 1 + 1j)))


def register_narrow(add):
  """f8, int4 and mixed precision arithmetic."""
  for t in ('f8e4m3fn', 'f8e5m2'):
    add(f'ew_add_{t}', lambda x, y: x + y, F(SHAPE, t, -8, 8), F(SHAPE, t, -8, 8))
    add(f'ew_mul_{t}', lambda x, y: x * y, F(SHAPE, t, -8, 8), F(SHAPE, t, -8, 8))
  for t in ('s4', 'u4'):
    add(f'ew_intarith_{t}', lambda x, y: (x + y, x * y, x - y, lax.max(x, y)), I(SHAPE, t),
        I(SHAPE, t))
    add(f'ew_intcmp_{t}', compares, I(SHAPE, t), I(SHAPE, t))
  # Denormal arithmetic, each result scaled by 2^126 into [~0.01, 2) after the denormal step so
  # that a backend flushing denormals (0 instead of ~0.5) fails the f32 tolerance; unscaled,
  # results ~1e-38 passed under atol 1e-5 even as zeros. The scaling multiplies are exact.
  up = np.float32(2.0**126)
  add('ew_denormal_f32', lambda x, y: ((x * y) * up, (x + x) * up, (x - y * np.float32(2.0**-127)) * up,
                                       (y * np.float32(2.0**-130)) * up),
      F(SHAPE, 'f32', 1e-39, 1e-38, (1e-45, -1e-40, 1.0, 1e-38)),
      F(SHAPE, 'f32', 0.5, 1.0, (1.0, 1.0, 1e-38, 0.5)),
      note='XLA CPU flushes f32 denormals to zero (FTZ/DAZ): its outputs here are zeros where '
           'the evaluator (IEEE) is not; the conformance test lists the case as a known difference')


def register(add):
  register_float(add)
  register_int(add)
  register_complex(add)
  register_narrow(add)
