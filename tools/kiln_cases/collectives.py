"""coll_*: collectives inside shard_map on meshes of 1, 2, 4 and 8 CPU devices.

Each case is a jax.jit of a shard_map over a mesh of n of the host platform's devices
(gen_cases.py sets XLA_FLAGS=--xla_force_host_platform_device_count=8), named coll_<what>_n<n>.
The module is what jax 0.10 lowers (Shardy: global parameters and results around
xla.sdy.manual_computation_body); case.npz holds the global inputs and XLA's global outputs.
kiln lowers the module to its per-device program (passes/shard_map_lowering.h) and runs n
participants (docs/collectives.md). The cases go to tests/data/collectives/.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from .spec import F, I

SIZES = (1, 2, 4, 8)


def _mesh(shape, names):
  n = int(np.prod(shape))
  return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def _smap(body, shape, names, in_specs, out_specs):
  """fn(*args) = shard_map(body) over a mesh built when traced (inside jax.jit)."""
  def fn(*args):
    return jax.shard_map(body, mesh=_mesh(shape, names), in_specs=in_specs, out_specs=out_specs,
                         check_vma=False)(*args)
  return fn


def _ring(n):
  return [(i, (i + 1) % n) for i in range(n)]


def _dp_grad(w, x, y):
  def loss(w):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)
  g = jax.grad(loss)(w)
  return jax.lax.pmean(g, 'd'), jax.lax.pmean(loss(w), 'd')


def _tp_matmul(x, w1, w2):
  # Megatron-style: x [B/a, K] replicated over b; w1 column-split over b, w2 row-split over b.
  h = jax.nn.relu(x @ w1)
  return jax.lax.psum(h @ w2, 'b')


def _const(a):
  """An argument maker for a fixed array (offsets and sizes that must agree across devices)."""
  return lambda rng: np.array(a)


def _ragged_plan(n):
  """ragged_all_to_all offsets over n devices: device i sends s[i][j] = (i + j) % 2 + 1 rows to j,
  packed in j order in its input; j stores what i sends after what devices < i send it. Global
  arrays of n * n entries, device i's row its own (sharded P('x'))."""
  s = np.array([[(i + j) % 2 + 1 for j in range(n)] for i in range(n)], np.int32)
  in_off = np.zeros((n, n), np.int32)
  out_off = np.zeros((n, n), np.int32)
  for i in range(n):
    for j in range(n):
      in_off[i, j] = s[i, :j].sum()
      out_off[i, j] = s[:i, j].sum()
  return [a.reshape(-1) for a in (in_off, s, out_off, s.T.copy())]


def _ragged(x, out, io, ss, oo, rs):
  return jax.lax.ragged_all_to_all(x, out, io, ss, oo, rs, axis_name='x')


def _ragged_reference(n):
  """XLA's ragged_all_to_all semantics over n devices, on the global arrays (one update per
  member): device j's output rows oo_i[j].. get device i's rows io_i[j]..+ss_i[j]."""
  def ref(x, out, io, ss, oo, rs):
    rows = x.shape[0] // n
    xs, outs = np.split(x, n), [o.copy() for o in np.split(out, n)]
    io, ss, oo = (a.reshape(n, n) for a in (io, ss, oo))
    for j in range(n):
      for i in range(n):
        size = int(ss[i, j])
        outs[j][oo[i, j]:oo[i, j] + size] = xs[i][io[i, j]:io[i, j] + size]
    assert rows >= 1
    return [np.concatenate(outs)]
  return ref


def _mesh2d(n):
  return {1: (1, 1), 2: (1, 2), 4: (2, 2), 8: (2, 4)}[n]


def register(add):
  kw = dict(subdir='collectives')
  for n in SIZES:
    x = P('x')
    add(f'coll_psum_n{n}', _smap(lambda a: jax.lax.psum(a, 'x'), (n,), ('x',), x, P()), F((8, 16)), **kw)
    add(f'coll_pmean_n{n}', _smap(lambda a: jax.lax.pmean(a, 'x'), (n,), ('x',), x, P()), F((8, 16)), **kw)
    add(f'coll_pmax_n{n}', _smap(lambda a: jax.lax.pmax(a, 'x'), (n,), ('x',), x, P()), F((8, 16)), **kw)
    add(f'coll_psum_s32_n{n}', _smap(lambda a: jax.lax.psum(a, 'x'), (n,), ('x',), x, P()),
        I((8, 4), 's32', -50, 50), **kw)
    add(f'coll_all_gather_n{n}',
        _smap(lambda a: jax.lax.all_gather(a, 'x', axis=0, tiled=True), (n,), ('x',), x, P()),
        F((8, 6)), **kw)
    add(f'coll_all_gather_axis1_n{n}',
        _smap(lambda a: jax.lax.all_gather(a, 'x', axis=1, tiled=True), (n,), ('x',), P(None, 'x'), P()),
        F((4, 8)), **kw)
    add(f'coll_psum_scatter_n{n}',
        _smap(lambda a: jax.lax.psum_scatter(a, 'x', scatter_dimension=0, tiled=True), (n,), ('x',), P(), x),
        F((16, 4)), **kw)
    add(f'coll_all_to_all_n{n}',
        _smap(lambda a: jax.lax.all_to_all(a, 'x', split_axis=1, concat_axis=0, tiled=True), (n,), ('x',),
              x, P(None, 'x')),
        F((8, 16)), **kw)
    add(f'coll_ppermute_n{n}', _smap(lambda a, n=n: jax.lax.ppermute(a, 'x', perm=_ring(n)), (n,), ('x',), x, x),
        F((8, 4)), **kw)
    add(f'coll_axis_index_n{n}',
        _smap(lambda a: a * 10 + jax.lax.axis_index('x').astype(jnp.float32), (n,), ('x',), x, x),
        F((8, 2)), **kw)
    add(f'coll_dp_gradient_n{n}', _smap(_dp_grad, (n,), ('d',), (P(), P('d'), P('d')), (P(), P())),
        F((6, 3), lo=-0.5, hi=0.5), F((16, 6)), F((16, 3), lo=-0.5, hi=0.5), **kw)
    # Every device sends 1 or 2 rows to each (rows 2n per device); rows nobody writes keep `out`.
    add(f'coll_ragged_all_to_all_n{n}',
        _smap(_ragged, (n,), ('x',), (x,) * 6, x),
        F((n * 2 * n, 4)), F((n * 2 * n, 4)), *[_const(a) for a in _ragged_plan(n)],
        reference=_ragged_reference(n), allow_zero=True, **kw)
    a, b = _mesh2d(n)
    add(f'coll_tp_matmul_n{n}',
        _smap(_tp_matmul, (a, b), ('a', 'b'), (P('a', None), P(None, 'b'), P('b', None)), P('a', None)),
        F((8, 12), lo=-1, hi=1), F((12, 16), lo=-0.5, hi=0.5), F((16, 4), lo=-0.5, hi=0.5), **kw)

