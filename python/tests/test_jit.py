"""kiln.jit against jax.jit on the cpu: the same function, the same fresh random inputs, the
project's tolerances (conftest.assert_matches)."""

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import kiln

from conftest import assert_matches, normal, uniform

DEVICE = "cpu"


def both(fun, *args, **jit_kwargs):
  """(kiln.jit(fun)(*args), jax.jit(fun)(*args))."""
  k = kiln.jit(fun, device=DEVICE, **jit_kwargs)(*args)
  j = jax.jit(fun, **jit_kwargs)(*args)
  return k, j


def check(fun, *args, **jit_kwargs):
  k, j = both(fun, *args, **jit_kwargs)
  assert_matches(k, j)
  return k


# --- elementwise ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_elementwise_float(rng, dtype):
  x = normal(rng, (7, 33), dtype)
  y = uniform(rng, (7, 33), 0.5, 2.0, dtype)
  check(lambda x, y: jnp.tanh(x) * y + jnp.exp(-x * x) - x / y, x, y)
  check(lambda x, y: (jnp.maximum(x, y), jnp.sqrt(y), jnp.log(y), jax.nn.sigmoid(x)), x, y)


def test_elementwise_int_and_bool(rng):
  a = rng.integers(-100, 100, (5, 6)).astype(np.int32)
  b = rng.integers(1, 10, (5, 6)).astype(np.int32)
  check(lambda a, b: (a // b, a % b, a * b - a, a > b, (a & 7) ^ b, jnp.where(a > 0, a, -a)), a, b)


def test_broadcasting_scalars_and_weak_types(rng):
  x = normal(rng, (4, 5))
  check(lambda x, s: x * s + 1, x, 2.5)
  check(lambda x, n: x ** n, x, 3)


# --- reductions ----------------------------------------------------------------------------

def test_reductions(rng):
  x = normal(rng, (6, 17, 5))
  check(lambda x: (x.sum(), x.sum(axis=1), x.max(axis=(0, 2)), x.mean(axis=-1), jnp.argmax(x, axis=1),
                   jnp.prod(1 + 0.01 * x, axis=0), jax.nn.logsumexp(x, axis=1)), x)


def test_softmax_layernorm(rng):
  x = normal(rng, (8, 64))
  check(lambda x: (jax.nn.softmax(x, axis=-1),
                   (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)), x)


# --- dots and convolutions -----------------------------------------------------------------

def test_dots(rng):
  a = normal(rng, (16, 24))
  b = normal(rng, (24, 8))
  c = normal(rng, (3, 16, 24))
  d = normal(rng, (3, 24, 5))
  check(lambda a, b: a @ b, a, b)
  check(lambda c, d: jnp.einsum("bij,bjk->bik", c, d), c, d)
  check(lambda a, v: a @ v, a, normal(rng, (24,)))


def test_convolutions(rng):
  x = normal(rng, (2, 9, 9, 3))     # NHWC
  w = normal(rng, (3, 3, 3, 4))     # HWIO
  dn = ("NHWC", "HWIO", "NHWC")
  check(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn), x, w)
  check(lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "VALID", rhs_dilation=(2, 1), dimension_numbers=dn),
        x, w)
  xs = normal(rng, (2, 3, 10))     # NCW, grouped
  ws = normal(rng, (6, 1, 3))
  check(lambda x, w: lax.conv_general_dilated(x, w, (1,), [(1, 1)], feature_group_count=3), xs, ws)


# --- control flow --------------------------------------------------------------------------

def test_scan(rng):
  xs = normal(rng, (12, 4))
  w = normal(rng, (4, 4), scale=0.5)

  def f(xs, w):
    def step(h, x):
      h = jnp.tanh(h @ w + x)
      return h, h.sum()
    return lax.scan(step, jnp.zeros(4, xs.dtype), xs)

  check(f, xs, w)


def test_while_and_fori(rng):
  x = uniform(rng, (5,), 0.5, 1.0)
  check(lambda x: lax.while_loop(lambda c: c[1] < 10, lambda c: (c[0] * 1.1 + 0.1, c[1] + 1), (x, 0)), x)
  check(lambda x: lax.fori_loop(0, 7, lambda i, v: v * 0.9 + i, x), x)


def test_cond_and_switch(rng):
  x = normal(rng, (3, 3))
  f = lambda p, x: lax.cond(p > 0, lambda x: x @ x, lambda x: -x, x)
  check(f, np.float32(1.5), x)
  check(f, np.float32(-1.5), x)
  g = lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * 3], x)
  for i in range(3):
    check(g, np.int32(i), x)


# --- gradients and layouts -----------------------------------------------------------------

def _mlp_loss(params, x, y):
  h = jnp.tanh(x @ params["w1"] + params["b1"])
  out = h @ params["w2"] + params["b2"]
  return jnp.mean((out - y) ** 2)


