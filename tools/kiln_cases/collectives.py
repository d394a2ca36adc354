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
    a, b = _mesh2d(n)
    add(f'coll_tp_matmul_n{n}',
        _smap(_tp_matmul, (a, b), ('a', 'b'), (P('a', None), P(None, 'b'), P('b', None)), P('a', None)),
        F((8, 12), lo=-1, hi=1), F((12, 16), lo=-0.5, hi=0.5), F((16, 4), lo=-0.5, hi=0.5), **kw)

