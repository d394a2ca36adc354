"""Shared fixtures of kiln's pytest suite: fresh random inputs and the project's tolerances."""

import os
import pathlib
import zlib

import numpy as np
import pytest

import kiln

ROOT = pathlib.Path(os.environ.get("KILN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))

# docs/tolerances.md: rtol, atol by result type (kiln.compile against XLA's outputs).
TOLERANCES = {
    "float64": (1e-9, 1e-9), "complex128": (1e-9, 1e-9),
    "float32": (1e-5, 1e-5), "complex64": (1e-5, 1e-5),
    "float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2),
    "float8_e4m3fn": (0.13, 0.13), "float8_e4m3": (0.13, 0.13), "float8_e4m3fnuz": (0.13, 0.13),
    "float8_e4m3b11fnuz": (0.13, 0.13), "float8_e3m4": (0.13, 0.13),
    "float8_e5m2": (0.25, 0.25), "float8_e5m2fnuz": (0.25, 0.25),
    "float4_e2m1fn": (0.5, 0.5),
}


def pytest_configure(config):
  config.addinivalue_line("markers", "gpu: needs a CUDA device (python/tests/test_gpu.py)")


def has_cuda():
  return any(d.platform == "cuda" for d in kiln.devices())


@pytest.fixture
def rng(request):
  """A Generator seeded by the test's name: fresh values per test, the same on every run."""
  return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def normal(rng, shape, dtype=np.float32, scale=1.0):
  """Random normal values, never exactly zero."""
  a = rng.standard_normal(shape) * scale
  a = np.where(a == 0, 0.5, a)
  return a.astype(dtype)


def uniform(rng, shape, lo, hi, dtype=np.float32):
  return rng.uniform(lo, hi, shape).astype(dtype)


def assert_matches(actual, expected):
  """kiln's result against jax.jit's (XLA's), leaf by leaf, with the project's tolerances.
  Integers and bools compare exactly; NaN never passes (the tests' inputs make none)."""
  import jax
  a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
  e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
  assert a_tree == e_tree, f"structure {a_tree} != {e_tree}"
  for a, e in zip(a_leaves, e_leaves):
    a = np.asarray(a)
    e = np.asarray(e)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
    name = e.dtype.name
    if name in TOLERANCES:
      rtol, atol = TOLERANCES[name]
      wide = np.complex128 if np.iscomplexobj(e) else np.float64
      aw, ew = a.astype(wide), e.astype(wide)
      assert not np.isnan(ew).any(), "the reference has NaN: the test's inputs should make none"
      assert not np.isnan(aw).any(), "kiln's result has NaN"
      np.testing.assert_allclose(aw, ew, rtol=rtol, atol=atol, equal_nan=False)
    else:
      np.testing.assert_array_equal(a, e)
