"""kiln.jit: a JAX function lowered to HLO by JAX, compiled and run by kiln.

    @kiln.jit                       # or kiln.jit(f, device="cuda:0", donate_argnums=0)
    def f(x, w):
      return jnp.tanh(x @ w)

    y = f(x, w)                     # lowers + compiles on the first call of a signature
    f.lower(x, w).as_text()         # the HLO kiln compiles
    f.cache_info()                  # CacheInfo(hits=..., misses=..., currsize=...)

What is cached (one compiled executable per entry): the pytree structure of the dynamic
arguments, each leaf's shape, dtype and weak type, the static arguments' values (hashed), the
device, the x64 mode and jax's default matmul precision. See docs/python.md for how this differs from jax.jit.
"""

import collections
import functools
import inspect
import threading

import numpy as np

from . import _dtypes, _executable, _kiln
from .errors import InvalidArgumentError

CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])

_jax = None


def _import_jax():
  global _jax
  if _jax is None:
    import jax
    import jax.dlpack  # noqa: F401
    _jax = jax
  return _jax


def _lowering_platform(device):
  platform = device.split(":")[0]
  # The interpreter runs what JAX lowers for the host.
  return {"cuda": "cuda", "rocm": "rocm"}.get(platform, "cpu")


# Output kinds: how results are handed back (as the inputs came).
_KILN, _NUMPY, _JAX = 0, 1, 2

_SCALAR_TYPES = (bool, int, float, complex)


class _Entry:
  __slots__ = ("executable", "out_tree", "hlo_text", "n_leaves")

  def __init__(self, executable, out_tree, hlo_text, n_leaves):
    self.executable = executable
    self.out_tree = out_tree
    self.hlo_text = hlo_text
    self.n_leaves = n_leaves


class Lowered:
  """A function lowered for one signature: the HLO text kiln compiles (`.as_text()`), and
  `.compile()`."""

  def __init__(self, jitted, key, hlo_text, out_tree, n_leaves):
    self._jitted = jitted
    self._key = key
    self._hlo = hlo_text
    self.out_tree = out_tree
    self._n_leaves = n_leaves

  def as_text(self, dialect="hlo"):
    if dialect != "hlo":
      raise InvalidArgumentError(f"kiln lowers to HLO text only, not {dialect!r}")
    return self._hlo

  def compile(self):
    """Compiles (or takes from the function's cache) and returns a Compiled."""
    entry = self._jitted._entry_for_lowered(self)
    return Compiled(self._jitted, self._key, entry)


class Compiled:
  """A function compiled for one signature: call it with arguments of that signature."""

  def __init__(self, jitted, key, entry):
    self._jitted = jitted
    self._key = key
    self._entry = entry

  @property
  def executable(self):
    return self._entry.executable

  def as_text(self):
    return self._entry.hlo_text

  def memory_stats(self):
    return self._entry.executable.memory_stats()

  def __call__(self, *args, **kwargs):
    key, leaves, kind = self._jitted._signature(args, kwargs)
    if key != self._key:
      raise InvalidArgumentError("the arguments do not match the signature this function was compiled for")
    return self._jitted._run(self._entry, leaves, kind)