def test_gradients(rng):
  params = {"w1": normal(rng, (10, 32), scale=0.3), "b1": normal(rng, (32,), scale=0.1),
            "w2": normal(rng, (32, 3), scale=0.3), "b2": normal(rng, (3,), scale=0.1)}
  x = normal(rng, (16, 10))
  y = normal(rng, (16, 3))
  check(jax.value_and_grad(_mlp_loss), params, x, y)
  check(jax.grad(lambda w, x: jnp.sum(jnp.sin(x @ w))), normal(rng, (20, 5)), normal(rng, (5, 20)))


def test_non_default_result_layouts(rng):
  # JAX asks for f32[20,5]{0,1} (column-major) results here: they must come out as values.
  x = normal(rng, (5, 20))
  f = lambda x: (x.T * 2, x.sum(0))
  hlo = kiln.jit(f, device=DEVICE).lower(x).as_text()
  if DEVICE == "cpu":
    assert "f32[20,5]{0,1}" in hlo.splitlines()[0]
  check(f, x)


def test_non_default_layouts_in_hand_written_hlo(rng):
  hlo = """HloModule layouts, entry_computation_layout={(f32[5,20]{0,1})->f32[20,5]{0,1}}
ENTRY main {
  p = f32[5,20]{0,1} parameter(0)
  ROOT t = f32[20,5]{0,1} transpose(p), dimensions={1,0}
}
"""
  x = normal(rng, (5, 20))
  out = kiln.compile(hlo, DEVICE).run(x)
  np.testing.assert_array_equal(np.asarray(out), x.T)
  # numpy reads host memory only: a device result is asked for on the host (dl_device=(kDLCPU,
  # 0), a copy); a host result is exported as it is.
  host = np.from_dlpack(out) if DEVICE == "cpu" else np.from_dlpack(out, device="cpu")
  np.testing.assert_array_equal(host, x.T)


# --- pytrees, static arguments -------------------------------------------------------------

def test_pytrees_in_and_out(rng):
  tree = {"a": normal(rng, (3,)), "b": (normal(rng, (2, 3)), [normal(rng, ())])}

  def f(t, scale):
    return {"sum": t["a"] + t["b"][0], "nested": [t["b"][1][0] * scale, (t["a"].max(),)]}

  k = check(f, tree, np.float32(2.0))
  assert isinstance(k, dict) and isinstance(k["nested"], list) and isinstance(k["nested"][1], tuple)


def test_keyword_arguments(rng):
  x = normal(rng, (4,))
  y = normal(rng, (4,))
  f = kiln.jit(lambda x, y, *, alpha: x * alpha + y, device=DEVICE, static_argnames="alpha")
  assert_matches(f(x, y=y, alpha=3.0), x * np.float32(3.0) + y)
  assert_matches(f(x, y, alpha=3.0), x * np.float32(3.0) + y)


def test_static_argnums(rng):
  x = normal(rng, (6, 4))
  f = kiln.jit(lambda x, n, op: op(x.reshape(n, -1), axis=0), device=DEVICE, static_argnums=(1, 2))
  assert_matches(f(x, 3, jnp.sum), x.reshape(3, -1).sum(0))
  assert_matches(f(x, 2, jnp.max), x.reshape(2, -1).max(0))
  assert f.cache_info().misses == 2
  assert_matches(f(x, 3, jnp.sum), x.reshape(3, -1).sum(0))
  assert f.cache_info().misses == 2


def test_static_argnames_complete_static_argnums(rng):
  x = normal(rng, (4,))
  f = kiln.jit(lambda x, k: x * k, device=DEVICE, static_argnames="k")
  assert_matches(f(x, 2), x * 2)       # k passed by position is static too
  assert_matches(f(x, k=2), x * 2)


def test_unhashable_static_argument_is_invalid(rng):
  f = kiln.jit(lambda x, s: x, device=DEVICE, static_argnums=1)
  with pytest.raises(kiln.InvalidArgumentError, match="hashable"):
    f(normal(rng, (2,)), [1, 2])


# --- the cache -----------------------------------------------------------------------------

def test_second_call_compiles_nothing(rng):
  f = kiln.jit(lambda x, y: x @ y + 1, device=DEVICE)
  x, y = normal(rng, (4, 5)), normal(rng, (5, 3))
  f(x, y)
  assert f.cache_info() == kiln.CacheInfo(hits=0, misses=1, maxsize=None, currsize=1)
  f(normal(rng, (4, 5)), normal(rng, (5, 3)))
  f(jnp.asarray(x), jnp.asarray(y))    # jax arrays of the same signature share the executable
  assert f.cache_info() == kiln.CacheInfo(hits=2, misses=1, maxsize=None, currsize=1)


