"""Arrays in and out: DLPack (versioned and legacy capsules), the buffer protocol, numpy views,
narrow types, and the GIL released while kiln compiles and runs."""

import array
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import kiln

from conftest import normal

IDENTITY_F32 = """HloModule id
ENTRY main {
  x = f32[2,3] parameter(0)
  ROOT y = f32[2,3] add(x, x)
}
"""


def test_numpy_in_without_a_copy(rng):
  x = normal(rng, (64, 64))
  a = kiln.asarray(x, "cpu")
  assert np.from_dlpack(a).ctypes.data == x.ctypes.data   # wrapped, not copied


def test_strided_and_read_only_inputs(rng):
  base = normal(rng, (4, 6))
  exe = kiln.compile(IDENTITY_F32, "cpu")
  np.testing.assert_array_equal(exe.run(base[:2, ::2]).numpy(), 2 * base[:2, ::2])   # strided
  np.testing.assert_array_equal(exe.run(base[:3, :2].T).numpy(), 2 * base[:3, :2].T)  # transposed
  ro = base[:2, :3].copy()
  ro.flags.writeable = False
  np.testing.assert_array_equal(exe.run(ro).numpy(), 2 * ro)


def test_buffer_protocol_and_scalars():
  exe = kiln.compile(IDENTITY_F32, "cpu")
  buf = array.array("f", [1, 2, 3, 4, 5, 6])
  x = np.frombuffer(memoryview(buf), np.float32).reshape(2, 3)
  np.testing.assert_array_equal(exe.run(x).numpy(), 2 * x)
  np.testing.assert_array_equal(exe.run([[1, 2, 3], [4, 5, 6]]).numpy(), 2 * x)
  scalar = kiln.compile("HloModule s\nENTRY main {\n  x = s32[] parameter(0)\n  ROOT y = s32[] multiply(x, x)\n}\n", "cpu")
  assert int(np.asarray(scalar.run(7))) == 49


def test_versioned_and_legacy_capsules(rng):
  a = kiln.asarray(normal(rng, (3,)), "cpu")
  v = a.__dlpack__(max_version=(1, 0))
  legacy = a.__dlpack__()
  assert "dltensor_versioned" in repr(v)
  assert '"dltensor"' in repr(legacy)
  assert a.__dlpack_device__() == (1, 0)
  del v, legacy   # unconsumed capsules free their tensors


class _Producer:
  """A DLPack producer claiming the device `device`, exporting a numpy array, recording the
  `stream` each __dlpack__ call is given."""

  def __init__(self, array, device):
    self.array, self.device, self.streams = array, device, []

  def __dlpack_device__(self):
    return self.device

  def __dlpack__(self, *, stream=None, **kwargs):
    self.streams.append(stream)
    return self.array.__dlpack__(**kwargs)


def test_producers_are_asked_for_the_right_stream(rng):
  # Note [Streams across DLPack]: a CUDA producer is asked for its array on the legacy default
  # stream (stream=1), which kiln then waits for; a host producer with stream=None.
  x = normal(rng, (2, 3))
  exe = kiln.compile(IDENTITY_F32, "cpu")
  host = _Producer(x, (1, 0))
  np.testing.assert_array_equal(exe.run(host).numpy(), 2 * x)
  assert host.streams == [None]
  cuda = _Producer(x, (2, 0))   # (its capsule is host memory: importable here)
  np.testing.assert_array_equal(exe.run(cuda).numpy(), 2 * x)
  np.testing.assert_array_equal(kiln.asarray(cuda, "cpu").numpy(), x)
  assert cuda.streams == [1, 1]


def test_export_to_a_device_and_copies(rng):
  x = normal(rng, (3, 4))
  a = kiln.asarray(x, "cpu")
  assert np.from_dlpack(a, device="cpu").ctypes.data == x.ctypes.data   # on the host already
  c = np.from_dlpack(a, copy=True)
  assert c.ctypes.data != x.ctypes.data
  np.testing.assert_array_equal(c, x)
  with pytest.raises(BufferError, match="cannot be exported"):
    a.__dlpack__(max_version=(1, 0), dl_device=(2, 0))


