"""The case table and the argument makers shared by every family module.

A case is (name, fn, args): `fn` is a plain Python function of JAX arrays, `args` a list of
argument makers, each a callable `rng -> numpy array` (the makers below). A family module
defines `register(add)` and calls `add(name, fn, *args, ...)` once per case.

Inputs are drawn from a numpy Generator seeded with the CRC-32 of the case name, so a case's
inputs do not depend on which other cases exist or run.
"""

import dataclasses
import zlib

import ml_dtypes
import numpy as np

# Short dtype names (HLO's spelling where HLO has one) to numpy dtypes.
DTYPES = {
    'pred': np.dtype(np.bool_),
    's4': np.dtype(ml_dtypes.int4), 'u4': np.dtype(ml_dtypes.uint4),
    's8': np.dtype(np.int8), 's16': np.dtype(np.int16),
    's32': np.dtype(np.int32), 's64': np.dtype(np.int64),
    'u8': np.dtype(np.uint8), 'u16': np.dtype(np.uint16),
    'u32': np.dtype(np.uint32), 'u64': np.dtype(np.uint64),
    'f16': np.dtype(np.float16), 'bf16': np.dtype(ml_dtypes.bfloat16),
    'f32': np.dtype(np.float32), 'f64': np.dtype(np.float64),
    'c64': np.dtype(np.complex64), 'c128': np.dtype(np.complex128),
    'f8e4m3fn': np.dtype(ml_dtypes.float8_e4m3fn),
    'f8e5m2': np.dtype(ml_dtypes.float8_e5m2),
    'f8e4m3fnuz': np.dtype(ml_dtypes.float8_e4m3fnuz),
    'f8e5m2fnuz': np.dtype(ml_dtypes.float8_e5m2fnuz),
    'f8e4m3b11fnuz': np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    'f8e4m3': np.dtype(ml_dtypes.float8_e4m3),
    'f8e3m4': np.dtype(ml_dtypes.float8_e3m4),
    'f8e8m0fnu': np.dtype(ml_dtypes.float8_e8m0fnu),
}
HLO_NAME = {v: k for k, v in DTYPES.items()}

# Dtypes that only exist in a process with jax_enable_x64.
X64_DTYPES = ('s64', 'u64', 'f64', 'c128')

NARROW_FLOATS = tuple(k for k in DTYPES if k in ('f16', 'bf16') or k.startswith('f8'))


def dt(name):
  return DTYPES[name]


def is_float(name):
  return name in ('f16', 'bf16', 'f32', 'f64') or name.startswith('f8')


def is_int(name):
  return name[0] in 'su' and name != 'pred'


def int_range(name):
  if name == 's4':
    return -8, 7
  if name == 'u4':
    return 0, 15
  info = np.iinfo(DTYPES[name])
  return int(info.min), int(info.max)


def _shape(shape):
  return (shape,) if isinstance(shape, int) else tuple(shape)


def F(shape=(16,), dtype='f32', lo=-3.0, hi=3.0, special=(), integers=False):
  """Floats uniform in [lo, hi] (optionally integer-valued), specials first."""
  shape = _shape(shape)

  def make(rng):
    x = rng.uniform(lo, hi, size=shape)
    if integers:
      x = np.round(x)
    x = x.astype(DTYPES[dtype])
    flat = x.reshape(-1)
    for k, v in enumerate(list(special)[:flat.size]):
      flat[k] = np.float64(v).astype(DTYPES[dtype])
    return flat.reshape(shape)
  return make


def C(shape=(16,), dtype='c64', lo=-3.0, hi=3.0, special=()):
  """Complex numbers with real and imaginary parts uniform in [lo, hi]."""
  shape = _shape(shape)

  def make(rng):
    x = (rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape))
    x = x.astype(DTYPES[dtype])
    flat = x.reshape(-1)
    for k, v in enumerate(list(special)[:flat.size]):
      flat[k] = v
    return flat.reshape(shape)
  return make


def _wrap_int(v, dtype):
  """A Python int wrapped (two's complement) into an integer dtype's range."""
  lo, hi = int_range(dtype)
  span = hi - lo + 1
  return DTYPES[dtype].type((int(v) - lo) % span + lo)


def I(shape=(16,), dtype='s32', lo=None, hi=None, special=()):
  """Integers uniform in [lo, hi] (both inclusive, clipped to the dtype), specials first."""
  shape = _shape(shape)

  def make(rng):
    dmin, dmax = int_range(dtype)
    a = dmin if lo is None else max(lo, dmin)
    b = dmax if hi is None else min(hi, dmax)
    if b - a >= 2**62:  # full 64-bit ranges: draw the bits directly
      x = rng.integers(0, 2**64, size=shape, dtype=np.uint64, endpoint=False)
      x = x.view(np.int64) if dtype == 's64' else x
    else:
      x = rng.integers(a, b, size=shape, endpoint=True, dtype=np.int64)
    x = x.astype(DTYPES[dtype])
    flat = x.reshape(-1)
    for k, v in enumerate(list(special)[:flat.size]):
      flat[k] = _wrap_int(v, dtype)
    return flat.reshape(shape)
  return make


