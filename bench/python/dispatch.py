#!/usr/bin/env python3
"""Call overhead of kiln.jit beside jax.jit, and the no-copy check (a 1 GiB input costs no
transfer). A benchmark, not a test: prints a table, asserts nothing.

    XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH=python:build-release/python \
        python3 bench/python/dispatch.py --device cuda:0
    PYTHONPATH=python:build-release/python python3 bench/python/dispatch.py --device cpu

Target (issue 19): kiln.jit's dispatch of a tiny function <= 1.5x jax.jit's.
"""

import argparse
import statistics
import time

import numpy as np


def per_call_us(fn, args, iters, repeats=7):
  for _ in range(50):
    out = fn(*args)
  _block(out)
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(iters):
      out = fn(*args)
    _block(out)
    samples.append((time.perf_counter() - start) / iters * 1e6)
  return statistics.median(samples)


def _block(out):
  if hasattr(out, "block_until_ready"):
    out.block_until_ready()


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--device", default="cpu", help="kiln device: cpu or cuda:N (default cpu)")
  p.add_argument("--iters", type=int, default=2000)
  p.add_argument("--big-mib", type=int, default=1024, help="size of the no-copy input (MiB)")
  args = p.parse_args()

  import jax
  import jax.numpy as jnp
  import kiln

  platform = "gpu" if args.device.startswith("cuda") else "cpu"
  jdev = [d for d in jax.devices() if d.platform == platform]
  if not jdev:
    raise SystemExit(f"jax sees no {platform} device")
  jdev = jdev[0]

  def tiny(x):
    return x * 2 + 1

  x = jax.device_put(np.arange(8, dtype=np.float32), jdev)
  jj = jax.jit(tiny)
  kj = kiln.jit(tiny, device=args.device)
  xk = kiln.asarray(x, args.device)
  rows = [
      ("jax.jit, jax array", per_call_us(jj, (x,), args.iters)),
      ("kiln.jit, jax array in/out", per_call_us(kj, (x,), args.iters)),
      ("kiln.jit, kiln.Array in/out", per_call_us(kj, (xk,), args.iters)),
      ("kiln Executable.run_flat, kiln.Array", per_call_us(kj.compile(xk).executable.run_flat, ([xk],), args.iters)),
  ]
  base = rows[0][1]
  print(f"dispatch of x*2+1 on f32[8], {args.device} (median of 7 x {args.iters} calls)")
  for name, us in rows:
    print(f"  {name:40s} {us:8.1f} us   {us / base:5.2f}x jax.jit")
  print(f"  target: kiln.jit <= 1.5x jax.jit -> {'met' if rows[1][1] <= 1.5 * base else 'NOT met'} (jax arrays),"
        f" {'met' if rows[2][1] <= 1.5 * base else 'NOT met'} (kiln arrays)")

  # No copy: a function reading 32 bytes of a 1 GiB input costs what it costs on a small one.
  n = args.big_mib * (1 << 20) // 4
  big = jax.device_put(jnp.ones((n,), jnp.float32), jdev)
  small = jax.device_put(jnp.ones((1024,), jnp.float32), jdev)
  head = kiln.jit(lambda v: v[:8] * 2, device=args.device)
  head(big), head(small)
  t_big = per_call_us(head, (big,), 200, repeats=5)
  t_small = per_call_us(head, (small,), 200, repeats=5)
  same = kiln.asarray(big, args.device).unsafe_buffer_pointer() == big.unsafe_buffer_pointer()
  host = np.ones((n,), np.float32)
  start = time.perf_counter()
  jax.device_put(host, jdev).block_until_ready()
  copy_ms = (time.perf_counter() - start) * 1e3
  print(f"no-copy check: {args.big_mib} MiB input {t_big:.1f} us/call, 4 KiB input {t_small:.1f} us/call; "
        f"same device pointer: {same}; one host->device copy of it would take {copy_ms:.1f} ms")


if __name__ == "__main__":
  main()