def test_jax_takes_kiln_arrays(rng):
  import jax
  import jax.numpy as jnp
  x = normal(rng, (5, 7))
  a = kiln.compile(IDENTITY_F32.replace("2,3", "5,7"), "cpu").run(x)
  j = jax.dlpack.from_dlpack(a)
  assert isinstance(j, jax.Array)
  np.testing.assert_array_equal(np.asarray(j), 2 * x)
  np.testing.assert_array_equal(np.asarray(jnp.asarray(a)), 2 * x)   # __array__


def test_torch_in_and_out(rng):
  torch = pytest.importorskip("torch")
  t = torch.from_numpy(normal(rng, (2, 3)))
  out = kiln.compile(IDENTITY_F32, "cpu").run(t)
  back = torch.from_dlpack(out)
  assert torch.equal(back, 2 * t)


def test_narrow_types_round_trip(rng):
  for dtype, hlo in [(ml_dtypes.bfloat16, "bf16"), (ml_dtypes.float8_e4m3fn, "f8e4m3fn"),
                     (ml_dtypes.float8_e5m2, "f8e5m2"), (ml_dtypes.int4, "s4"), (ml_dtypes.uint4, "u4"),
                     (np.float16, "f16"), (np.bool_, "pred"), (np.complex64, "c64"),
                     (np.complex128, "c128"), (np.float64, "f64"), (np.uint64, "u64"), (np.int8, "s8")]:
    if hlo in ("s4", "u4"):
      x = rng.integers(-8 if hlo == "s4" else 0, 8, (3, 5)).astype(dtype)
    elif hlo == "pred":
      x = rng.integers(0, 2, (3, 5)).astype(bool)
    elif hlo in ("c64", "c128"):
      x = (normal(rng, (3, 5)) + 1j * normal(rng, (3, 5))).astype(dtype)
    elif hlo in ("u64", "s8"):
      x = rng.integers(1, 100, (3, 5)).astype(dtype)
    else:
      x = normal(rng, (3, 5)).astype(dtype)
    a = kiln.asarray(x, "cpu")
    assert a.hlo_type == hlo, hlo
    assert a.dtype == np.dtype(dtype), hlo
    np.testing.assert_array_equal(a.numpy(), x)
    exe = kiln.compile(f"HloModule c\nENTRY main {{\n  x = {hlo}[3,5] parameter(0)\n  ROOT y = {hlo}[3,5] copy(x)\n}}\n", "cpu")
    out = exe.run(x).numpy()
    assert out.dtype == np.dtype(dtype), hlo
    np.testing.assert_array_equal(out, x)


def test_bfloat16_through_dlpack_to_jax(rng):
  import jax
  x = normal(rng, (4,)).astype(ml_dtypes.bfloat16)
  a = kiln.asarray(x, "cpu")
  j = jax.dlpack.from_dlpack(a)
  assert j.dtype == np.dtype(ml_dtypes.bfloat16)
  np.testing.assert_array_equal(np.asarray(j), x)


def test_gil_is_released_while_running(rng):
  # A run of ~0.5 s on another thread: the main thread keeps running Python meanwhile.
  hlo = """HloModule slow
body {
  p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256,256] get-tuple-element(p), index=1
  d = f32[256,256] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[] constant(0.001)
  sb = f32[256,256] broadcast(s), dimensions={}
  y = f32[256,256] multiply(d, sb)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[256,256]) tuple(j, y)
}
cond {
  p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(400)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[256,256] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[256,256]) tuple(z, x)
  w = (s32[], f32[256,256]) while(t), condition=cond, body=body
  ROOT r = f32[256,256] get-tuple-element(w), index=1
}
"""
  exe = kiln.compile(hlo, "cpu", threads=1)
  x = normal(rng, (256, 256), scale=0.1)
  start = time.perf_counter()
  exe.run(x)
  alone = time.perf_counter() - start
  done = threading.Event()

  def run():
    exe.run(x)
    done.set()

  t = threading.Thread(target=run)
  ticks = 0
  t.start()
  while not done.is_set():
    ticks += 1
    time.sleep(0.001)
  t.join()
  # With the GIL held for the whole run the loop would tick about once.
  assert ticks >= max(5, int(alone * 100)), (ticks, alone)