def B(shape=(16,), p=0.5):
  """Booleans, True with probability p (never all False)."""
  shape = _shape(shape)

  def make(rng):
    x = rng.uniform(size=shape) < p
    if not x.any():
      x.reshape(-1)[0] = True
    return x
  return make


def BITS(shape=(16,), dtype='u32'):
  """Uniformly random bit patterns of an integer dtype."""
  shape = _shape(shape)

  def make(rng):
    nbytes = DTYPES[dtype].itemsize * int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(rng.bytes(nbytes), dtype=DTYPES[dtype]).reshape(shape).copy()
  return make


def V(values, dtype='f32'):
  """A literal array (values go through float64/int64 first, then the dtype)."""

  def make(rng):
    del rng
    if DTYPES[dtype].kind == 'c':
      return np.asarray(values, dtype=DTYPES[dtype])
    if dtype in ('u64',):
      return np.asarray(values, dtype=np.uint64)
    src = np.asarray(values)
    if src.dtype.kind == 'f' or dtype.startswith('f') or dtype == 'bf16':
      return src.astype(np.float64).astype(DTYPES[dtype])
    return src.astype(np.int64).astype(DTYPES[dtype])
  return make


def FBITS(bits, dtype='f32'):
  """Floats given by their bit patterns (list of ints)."""
  int_dt = {'f32': np.uint32, 'f16': np.uint16, 'bf16': np.uint16, 'f64': np.uint64}[dtype]

  def make(rng):
    del rng
    return np.asarray(bits, dtype=np.uint64).astype(int_dt).view(DTYPES[dtype])
  return make


def KEY(words=2):
  """A raw PRNG key: `words` random uint32 (2 for threefry, 4 for rbg/unsafe_rbg)."""
  return BITS((words,), 'u32')


def SPD(n, dtype='f32', batch=()):
  """A symmetric positive definite matrix (well conditioned)."""

  def make(rng):
    a = rng.uniform(-1, 1, size=tuple(batch) + (n, n))
    m = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    if DTYPES[dtype].kind == 'c':
      b = rng.uniform(-1, 1, size=tuple(batch) + (n, n))
      h = (a + 1j * b)
      m = h @ np.conj(np.swapaxes(h, -1, -2)) + 2 * n * np.eye(n)
    return m.astype(DTYPES[dtype])
  return make


def TRI(n, dtype='f32', lower=True, batch=(), unit=False):
  """A well-conditioned triangular matrix (the other triangle holds junk that must be ignored)."""

  def make(rng):
    a = rng.uniform(-1, 1, size=tuple(batch) + (n, n))
    if DTYPES[dtype].kind == 'c':
      a = a + 1j * rng.uniform(-1, 1, size=tuple(batch) + (n, n))
    d = np.arange(n)
    a[..., d, d] = (2.0 + rng.uniform(0, 1, size=tuple(batch) + (n,))) * (1 if not unit else 7)
    return a.astype(DTYPES[dtype])
  del lower
  return make


@dataclasses.dataclass
class Case:
  name: str
  fn: object
  args: list
  x64: bool = False          # run in the jax_enable_x64 process
  subdir: str = ''           # '', '_custom_call' or 'collectives'
  platform: str = ''         # lower for this platform instead of the CPU (module.hlo only)
  allow_zero: bool = False   # an input may legitimately be all zeros (e.g. a scalar index 0)
  # numpy reference, inputs -> list of outputs, for modules XLA's CPU backend cannot run
  # (ragged-all-to-all): the outputs come from it instead of from running the jitted function.
  reference: object = None
  note: str = ''

  @property
  def family(self):
    return self.name.split('_', 1)[0]

  def inputs(self):
    rng = np.random.default_rng(zlib.crc32(self.name.encode()))
    return [make(rng) for make in self.args]


class Table:
  """The case table: `add` appends one case; names must be unique."""

  def __init__(self):
    self.cases = []
    self._names = set()

  def add(self, name, fn, *args, x64=None, **kw):
    if name in self._names:
      raise ValueError(f'duplicate case name {name}')
    self._names.add(name)
    if x64 is None:
      x64 = any(t in name.split('_') for t in X64_DTYPES)
    self.cases.append(Case(name, fn, list(args), x64=x64, **kw))