def test_cache_keys(rng):
  f = kiln.jit(lambda x: x * 2, device=DEVICE)
  f(normal(rng, (3,)))
  f(normal(rng, (4,)))                                   # shape
  f(normal(rng, (3,), np.float16))                       # dtype
  f(2.0)                                                 # a weakly typed scalar
  f(np.float32(2.0))                                     # a strongly typed one
  f((normal(rng, (3,)),)[0])                             # same as the first
  assert f.cache_info().misses == 5
  f([normal(rng, (3,))][0].reshape(3, 1))                # rank
  assert f.cache_info().misses == 6
  g = kiln.jit(lambda t: t[0] + t[1], device=DEVICE)
  g((normal(rng, (3,)), normal(rng, (3,))))
  g([normal(rng, (3,)), normal(rng, (3,))])              # pytree structure: list vs tuple
  assert g.cache_info().misses == 2


def test_default_matmul_precision_is_part_of_the_key(rng):
  f = kiln.jit(lambda a, b: a @ b, device=DEVICE)
  a, b = normal(rng, (8, 16)), normal(rng, (16, 4))
  f(a, b)
  assert "highest" not in f.lower(a, b).as_text()
  with jax.default_matmul_precision("highest"):
    r = f(a, b)
    assert "operand_precision={highest,highest}" in f.lower(a, b).as_text()
    np.testing.assert_allclose(np.asarray(r), np.asarray(jax.jit(lambda a, b: a @ b)(a, b)), rtol=1e-5, atol=1e-5)
  assert f.cache_info().misses == 2
  f(a, b)  # back to the default: the first executable again
  assert f.cache_info().misses == 2


def test_x64_mode_is_part_of_the_key(rng):
  f = kiln.jit(lambda x: x + 1, device=DEVICE)
  x = rng.standard_normal(4)  # float64
  r32 = f(x)
  assert r32.dtype == np.float32  # canonicalized as jax.jit does without x64
  jax.config.update("jax_enable_x64", True)
  try:
    r64 = f(x)
    assert r64.dtype == np.float64
    np.testing.assert_allclose(r64, x + 1, rtol=1e-12)
  finally:
    jax.config.update("jax_enable_x64", False)
  assert f.cache_info().misses == 2


def test_lower_and_compile(rng):
  x = normal(rng, (3, 4))
  f = kiln.jit(lambda x: jnp.sin(x).sum(0), device=DEVICE)
  lowered = f.lower(x)
  text = lowered.as_text()
  assert text.startswith("HloModule") and "sine" in text
  assert f.cache_info().misses == 0          # lowering compiles nothing
  compiled = lowered.compile()
  assert_matches(compiled(x), np.sin(x).sum(0))
  assert compiled.memory_stats()["argument_bytes"] == x.nbytes
  f(x)
  assert f.cache_info().misses == 1 and f.cache_info().hits == 1
  with pytest.raises(kiln.InvalidArgumentError, match="signature"):
    compiled(normal(rng, (4, 4)))


# --- what comes back -----------------------------------------------------------------------

def test_outputs_come_as_the_inputs_came(rng):
  f = kiln.jit(lambda x: x + 1, device=DEVICE)
  x = normal(rng, (3,))
  assert isinstance(f(x), np.ndarray)
  assert isinstance(f(jnp.asarray(x)), jax.Array)
  assert isinstance(f(kiln.asarray(x, DEVICE)), kiln.Array)
  assert isinstance(f(1.0), kiln.Array)


def test_narrow_dtypes(rng):
  x = normal(rng, (4, 8), ml_dtypes.bfloat16)
  k = check(lambda x: (x * 3 + 1, x.astype(jnp.float32)), x)   # (XLA keeps excess precision
  assert k[0].dtype == ml_dtypes.bfloat16                         #  in bf16 -> f32 chains)
  f8 = normal(rng, (16,), ml_dtypes.float8_e4m3fn, scale=2)
  check(lambda v: v.astype(jnp.float32) * 2, f8)
  i4 = rng.integers(-8, 8, (10,)).astype(ml_dtypes.int4)
  k = check(lambda v: (v.astype(jnp.int32) * 3, v), i4)
  assert k[1].dtype == ml_dtypes.int4
  u4 = rng.integers(0, 16, (10,)).astype(ml_dtypes.uint4)
  check(lambda v: v.astype(jnp.int32) + 1, u4)


# --- donation ------------------------------------------------------------------------------

