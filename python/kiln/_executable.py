"""kiln.compile: HLO text -> an Executable on one device (over one or several participants)."""

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
  """A module compiled for one device (kiln.compile), over num_participants participants
  (replicas x partitions; one for most modules). Thread-safe; runs release the GIL."""

  def __init__(self, impl, hlo_text):
    self._impl = impl
    self._hlo_text = hlo_text
    self.parameters = [ArraySpec(t, s, l, d) for t, s, l, d in impl.parameters]
    self.results = [ArraySpec(t, s, l) for t, s, l, _ in impl.results]
    self._structure = impl.result_structure
    # What run_global takes and returns: each leaf with the global shape its sharding tiles
    # (the participant's own otherwise); row-major.
    self.global_parameters = [ArraySpec(p.hlo_type, tuple(d), None, p.donated)
                              for p, d in zip(self.parameters, impl.global_parameter_dims)]
    self.global_results = [ArraySpec(r.hlo_type, tuple(d)) for r, d in zip(self.results, impl.global_result_dims)]

  @property
  def device(self):
    return self._impl.device

  @property
  def replicas(self):
    """The replicas this executable runs over (the module header's replica_count, or the
    `replicas` given to kiln.compile)."""
    return self._impl.replica_count

  @property
  def partitions(self):
    """The partitions this executable runs over (num_partitions; a shard_map program's mesh size)."""
    return self._impl.num_partitions

  @property
  def num_participants(self):
    """replicas x partitions. Participant i is replica i // partitions, partition i % partitions.
    More than one: run it with run_participants or run_global (run refuses it)."""
    return self._impl.num_participants

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

  def run_participants(self, args_per_participant, *, seed=0, timeout=None):
    """Runs every participant at once (threads meeting at the collectives, docs/collectives.md):
    `args_per_participant[i]` is participant i's list of arrays, one per argument leaf (what
    run takes). Returns one list of kiln.Arrays (the result leaves, as run_flat gives them) per
    participant, in participant order. The GIL is released while it runs.

    timeout: seconds a participant waits for the others at one collective (None: one minute);
    past it the run fails with DeadlineExceededError. A participant that ends its program
    without joining a collective the others wait in, or fails, fails the run at once (the
    error names the participant). InvalidArgumentError: not one argument list per participant,
    or an argument list that does not fit (the message names the participant)."""
    if isinstance(args_per_participant, (str, bytes)) or not hasattr(args_per_participant, "__len__"):
      from .errors import InvalidArgumentError
      raise InvalidArgumentError(
          f"run_participants takes one argument list per participant ({self.num_participants}), "
          f"not {type(args_per_participant).__name__}")
    lists = [list(a) if isinstance(a, tuple) else a for a in args_per_participant]
    return self._impl.run_participants_flat(lists, int(seed), _timeout_ms(timeout))

  def run_global(self, *arrays, seed=0, timeout=None):
    """Runs every participant on global arrays, as the `kiln` tool's .npz convention does
    (docs/npz.md): an argument of the global shape is split into the participants' tiles by its
    parameter's sharding (`sharding={devices=[...]}`; a shard_map program's in_specs), one of
    the parameter's own shape (or whose sharding does not tile it) goes to every participant.
    Each result leaf is joined by the root's sharding: tiles placed into the global array,
    participant 0's value where it is replicated (or maximal). Returns a kiln.Array, or a tuple
    (nested as the module's root) of them, as run does; with one participant it is run.

    InvalidArgumentError: an argument of neither shape, or a result without a sharding that
    says how to join it (run it with run_participants). timeout: as run_participants."""
    return _nest(self._structure, self._impl.run_global_flat(arrays, int(seed), _timeout_ms(timeout)))

  def split_global(self, *arrays):
    """The per-participant argument lists run_global runs on (run_participants takes them):
    each global argument split into the participants' tiles by its parameter's sharding, the
    others given to every participant as they are."""
    return [list(a) for a in self._impl.split_global(arrays)]

  def join_global(self, results_per_participant):
    """The global results of per-participant result lists (what run_participants returns), as
    run_global joins them: a kiln.Array, or a tuple nested as the module's root."""
    return _nest(self._structure, self._impl.join_global([list(r) for r in results_per_participant]))

  def __repr__(self):
    args = ", ".join(str(p) for p in self.parameters)
    res = ", ".join(str(r) for r in self.results)
    grid = ""
    if self.num_participants > 1:
      grid = f" x {self.num_participants} participants ({self.replicas} replicas x {self.partitions} partitions)"
    return f"kiln.Executable({self.name}({args}) -> ({res}) on {self.device}{grid})"


def _timeout_ms(timeout):
  if timeout is None:
    return -1
  t = float(timeout)
  if not t >= 0:
    from .errors import InvalidArgumentError
    raise InvalidArgumentError(f"timeout must be a number of seconds >= 0, not {timeout!r}")
  return int(round(t * 1000))


def _grid_count(name, value):
  if value is None:
    return 0
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    from .errors import InvalidArgumentError
    raise InvalidArgumentError(f"{name} must be a positive int (or None: the module header's), not {value!r}")
  return value


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


def compile(hlo_text, device=None, *, replicas=None, partitions=None, autotune=None, flags=None, threads=0,
            filename="<hlo>"):
  """Compiles HLO text (as `jax.jit(f).lower(...).as_text("hlo")` or XLA's dumps write it) for
  `device` ("cpu", "cuda:0", "interpreter"; None: the best device present). The GIL is released
  while compiling. replicas, partitions: the grid of participants the module runs over (None:
  the module header's replica_count / num_partitions; a shard_map program's mesh); more than
  one participant runs through Executable.run_participants / run_global (docs/collectives.md).
  Errors: InvalidArgumentError (malformed text, with file:line:col; a bad device name or flag),
  UnimplementedError (more than one participant on a backend that runs one), UnavailableError
  (a device that is not there)."""
  if isinstance(hlo_text, bytes):
    hlo_text = hlo_text.decode()
  impl = _kiln.compile(hlo_text, device or "", _autotune_level(autotune), filename,
                       {str(k): str(v) for k, v in (flags or {}).items()}, int(threads),
                       _grid_count("replicas", replicas), _grid_count("partitions", partitions))
  return Executable(impl, hlo_text)
