"""kiln.compile: HLO text -> an Executable on one device."""

import dataclasses

from . import _dtypes, _kiln


@dataclasses.dataclass(frozen=True)
class ArraySpec:
  """One argument or result leaf of an Executable: element type, dimensions, layout."""
  hlo_type: str            # "f32"
  shape: tuple             # (20, 5)
  layout: tuple = None     # minor_to_major, e.g. (0, 1); None: row-major
  donated: bool = False    # an argument the module donates (input_output_alias, buffer_donor)

  @property
  def dtype(self):
    return _dtypes.NUMPY_DTYPES.get(self.hlo_type)

  def __str__(self):
    dims = ",".join(str(d) for d in self.shape)
    s = f"{self.hlo_type}[{dims}]"
    if self.layout is not None:
      s += "{" + ",".join(str(d) for d in self.layout) + "}"
    return s


def _nest(structure, leaves):
  if isinstance(structure, tuple):
    return tuple(_nest(s, leaves) for s in structure)
  return leaves[structure]


class Executable:
  """A module compiled for one device (kiln.compile). Thread-safe; runs release the GIL."""

  def __init__(self, impl, hlo_text):
    self._impl = impl
    self._hlo_text = hlo_text
    self.parameters = [ArraySpec(t, s, l, d) for t, s, l, d in impl.parameters]
    self.results = [ArraySpec(t, s, l) for t, s, l, _ in impl.results]
    self._structure = impl.result_structure

  @property
  def device(self):
    return self._impl.device

  @property
  def name(self):
    return self._impl.module_name

  @property
  def compile_seconds(self):
    return self._impl.compile_seconds

  def summary(self):
    """What compiling made (the lines `kiln compile` prints)."""
    return self._impl.summary

  def run_report(self):
    return self._impl.run_report()

  def as_text(self):
    return self._hlo_text

  def memory_stats(self):
    """The memory plan of one run, in bytes: arguments, outputs, constants, temporaries (and
    their peak), and what needed no storage of its own (aliased: in place, donated)."""
    return self._impl.memory_stats()

  def run_flat(self, arrays):
    """One array per argument leaf in; one kiln.Array per result leaf out (a list)."""
    return self._impl.run_flat(arrays)

  def run(self, *arrays):
    """Runs on one array per argument leaf (numpy, jax, torch, kiln.Array, scalars). Returns a
    kiln.Array, or a tuple (nested as the module's root) of them."""
    return _nest(self._structure, self._impl.run_flat(arrays))

  __call__ = run

  def __repr__(self):
    args = ", ".join(str(p) for p in self.parameters)
    res = ", ".join(str(r) for r in self.results)
    return f"kiln.Executable({self.name}({args}) -> ({res}) on {self.device})"


def _autotune_level(autotune):
  if autotune is None:
    return ""
  if autotune is True:
    return "on"
  if autotune is False:
    return "off"
  if autotune not in ("off", "on", "exhaustive"):
    from .errors import InvalidArgumentError
    raise InvalidArgumentError(f"autotune must be off, on or exhaustive (or a bool), not {autotune!r}")
  return autotune


def compile(hlo_text, device=None, *, autotune=None, flags=None, threads=0, filename="<hlo>"):
  """Compiles HLO text (as `jax.jit(f).lower(...).as_text("hlo")` or XLA's dumps write it) for
  `device` ("cpu", "cuda:0", "interpreter"; None: the best device present). The GIL is released
  while compiling. Errors: InvalidArgumentError (malformed text, with file:line:col; a bad
  device name or flag), UnimplementedError, UnavailableError (a device that is not there)."""
  if isinstance(hlo_text, bytes):
    hlo_text = hlo_text.decode()
  impl = _kiln.compile(hlo_text, device or "", _autotune_level(autotune), filename,
                       {str(k): str(v) for k, v in (flags or {}).items()}, int(threads))
  return Executable(impl, hlo_text)
