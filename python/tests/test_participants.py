"""Modules over several participants from Python (docs/python.md, docs/collectives.md):
Executable.num_participants / replicas / partitions, run_participants (one argument list per
participant), run_global (global arrays split and joined by the shardings, as the `kiln` tool's
.npz convention), their errors, and kiln.jit's refusal of a multi-participant module."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kiln

from conftest import normal

DEVICES = ["cpu", "interpreter"]

SUM = """
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""

# psum over 4 replicas: every participant gets the sum of the 4 inputs.
PSUM4 = "HloModule psum4, replica_count=4\n" + SUM + """
ENTRY e {
  x = f32[3,5] parameter(0)
  ROOT ar = f32[3,5] all-reduce(x), replica_groups={}, to_apply=sum
}
"""

# Each participant's own ids and a psum of its scalar: results differ per participant.
IDS = "HloModule ids, replica_count=2, num_partitions=2\n" + SUM + """
ENTRY e {
  x = f32[] parameter(0)
  r = u32[] replica-id()
  p = u32[] partition-id()
  ar = f32[] all-reduce(x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=sum
  ROOT t = (u32[], u32[], f32[]) tuple(r, p, ar)
}
"""

# A sharded per-device program (as shard_map lowers to): x's rows split over 4 partitions in the
# reversed device order; the psum replicated, the square tiled the same way.
SHARDED = "HloModule sharded, num_partitions=4\n" + SUM + """
ENTRY e {
  x = f32[2,3] parameter(0), sharding={devices=[4,1]3,2,1,0}
  w = f32[3] parameter(1), sharding={replicated}
  wb = f32[2,3] broadcast(w), dimensions={1}
  xw = f32[2,3] multiply(x, wb)
  ar = f32[2,3] all-reduce(xw), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=sum
  sq = f32[2,3] multiply(x, x)
  ROOT t = (f32[2,3], f32[2,3]) tuple(ar, sq), sharding={{replicated}, {devices=[4,1]3,2,1,0}}
}
"""

# No root sharding: the participants' values have no global array.
UNSHARDED = "HloModule unsharded, num_partitions=2\n" + SUM + """
ENTRY e {
  x = f32[4] parameter(0), sharding={devices=[2]0,1}
  ROOT ar = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
}
"""

# Replica 1 skips the all-reduce replica 0 waits in.
MISSING = "HloModule missing, replica_count=2\n" + SUM + """
with_ar {
  p = f32[8] parameter(0)
  ROOT ar = f32[8] all-reduce(p), replica_groups={}, to_apply=sum
}
without {
  ROOT p = f32[8] parameter(0)
}
ENTRY e {
  x = f32[8] parameter(0)
  r = u32[] replica-id()
  b = s32[] convert(r)
  ROOT c = f32[8] conditional(b, x, x), branch_computations={with_ar, without}
}
"""

