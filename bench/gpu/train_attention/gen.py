#!/usr/bin/env python3
"""A training step with attention (issue 15's workload): one SGD step of the bench suite's
transformer block (xla_workloads.attention_block: pre-LN, 16 heads, causal, bf16, B8 S1024
D1024) on the loss mean(block(x)^2), through jax.value_and_grad.

    python3 bench/gpu/train_attention/gen.py OUT_DIR [--time]

writes OUT_DIR/train_attention_bf16/module.hlo (the HLO JAX hands an HLO compiler; lowering needs
no GPU) and, with --time on a GPU machine, prints XLA's median ms as one JSON line. Also writes
OUT_DIR/train_attention_f32_small/{module.hlo,case.npz} (B1 S16 D32 2 heads, XLA's outputs on
this machine) for correctness checks (`kiln compare`). The suite's workload scripts are found
in $KILN_BENCH_DIR, .device-deps/bench or ../shared/bench.
"""
import json
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, '..', '..', '..'))
for d in (os.environ.get('KILN_BENCH_DIR', ''), os.path.join(root, '.device-deps', 'bench'),
          os.path.join(root, '..', 'shared', 'bench')):
  if d and os.path.exists(os.path.join(d, 'xla_workloads.py')):
    sys.path.insert(0, d)
    break
out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/train_attention'
time_xla = '--time' in sys.argv[2:] or os.environ.get('KILN_TIME_XLA') == '1'
sys.argv = sys.argv[:1] + [os.path.join(out, '_xla_workloads_scratch')]  # xla_workloads reads argv at import

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import xla_workloads as xw  # noqa: E402


def train_step(x, *params, heads, lr=0.01):
  def loss(p):
    y = xw.attention_block(x, *p, heads=heads)
    return jnp.mean(jnp.square(y.astype(jnp.float32)))
  l, g = jax.value_and_grad(loss)(params)
  return (l,) + tuple(p - jnp.asarray(lr, p.dtype) * gp for p, gp in zip(params, g))


def args(B, S, D, dt):
  r = xw.rnd
  return (r((B, S, D), dt), 1 + r((D,), dt, 0.1), r((D,), dt, 0.1), r((D, 3 * D), dt, D**-0.5),
          r((D, D), dt, D**-0.5), 1 + r((D,), dt, 0.1), r((D,), dt, 0.1), r((D, 4 * D), dt, D**-0.5),
          r((4 * D, D), dt, (4 * D)**-0.5))


def lower(name, heads, a):
  d = os.path.join(out, name)
  os.makedirs(d, exist_ok=True)
  f = jax.jit(lambda *t: train_step(*t, heads=heads))
  low = f.lower(*a)
  open(os.path.join(d, 'module.hlo'), 'w').write(low.as_text(dialect='hlo'))
  return f, d


def main():
  f, _ = lower('train_attention_bf16', 16, args(8, 1024, 1024, jnp.bfloat16))
  small = args(1, 16, 32, jnp.float32)
  fs, ds = lower('train_attention_f32_small', 2, small)
  outs = jax.tree_util.tree_leaves(fs(*small))
  np.savez(os.path.join(ds, 'case.npz'), **{f'in{i}': np.asarray(a) for i, a in enumerate(small)},
           **{f'out{i}': np.asarray(o) for i, o in enumerate(outs)})
  if time_xla:
    a = args(8, 1024, 1024, jnp.bfloat16)
    c = f.lower(*a).compile()
    for _ in range(3):
      jax.block_until_ready(c(*a))
    ts = []
    for _ in range(30):
      t = time.perf_counter()
      jax.block_until_ready(c(*a))
      ts.append(time.perf_counter() - t)
    print(json.dumps({'name': 'train_attention_bf16', 'xla_ms': round(statistics.median(ts) * 1e3, 4)}))


if __name__ == '__main__':
  main()
