"""The suite on a CUDA device (marked gpu; skipped without one): kiln.jit with device="cuda:0"
against jax.jit, GPU arrays of jax and torch in and out without a host copy, and the producer's
stream respected. Run by the CTest kiln_python_gpu_test (label gpu)."""

import inspect
import os

import numpy as np
import pytest

import kiln
from kiln import _kiln

import test_cases
import test_jit
from conftest import has_cuda, normal

# KILN_REQUIRE_GPU=1 (the CTest kiln_python_gpu_test sets it): no device is a failure, not a skip.
REQUIRE_GPU = os.environ.get("KILN_REQUIRE_GPU") == "1"
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not has_cuda() and not REQUIRE_GPU, reason="no CUDA device")]


def test_cuda_device_present():
  assert has_cuda(), f"kiln sees no CUDA device: {[(p.name, p.status) for p in kiln.platforms()]}"

DEVICE = "cuda:0"

# test_jit's tests that read its DEVICE at call time (all but the host-only ones).
HOST_ONLY = {"test_kiln_array_methods"}
# Tests that check jax.default_matmul_precision themselves: run outside the suite's "highest".
OWN_PRECISION = {"test_default_matmul_precision_is_part_of_the_key"}
SUITE = sorted(n for n, f in vars(test_jit).items()
               if n.startswith("test_") and callable(f) and n not in HOST_ONLY)


@pytest.mark.parametrize("name", SUITE)
def test_jit_suite_on_cuda(name, rng, monkeypatch):
  import jax
  monkeypatch.setattr(test_jit, "DEVICE", DEVICE)
  fn = getattr(test_jit, name)
  params = inspect.signature(fn).parameters
  # f32 dots at full precision on both sides (XLA and kiln would both use TF32 otherwise, each
  # its own way), so that the f32 tolerance applies; the tests of the precision setting itself
  # set it themselves.
  import contextlib
  precision = (contextlib.nullcontext() if name in OWN_PRECISION
               else jax.default_matmul_precision("highest"))
  with precision:
    if "dtype" in params:
      for dtype in (np.float32, np.float16):
        fn(rng, dtype)
    elif "rng" in params:
      fn(rng)
    else:
      fn()


@pytest.mark.parametrize("case", [pytest.param(c, id=str(c.relative_to(test_cases.DATA)),
                                               marks=[pytest.mark.xfail(reason=test_cases.KNOWN_DIFFERENCES[c.name],
                                                                        strict=False)]
                                               if c.name in test_cases.KNOWN_DIFFERENCES else [])
                                  for c in test_cases.CASES])
def test_case_on_cuda(case):
  # Every tests/data case against XLA's (CPU) outputs, untuned, judged as the differential suite
  # judges cuda (src/kiln/differential/differential_test.cc): the compiled-backend tolerances
  # (BackendTolerance: part of the bound scales with the output's largest value, which fused
  # attention's backward needs in bf16 -- it keeps dP and dS in f32), and the TF32 row of
  # docs/tolerances.md for the f32 outputs of products kiln runs in TF32.
  if test_cases._is_collective(case):
    # cuda runs one participant (docs/collectives.md): the one-device collective cases, as in
    # the differential suite.
    if not case.name.endswith("_n1"):
      pytest.skip("cuda runs one participant (NCCL is the next step, docs/collectives.md)")
    test_cases.run_collective_case(case, DEVICE, backend_tolerance=True, autotune="off")
    return
  test_cases.run_case(case, DEVICE, backend_tolerance=True, autotune="off")


def _jax_gpu():
  jax = pytest.importorskip("jax")
  gpus = [d for d in jax.devices() if d.platform == "gpu"]
  if not gpus:
    pytest.skip("jax sees no GPU")
  return jax, gpus[0]


def test_jax_gpu_arrays_in_and_out_without_a_copy(rng):
  jax, gpu = _jax_gpu()
  x = jax.device_put(normal(rng, (1024, 256)), gpu)
  a = kiln.asarray(x, DEVICE)
  assert a.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
  f = kiln.jit(lambda x: x * 2, device=DEVICE)
  y = f(x)
  assert isinstance(y, jax.Array) and list(y.devices())[0].platform == "gpu"
  np.testing.assert_array_equal(np.asarray(y), 2 * np.asarray(x))
  out = f(a)                           # a kiln.Array out ...
  j = jax.dlpack.from_dlpack(out)      # ... into jax without a copy
  assert j.unsafe_buffer_pointer() == out.unsafe_buffer_pointer()