class Jitted:
  """The callable kiln.jit returns."""

  def __init__(self, fun, device, static_argnums, static_argnames, donate_argnums, autotune):
    functools.update_wrapper(self, fun)
    self._fun = fun
    self._device_arg = device
    self._device = None  # resolved on first use
    self._autotune = _executable._autotune_level(autotune)
    self._static_argnums, self._static_argnames = _static_args(fun, static_argnums, static_argnames)
    if isinstance(donate_argnums, int):
      donate_argnums = (donate_argnums,)
    self._donate_argnums = tuple(donate_argnums or ())
    for i in self._donate_argnums:
      if i in self._static_argnums:
        raise InvalidArgumentError(f"argument {i} cannot be both static and donated")
    self._cache = {}
    self._lock = threading.Lock()
    self._hits = 0
    self._misses = 0
    self._jax_jit = None
    self._canonical = {}  # numpy dtype -> canonical dtype under the current x64 mode

  # --- the signature ---------------------------------------------------------------------------

  def _signature(self, args, kwargs):
    """(cache key, dynamic leaves ready to run, output kind)."""
    jax = _jax or _import_jax()
    statics = self._static_argnums
    if statics:
      n = len(args)
      static_vals = tuple((i, args[i]) for i in statics if i < n)
      dyn_args = tuple(a for i, a in enumerate(args) if i not in statics)
    else:
      static_vals = ()
      dyn_args = args
    if kwargs:
      names = self._static_argnames
      static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in names))
      dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names}
    else:
      static_kw = ()
      dyn_kwargs = {}
    leaves, treedef = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
    x64 = jax.config.jax_enable_x64
    # jax.default_matmul_precision (thread-local, like x64 mode) changes the lowering.
    precision = jax.config.jax_default_matmul_precision
    kind = _KILN
    sig = []
    array_type = jax.Array
    for i, x in enumerate(leaves):
      t = type(x)
      if t is _kiln.Array:
        d = x.dtype
        c = self._canonical.get((d, x64))
        if c is None:
          c = self._canonical[(d, x64)] = np.dtype(jax.dtypes.canonicalize_dtype(d))
        if c != d:  # (a float64 Array without x64: computed in float32, as jax.jit would)
          x = leaves[i] = _kiln.asarray(x.numpy().astype(c), x.device)
        sig.append((x.shape, c, False))
      elif t is np.ndarray:
        d = x.dtype
        c = self._canonical.get((d, x64))
        if c is None:
          c = self._canonical[(d, x64)] = np.dtype(jax.dtypes.canonicalize_dtype(d))
        if c != d:
          x = leaves[i] = x.astype(c)
        sig.append((x.shape, c, False))
        if kind == _KILN:
          kind = _NUMPY
      elif t in _SCALAR_TYPES:
        sig.append((t,))
      elif isinstance(x, array_type):
        sig.append((x.shape, x.dtype, x.weak_type))
        leaves[i] = _jax_capsule(x)
        kind = _JAX
      elif isinstance(x, np.generic):
        x = leaves[i] = np.asarray(x)
        d = x.dtype
        c = np.dtype(jax.dtypes.canonicalize_dtype(d))
        if c != d:
          x = leaves[i] = x.astype(c)
        sig.append((x.shape, c, False))
        if kind == _KILN:
          kind = _NUMPY
      elif hasattr(x, "shape") and hasattr(x, "dtype"):  # torch, cupy, ...
        sig.append((tuple(x.shape), str(x.dtype), False))
      else:
        x = leaves[i] = np.asarray(x)
        sig.append((x.shape, x.dtype, False))
    try:
      key = (treedef, tuple(sig), static_vals, static_kw, x64, precision)
      hash(key)
    except TypeError as e:
      raise InvalidArgumentError(f"static arguments must be hashable: {e}") from None
    return key, leaves, kind

  # --- compiling -------------------------------------------------------------------------------

  def _device_name(self):
    if self._device is None:
      self._device = _kiln.resolve_device(self._device_arg or "")
    return self._device

  def _jax_jitted(self):
    if self._jax_jit is None:
      jax = _import_jax()
      self._jax_jit = jax.jit(self._fun, keep_unused=True, static_argnums=self._static_argnums,
                              static_argnames=tuple(self._static_argnames),
                              donate_argnums=self._donate_argnums)
    return self._jax_jit

  def _abstract_args(self, args, kwargs):
    """args and kwargs with every dynamic array leaf replaced by a jax.ShapeDtypeStruct."""
    jax = _import_jax()

    def abstract(x):
      if type(x) in _SCALAR_TYPES:
        return x  # weakly typed, as jax.jit sees it
      if isinstance(x, jax.Array):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type)
      if isinstance(x, (np.ndarray, np.generic)):
        return jax.ShapeDtypeStruct(np.shape(x), jax.dtypes.canonicalize_dtype(x.dtype))
      if type(x) is _kiln.Array:
        return jax.ShapeDtypeStruct(x.shape, jax.dtypes.canonicalize_dtype(x.dtype))
      if hasattr(x, "shape") and hasattr(x, "dtype"):  # torch, cupy, ...
        return jax.ShapeDtypeStruct(tuple(x.shape), jax.dtypes.canonicalize_dtype(_foreign_dtype(x.dtype)))
      a = np.asarray(x)
      return jax.ShapeDtypeStruct(a.shape, jax.dtypes.canonicalize_dtype(a.dtype))

    statics = self._static_argnums
    new_args = tuple(a if i in statics else jax.tree_util.tree_map(abstract, a) for i, a in enumerate(args))
    new_kwargs = {k: (v if k in self._static_argnames else jax.tree_util.tree_map(abstract, v))
                  for k, v in kwargs.items()}
    return new_args, new_kwargs

  def _lower(self, key, args, kwargs):
    device = self._device_name()
    a, k = self._abstract_args(args, kwargs)
    traced = self._jax_jitted().trace(*a, **k)
    lowered = traced.lower(lowering_platforms=(_lowering_platform(device),))
    hlo = lowered.as_text(dialect="hlo")
    n_leaves = len(key[1])
    return Lowered(self, key, hlo, lowered.out_tree, n_leaves)

  def _entry_for_lowered(self, lowered):
    with self._lock:
      entry = self._cache.get(lowered._key)
      if entry is not None:
        return entry
    exe = _executable.compile(lowered._hlo, self._device_name(), autotune=self._autotune or None,
                              filename=f"jit({getattr(self._fun, '__name__', 'fun')})")
    if exe.num_participants > 1:
      # kiln.jit runs one participant (docs/python.md): a function that lowers to a module over
      # several (shard_map over a mesh of several devices, collectives) compiles through
      # kiln.compile and runs with run_global / run_participants.
      raise InvalidArgumentError(
          f"kiln.jit runs one participant, but {getattr(self._fun, '__name__', 'the function')} lowers to a module "
          f"over {exe.num_participants} participants ({exe.replicas} replicas x {exe.partitions} partitions; shard_map or "
          f"collectives over several devices): compile f.lower(...).as_text() with kiln.compile and run it with "
          f"Executable.run_global (global arrays) or run_participants (docs/python.md)")
    if len(exe.parameters) != lowered._n_leaves:
      raise InvalidArgumentError(
          f"the lowered module takes {len(exe.parameters)} arrays, the call has {lowered._n_leaves} dynamic leaves")
    entry = _Entry(exe, lowered.out_tree, lowered._hlo, lowered._n_leaves)
    with self._lock:
      self._misses += 1
      return self._cache.setdefault(lowered._key, entry)

  # --- running ---------------------------------------------------------------------------------

  def _run(self, entry, leaves, kind):
    outs = entry.executable._impl.run_flat(leaves)
    if kind == _NUMPY:
      outs = [o.numpy() for o in outs]
    elif kind == _JAX:
      outs = [_to_jax(o) for o in outs]
    return entry.out_tree.unflatten(outs)

  def __call__(self, *args, **kwargs):
    key, leaves, kind = self._signature(args, kwargs)
    entry = self._cache.get(key)
    if entry is None:
      entry = self._entry_for_lowered(self._lower(key, args, kwargs))
    else:
      self._hits += 1
    return self._run(entry, leaves, kind)

  # --- the jax.stages-like API -----------------------------------------------------------------

  def lower(self, *args, **kwargs):
    """Lowers for the signature of these arguments (nothing is compiled): a Lowered."""
    key, _, _ = self._signature(args, kwargs)
    return self._lower(key, args, kwargs)

  def compile(self, *args, **kwargs):
    """lower(*args, **kwargs).compile()."""
    return self.lower(*args, **kwargs).compile()

  def cache_info(self):
    """hits: calls that found their executable; misses: compiles; currsize: executables kept."""
    return CacheInfo(self._hits, self._misses, None, len(self._cache))

  def clear_cache(self):
    with self._lock:
      self._cache.clear()

  @property
  def device(self):
    return self._device_name()

  def __get__(self, obj, objtype=None):  # methods: bind like a function
    if obj is None:
      return self
    return functools.partial(self, obj)

  def __repr__(self):
    return f"kiln.jit({getattr(self._fun, '__qualname__', self._fun)}, device={self._device_arg!r})"