# Replica 1 runs a long loop before the all-reduce replica 0 is already waiting in.
SLOW = "HloModule slow, replica_count=2\n" + SUM + """
cond {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(%d)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[64] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[64] broadcast(h), dimensions={}
  v1 = f32[64] multiply(v, hb)
  ROOT t = (s32[], f32[64]) tuple(i1, v1)
}
fast {
  ROOT p = f32[64] parameter(0)
}
slow {
  p = f32[64] parameter(0)
  z = s32[] constant(0)
  s0 = (s32[], f32[64]) tuple(z, p)
  w = (s32[], f32[64]) while(s0), condition=cond, body=body
  ROOT v = f32[64] get-tuple-element(w), index=1
}
ENTRY e {
  x = f32[64] parameter(0)
  r = u32[] replica-id()
  b = s32[] convert(r)
  c = f32[64] conditional(b, x, x), branch_computations={fast, slow}
  ROOT ar = f32[64] all-reduce(c), replica_groups={}, to_apply=sum
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_psum_over_four_participants(device, rng):
  exe = kiln.compile(PSUM4, device)
  assert (exe.num_participants, exe.replicas, exe.partitions) == (4, 4, 1)
  assert "4 participants" in repr(exe)
  xs = [normal(rng, (3, 5)) for _ in range(4)]
  out = exe.run_participants([[x] for x in xs])
  assert len(out) == 4
  want = ((xs[0] + xs[1]) + xs[2]) + xs[3]  # rank order
  for i, results in enumerate(out):
    assert isinstance(results, list) and len(results) == 1, i
    assert isinstance(results[0], kiln.Array)
    np.testing.assert_allclose(results[0].numpy(), want, rtol=1e-6, atol=1e-6)
  # Tuples are argument lists as well; arrays of any kind go in.
  again = exe.run_participants(tuple((kiln.asarray(x),) for x in xs))
  np.testing.assert_array_equal(again[3][0].numpy(), out[3][0].numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_participant_ids_and_grid(device):
  exe = kiln.compile(IDS, device)
  assert (exe.num_participants, exe.replicas, exe.partitions) == (4, 2, 2)
  out = exe.run_participants([[np.float32(i + 1)] for i in range(4)])
  for i, (r, p, s) in enumerate(out):
    # Participant i is replica i // partitions, partition i % partitions.
    assert (int(r.numpy()), int(p.numpy())) == (i // 2, i % 2)
    assert float(s.numpy()) == 10.0


def test_replicas_override():
  exe = kiln.compile(PSUM4, "cpu", replicas=2)
  assert (exe.num_participants, exe.replicas, exe.partitions) == (2, 2, 1)
  x = np.ones((3, 5), np.float32)
  out = exe.run_participants([[x], [2 * x]])
  np.testing.assert_array_equal(out[1][0].numpy(), 3 * x)
  one = kiln.compile(PSUM4, "cpu", replicas=1)
  assert one.num_participants == 1
  np.testing.assert_array_equal(np.asarray(one.run(x)), x)
  grid = kiln.compile(IDS, "cpu", partitions=1)
  assert (grid.num_participants, grid.replicas, grid.partitions) == (2, 2, 1)
  with pytest.raises(kiln.InvalidArgumentError, match="replicas must be a positive int"):
    kiln.compile(PSUM4, "cpu", replicas=0)
  with pytest.raises(kiln.InvalidArgumentError, match="partitions must be a positive int"):
    kiln.compile(PSUM4, "cpu", partitions=2.0)


def test_one_participant_modules():
  exe = kiln.compile(textwrap.dedent("""
    HloModule one
    ENTRY e {
      x = f32[2] parameter(0)
      ROOT n = f32[2] negate(x)
    }"""), "cpu")
  assert (exe.num_participants, exe.replicas, exe.partitions) == (1, 1, 1)
  x = np.array([1, -2], np.float32)
  (only,) = exe.run_participants([[x]])
  np.testing.assert_array_equal(only[0].numpy(), -x)
  np.testing.assert_array_equal(np.asarray(exe.run_global(x)), -x)  # run_global is run here


def test_run_refuses_several_participants():
  exe = kiln.compile(PSUM4, "cpu")
  x = np.ones((3, 5), np.float32)
  with pytest.raises(kiln.InvalidArgumentError, match="runs over 4 participants.*run_participants.*run_global"):
    exe.run(x)
  with pytest.raises(kiln.InvalidArgumentError, match="run_participants"):
    exe.run_flat([x])


def test_wrong_number_of_argument_lists():
  exe = kiln.compile(PSUM4, "cpu")
  x = np.ones((3, 5), np.float32)
  with pytest.raises(kiln.InvalidArgumentError, match=r"runs over 4 participants \(4 replicas x 1 partitions\), got 3 argument lists"):
    exe.run_participants([[x], [x], [x]])
  with pytest.raises(kiln.InvalidArgumentError, match="got 5 argument lists"):
    exe.run_participants([[x]] * 5)
  with pytest.raises(kiln.InvalidArgumentError, match="one argument list per participant"):
    exe.run_participants(x.tobytes())
  with pytest.raises(kiln.InvalidArgumentError, match="participant 2: expected a list of 1 arrays"):
    exe.run_participants([[x], [x], 3, [x]])


def test_bad_participant_arguments_name_the_participant():
  exe = kiln.compile(PSUM4, "cpu")
  x = np.ones((3, 5), np.float32)
  with pytest.raises(kiln.InvalidArgumentError, match="participant 2: psum4 takes 1 argument array, got 2"):
    exe.run_participants([[x], [x], [x, x], [x]])
  with pytest.raises(kiln.InvalidArgumentError, match="participant 1: "):
    exe.run_participants([[x], [np.ones((5, 3), np.float32)], [x], [x]])
  with pytest.raises(kiln.InvalidArgumentError, match="participant 3: "):
    exe.run_participants([[x], [x], [x], [x.astype(np.float64)]])
  deleted = kiln.asarray(x)
  deleted.delete()
  with pytest.raises(kiln.FailedPreconditionError, match="participant 0: argument 0"):
    exe.run_participants([[deleted], [x], [x], [x]])


@pytest.mark.parametrize("device", DEVICES)
def test_missing_participant_fails_fast(device):
  exe = kiln.compile(MISSING, device)
  x = np.ones(8, np.float32)
  start = time.monotonic()
  with pytest.raises(kiln.KilnError, match="participant") as e:
    exe.run_participants([[x], [x]], timeout=30)
  assert time.monotonic() - start < 20, "a participant that ended its program must fail the run at once"
  assert "without joining" in str(e.value) or "did not arrive" in str(e.value), str(e.value)


def test_timeout():
  exe = kiln.compile(SLOW % 500_000, "cpu")
  x = np.ones(64, np.float32)
  with pytest.raises(kiln.DeadlineExceededError, match=r"participant\(s\) 1 did not arrive within 1 ms") as e:
    exe.run_participants([[x], [x]], timeout=0.001)
  assert isinstance(e.value, TimeoutError)
  # The same program with time enough.
  quick = kiln.compile(SLOW % 3, "cpu")
  out = quick.run_participants([[x], [x]], timeout=60)
  np.testing.assert_array_equal(out[0][0].numpy(), np.full(64, 1.125, np.float32))
  with pytest.raises(kiln.InvalidArgumentError, match="timeout must be"):
    quick.run_participants([[x], [x]], timeout=-1)


@pytest.mark.parametrize("device", DEVICES)
def test_run_global_splits_and_joins_by_the_shardings(device, rng):
  exe = kiln.compile(SHARDED, device)
  assert (exe.num_participants, exe.partitions) == (4, 4)
  assert [p.shape for p in exe.parameters] == [(2, 3), (3,)]  # the participants' shapes
  assert [p.shape for p in exe.global_parameters] == [(8, 3), (3,)]  # what run_global takes
  assert [str(r) for r in exe.global_results] == ["f32[2,3]", "f32[8,3]"]
  x = normal(rng, (8, 3))  # the global array: 4 tiles of 2 rows
  w = normal(rng, (3,))
  ar, sq = exe.run_global(x, w)
  assert ar.shape == (2, 3) and sq.shape == (8, 3)
  np.testing.assert_array_equal(sq.numpy(), x * x)  # tiles back in their places
  # devices=[4,1]3,2,1,0: partition 0 holds rows 6..7, so the all-reduce adds in that order.
  tiles = [x[2 * (3 - i):2 * (3 - i) + 2] * w for i in range(4)]
  np.testing.assert_allclose(ar.numpy(), ((tiles[0] + tiles[1]) + tiles[2]) + tiles[3], rtol=1e-6, atol=1e-6)
  # split_global gives run_participants' lists; join_global puts their results together.
  per = exe.split_global(x, w)
  assert len(per) == 4
  np.testing.assert_array_equal(per[0][0].numpy(), x[6:8])
  np.testing.assert_array_equal(np.asarray(per[2][1]), w)
  results = exe.run_participants(per)
  np.testing.assert_array_equal(results[1][1].numpy(), x[4:6] ** 2)
  ar2, sq2 = exe.join_global(results)
  np.testing.assert_array_equal(ar2.numpy(), ar.numpy())
  np.testing.assert_array_equal(sq2.numpy(), sq.numpy())
  # An argument of the tile's shape goes to every participant.
  _, same = exe.run_global(x[:2], w)
  np.testing.assert_array_equal(same.numpy(), np.tile(x[:2] ** 2, (4, 1)))


def test_run_global_errors():
  exe = kiln.compile(SHARDED, "cpu")
  w = np.ones(3, np.float32)
  with pytest.raises(kiln.InvalidArgumentError, match=r"argument 0 of sharded is f32\[6,3\]; parameter 0 takes the global f32\[8,3\]"):
    exe.run_global(np.ones((6, 3), np.float32), w)
  with pytest.raises(kiln.InvalidArgumentError, match="takes 2 argument arrays, got 1"):
    exe.run_global(np.ones((8, 3), np.float32))
  unsharded = kiln.compile(UNSHARDED, "cpu")
  with pytest.raises(kiln.InvalidArgumentError, match="result 0 has no sharding.*run_participants"):
    unsharded.run_global(np.ones(8, np.float32))
  out = unsharded.run_participants(unsharded.split_global(np.arange(8, dtype=np.float32)))
  np.testing.assert_array_equal(out[1][0].numpy(), [4, 6, 8, 10])


def test_donated_argument_shared_by_participants():
  exe = kiln.compile(PSUM4.replace("HloModule psum4, replica_count=4",
                                   "HloModule psum4, replica_count=4, input_output_alias={ {}: (0, {}, may-alias) }"), "cpu")
  assert exe.parameters[0].donated
  x = np.ones((3, 5), np.float32)
  a = kiln.asarray(x)
  # The first participant takes the array, the others copies; numpy's is never overwritten.
  out = exe.run_participants([[a], [a], [x], [x]])
  for r in out:
    np.testing.assert_array_equal(r[0].numpy(), 4 * x)
  np.testing.assert_array_equal(x, np.ones((3, 5), np.float32))


def test_runs_release_the_gil():
  import threading
  exe = kiln.compile(SLOW % 200_000, "cpu")
  x = np.ones(64, np.float32)
  ticks = []
  stop = threading.Event()

  def tick():
    while not stop.is_set():
      ticks.append(time.monotonic())
      time.sleep(0.001)

  t = threading.Thread(target=tick)
  t.start()
  try:
    time.sleep(0.01)
    start = time.monotonic()
    exe.run_participants([[x], [x]], timeout=120)
    end = time.monotonic()
  finally:
    stop.set()
    t.join()
  during = sum(start < s < end for s in ticks)
  # Python code ran in another thread while the participants ran (a held GIL allows none).
  assert end - start < 0.02 or during >= 3, (end - start, during)


JIT_SCRIPT = r"""
import numpy as np, jax, jax.numpy as jnp, kiln
from jax.sharding import Mesh, PartitionSpec as P
try:
  from jax import shard_map
except ImportError:
  from jax.experimental.shard_map import shard_map
mesh = Mesh(np.array(jax.devices()[:4]), ("x",))
def f(x):
  return jax.lax.psum(x * 2, "x")
g = shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P())
x = np.arange(32, dtype=np.float32).reshape(8, 4)
try:
  kiln.jit(g, device="cpu")(x)
except kiln.InvalidArgumentError as e:
  print("REFUSED:", e)
exe = kiln.compile(kiln.jit(g, device="cpu").lower(x).as_text(), "cpu")
print("PARTICIPANTS:", exe.num_participants)
np.testing.assert_allclose(np.asarray(exe.run_global(x)), np.asarray(jax.jit(g)(x)), rtol=1e-6)
print("MATCHES")
"""


def test_jit_refuses_a_multi_participant_module():
  pytest.importorskip("jax")
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
  r = subprocess.run([sys.executable, "-c", JIT_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr
  assert "REFUSED: kiln.jit runs one participant" in r.stdout and "over 4" in r.stdout, r.stdout
  assert "PARTICIPANTS: 4" in r.stdout and "MATCHES" in r.stdout, r.stdout