def test_torch_cuda_tensors_in_and_out_without_a_copy(rng):
  torch = pytest.importorskip("torch")
  if not torch.cuda.is_available():
    pytest.skip("torch sees no GPU")
  t = torch.randn(512, 512, device="cuda")
  a = kiln.asarray(t, DEVICE)
  assert a.unsafe_buffer_pointer() == t.data_ptr()
  out = kiln.jit(lambda x: x + 1, device=DEVICE)(a)
  back = torch.from_dlpack(out)
  assert back.data_ptr() == out.unsafe_buffer_pointer()
  assert torch.equal(back, t + 1)


def test_producer_stream_is_respected():
  torch = pytest.importorskip("torch")
  if not torch.cuda.is_available():
    pytest.skip("torch sees no GPU")
  f = kiln.jit(lambda x: x.sum(), device=DEVICE)
  side = torch.cuda.Stream()
  for _ in range(5):
    with torch.cuda.stream(side):
      # Long work on a non-default stream, torch's current one, handed to kiln with no
      # synchronize: kiln must wait for it (Note [Streams across DLPack]). torch orders its
      # current stream's work before the stream kiln names in __dlpack__(stream=1), the legacy
      # default stream, which kiln waits for before its own streams read the memory. (Outside
      # this block the current stream is the default one, and side's work is the caller's to
      # order, as it would be for torch itself: torch.cuda.current_stream().wait_stream(side).)
      t = torch.ones(4096, 4096, device="cuda")
      for _ in range(20):
        t = t @ torch.eye(4096, device="cuda")
      s = f(t)                               # run_flat: one wait for all the arguments
      u = torch.ones(4096, 4096, device="cuda")
      for _ in range(20):
        u = u @ torch.eye(4096, device="cuda")
      a = kiln.asarray(u, DEVICE)            # asarray: the wait at once
    assert float(np.asarray(s.numpy())) == 4096.0 * 4096.0
    assert float(np.asarray(f(a).numpy())) == 4096.0 * 4096.0


def test_numpy_in_cuda_out(rng):
  x = normal(rng, (64, 64))
  f = kiln.jit(lambda x: x.T @ x, device=DEVICE)
  out = f(kiln.asarray(x, DEVICE))
  assert out.device == "cuda:0" and out.__dlpack_device__() == (2, 0)
  # f32 dots run in TF32 at the default precision on cuda, as XLA's do: judged by kiln's own
  # comparison with the TF32 row of docs/tolerances.md (kTf32Tolerance), as the differential
  # suite judges them (CompareOptions::reference_tf32).
  compiled = f.lower(x).compile()            # the executable that ran, from the cache
  assert f.cache_info().misses == 1
  assert compiled.executable._impl.runs_f32_products_in_tf32
  expected = (x.astype(np.float64).T @ x.astype(np.float64)).astype(np.float32)
  ok, report = _kiln._compare_outputs(compiled.as_text(), [kiln.asarray(out.numpy(), "cpu")],
                                      [kiln.asarray(expected, "cpu")], True)
  assert ok, report


def test_cuda_arrays_reach_numpy_as_host_copies(rng):
  x = normal(rng, (5, 20))
  out = kiln.jit(lambda x: x.T * 2, device=DEVICE)(kiln.asarray(x, DEVICE))
  assert out.__dlpack_device__() == (2, 0)
  expected = x.T * 2
  np.testing.assert_array_equal(out.numpy(), expected)
  np.testing.assert_array_equal(np.asarray(out), expected)                # __array__
  np.testing.assert_array_equal(np.asarray(out, dtype=np.float64), expected)
  # The host asked for through DLPack (dl_device=(kDLCPU, 0)): a host copy, unless copy=False.
  capsule = out.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
  assert "dltensor" in repr(capsule)
  with pytest.raises(BufferError):
    out.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
  if np.lib.NumpyVersion(np.__version__) >= "2.1.0":                       # from_dlpack(device=)
    host = np.from_dlpack(out, device="cpu")
    np.testing.assert_array_equal(host, expected)
    assert host.ctypes.data != out.unsafe_buffer_pointer()