# (dlpack device type, id) -> (jax device, stream) for the fast path of _to_jax.
_jax_targets = {}


# jaxlib's DLPack entry points (jax.dlpack's own), where this jaxlib has the ones this was
# written against (extension version 467, jax 0.10): jax.dlpack.from_dlpack and
# jax.Array.__dlpack__ cost ~70 us and ~10 us a call in Python around them. False: absent.
_jaxlib = None


def _jaxlib_dlpack():
  global _jaxlib
  if _jaxlib is None:
    try:
      from jax._src.lib import _jax as lib, jaxlib_extension_version
      from jax._src import xla_bridge
      ok = (jaxlib_extension_version >= 467 and hasattr(lib, "dlpack_managed_tensor_to_buffer")
            and hasattr(lib, "buffer_to_dlpack_managed_tensor"))
      _jaxlib = (lib, xla_bridge) if ok else False
    except ImportError:
      _jaxlib = False
  return _jaxlib


def _jax_capsule(x):
  """A DLPack capsule of a single-device jax array (ready on the host, or ordered before the
  legacy default stream: jaxlib waits without a stream), or x itself."""
  lib = _jaxlib or _jaxlib_dlpack()
  if lib:
    try:
      arrays = x._arrays
      if len(arrays) == 1:
        return lib[0].buffer_to_dlpack_managed_tensor(arrays[0], stream=None)
    except Exception:
      pass
  return x