def test_donated_kiln_array_is_consumed(rng):
  step = kiln.jit(lambda w, g: w - 0.1 * g, device=DEVICE, donate_argnums=0)
  w0 = normal(rng, (64,))
  g0 = normal(rng, (64,))
  g = kiln.asarray(g0, DEVICE)
  w = kiln.asarray(w0.copy(), DEVICE)
  w = step(w, g)          # borrowed memory: a copy is donated, w0's copy untouched
  for _ in range(3):
    prev = w
    w = step(w, g)
    assert prev.is_deleted
    with pytest.raises(kiln.FailedPreconditionError, match="donated"):
      prev.numpy()
  expected = w0
  for _ in range(4):
    expected = expected - np.float32(0.1) * g0
  np.testing.assert_allclose(np.asarray(w), expected, rtol=1e-5, atol=1e-6)
  assert "aliased_bytes" in step.lower(w, g).compile().memory_stats()


def test_donation_never_overwrites_callers_arrays(rng):
  step = kiln.jit(lambda w: w * 2, device=DEVICE, donate_argnums=0)
  w = normal(rng, (32,))
  ro = w.copy()
  ro.flags.writeable = False
  before = w.copy()
  out = step(w)
  np.testing.assert_array_equal(w, before)
  out_ro = step(ro)
  np.testing.assert_array_equal(ro, before)
  np.testing.assert_allclose(out, before * 2)
  np.testing.assert_allclose(out_ro, before * 2)
  j = jnp.asarray(before)
  step(j)
  np.testing.assert_array_equal(np.asarray(j), before)


def test_donation_of_an_exported_array_copies(rng):
  step = kiln.jit(lambda w: w + 1, device=DEVICE, donate_argnums=0)
  w = step(kiln.asarray(normal(rng, (8,)), DEVICE))
  before = w.numpy().copy()
  capsule = w.__dlpack__()          # a live export of w's memory (on any device)
  step(w)
  assert not w.is_deleted           # a copy was donated: the export still sees w
  np.testing.assert_array_equal(w.numpy(), before)
  del capsule


def test_foreign_arrays_take_their_dtype(rng):
  torch = pytest.importorskip("torch")
  t = torch.from_numpy(normal(rng, (3, 4)))
  out = kiln.jit(lambda x: x * 2, device=DEVICE)(t)
  assert isinstance(out, kiln.Array)
  np.testing.assert_array_equal(out.numpy(), 2 * t.numpy())


def test_float64_kiln_arrays_without_x64(rng):
  x = rng.standard_normal(5)
  out = kiln.jit(lambda v: v + 1, device=DEVICE)(kiln.asarray(x, DEVICE))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out.numpy(), (x + 1).astype(np.float32), rtol=1e-6)


def test_kiln_array_methods(rng):
  x = normal(rng, (2, 3))
  a = kiln.asarray(x, DEVICE)
  assert a.shape == (2, 3) and a.dtype == np.float32 and a.hlo_type == "f32" and a.device == "cpu:0"
  assert a.ndim == 2 and a.size == 6 and a.nbytes == 24
  assert "f32[2,3]" in repr(a)
  v = a.numpy()
  assert not v.flags.writeable
  np.testing.assert_array_equal(v, x)
  a.delete()
  assert a.is_deleted


def test_results_outlive_their_executables(rng):
  import gc
  x = normal(rng, (16,))
  out = kiln.jit(lambda x: x * 2, device=DEVICE)(kiln.asarray(x, DEVICE))   # the Jitted is gone
  view = kiln.jit(lambda x: x + 1, device=DEVICE)(kiln.asarray(x, DEVICE)).numpy()
  gc.collect()
  np.testing.assert_array_equal(out.numpy(), x * 2)
  # Donated into another executable: the result holds both executables' memory.
  chained = kiln.jit(lambda v: v - 1, device=DEVICE, donate_argnums=0)(out)
  del out
  gc.collect()
  np.testing.assert_array_equal(chained.numpy(), x * 2 - 1)
  np.testing.assert_array_equal(view, x + 1)
  del chained, view
  gc.collect()


def test_interpreter_device(rng):
  x = normal(rng, (3, 4))
  f = kiln.jit(lambda x: jnp.tanh(x).sum(0), device="interpreter")
  assert f.device == "interpreter:0"
  assert_matches(f(x), np.tanh(x).sum(0))


def test_concurrent_calls(rng):
  import concurrent.futures
  # The dot at HIGHEST precision, spelled in the function: it is traced in a worker thread, where
  # the caller's jax.default_matmul_precision (a thread-local context) does not apply, and on
  # cuda the default precision is TF32 (the f32 row of the tolerances would not hold).
  fun = lambda x, y: jnp.matmul(x, y, precision=lax.Precision.HIGHEST) + 1
  f = kiln.jit(fun, device=DEVICE)
  pairs = [(normal(rng, (32, 16)), normal(rng, (16, 8))) for _ in range(16)]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    outs = list(pool.map(lambda p: f(*p), pairs))
  for (x, y), out in zip(pairs, outs):
    assert_matches(out, jax.jit(fun)(x, y))
  assert f.cache_info().currsize == 1