def _fast_from_dlpack(a):
  """jax.dlpack.from_dlpack without its per-call overhead (a backend lookup and a jnp.asarray
  of the result); None where this jaxlib lacks the entry point."""
  lib = _jaxlib or _jaxlib_dlpack()
  if not lib:
    return None
  jaxlib, xla_bridge = lib
  key = a.__dlpack_device__()
  target = _jax_targets.get(key)
  if target is None:
    platform = {1: "cpu", 2: "cuda"}.get(key[0])
    if platform is None:
      return None
    dev = xla_bridge.get_backend(platform).device_from_local_hardware_id(key[1])
    try:
      stream = dev.get_stream_for_external_ready_events()
    except Exception:  # host devices have no stream
      stream = None
    target = _jax_targets[key] = (dev, stream, key[0])
  dev, stream, device_type = target
  return jaxlib.dlpack_managed_tensor_to_buffer(a.__dlpack__(stream=stream), dev, stream, None, device_type)


def _to_jax(a):
  jax = _jax
  try:
    out = _fast_from_dlpack(a)
    if out is not None and out.dtype == a.dtype:
      return out
    return jax.dlpack.from_dlpack(a)
  except Exception:  # types DLPack cannot carry (int4, ...): through numpy
    import jax.numpy as jnp
    return jnp.asarray(a.numpy())


def _foreign_dtype(dtype):
  """The numpy dtype of another framework's dtype (torch.float32, torch.bfloat16, cupy's)."""
  try:
    return np.dtype(dtype)
  except TypeError:
    name = str(dtype).rsplit(".", 1)[-1]   # "torch.bfloat16" -> "bfloat16"
    for d in _dtypes.NUMPY_DTYPES.values():
      if d.name == name:
        return d
    raise InvalidArgumentError(f"kiln has no element type for {dtype}") from None


def _static_args(fun, static_argnums, static_argnames):
  """static_argnums and static_argnames completed with each other through fun's signature, as
  jax.jit does."""
  if static_argnums is None:
    static_argnums = ()
  elif isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  if static_argnames is None:
    static_argnames = ()
  elif isinstance(static_argnames, str):
    static_argnames = (static_argnames,)
  nums = set(static_argnums)
  names = set(static_argnames)
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    params = []
  positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  for i, p in enumerate(positional):
    if p.name in names:
      nums.add(i)
    if i in nums and p.kind == p.POSITIONAL_OR_KEYWORD:
      names.add(p.name)
  return tuple(sorted(nums)), frozenset(names)


def jit(fun=None, *, device=None, static_argnums=None, static_argnames=None, donate_argnums=None,
        autotune=None):
  """Compiles `fun` (a JAX function) with kiln: JAX lowers it to HLO for the target device's
  platform, kiln compiles it once per signature and runs it.

  device: "cpu", "cuda:0", "interpreter", or None (the best device present).
  static_argnums / static_argnames: arguments passed to `fun` as Python values (hashable); each
    value compiles its own executable.
  donate_argnums: arguments whose memory the results may take over. A kiln.Array passed there is
    consumed (deleted after the call); numpy, jax and torch arrays are never overwritten (a copy
    is donated).
  autotune: None (the backend's default), "off", "on", "exhaustive", or a bool.

  Returns the outputs as the inputs came: jax arrays when an argument is a jax array, numpy
  arrays (read-only views) when one is a numpy array, kiln.Array otherwise.
  """
  if fun is None:
    return functools.partial(jit, device=device, static_argnums=static_argnums,
                             static_argnames=static_argnames, donate_argnums=donate_argnums,
                             autotune=autotune)
  return Jitted(fun, device, static_argnums, static_argnames, donate_argnums, autotune)
