#!/usr/bin/env python3
"""Writes case.npz for the hand-written HLO cases in tests/data/hlo/<case>/module.hlo.

These modules hold constructs that JAX does not emit (XLA's dynamic-shape custom calls, a dot
without dimension numbers, older test-module syntax), so tools/gen_cases.py cannot make them.
Their expected outputs are computed here with numpy from XLA's semantics (hlo_parser.cc,
ir_emitter.cc's SliceToDynamic / PadToStatic), not by running XLA; each module masks what
XLA leaves unspecified (the elements of PadToStatic past the dynamic sizes) before returning
it. Inputs are drawn from a numpy Generator seeded with the CRC-32 of the case name.

    python3 tools/gen_hlo_cases.py            # write tests/data/hlo/*/case.npz
    python3 tools/gen_hlo_cases.py --check    # compare with what is there, write nothing

It also writes the hand-written collective cases tests/data/collectives/coll_hlo_<what>_n<N>/
(module.hlo and case.npz, N = 1, 2, 4, 8): per-device programs over num_partitions=N with
collectives JAX does not emit -- reduction computations other than add / multiply / min / max,
collective-broadcast, send / recv -- their parameters and root sharded along dimension 0 so the
differential suite splits the global inputs and joins the outputs (docs/collectives.md). Their
outputs are numpy's, from XLA's semantics (rank order of the groups, zeros where nothing
arrives).
"""

import argparse
import io
import os
import sys
import zlib

import ml_dtypes
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'data', 'hlo')


def slice_to_dynamic_pad(rng):
  x = rng.integers(-50, 50, size=(3, 4), dtype=np.int32)
  rows, cols = np.int32(2), np.int32(3)
  y = np.zeros_like(x)
  y[:rows, :cols] = x[:rows, :cols] * x[:rows, :cols]
  return [x, rows, cols], [y, rows, cols, cols]


def set_dimension_size(rng):
  x = rng.uniform(-4, 4, size=(6,)).astype(np.float32)
  n = np.int32(4)
  y = np.zeros_like(x)
  y[:n] = -x[:n]
  return [x, n], [y, n, n]


def dot_no_dimension_numbers(rng):
  a = rng.uniform(-1, 1, size=(3,)).astype(np.float32)
  b = rng.uniform(-1, 1, size=(4,)).astype(np.float32)
  m = rng.uniform(-1, 1, size=(2, 3)).astype(np.float32)
  return [a, b, m], [np.einsum('i,j->ij', a, b), np.einsum('ij,k->ijk', m, b)]


def constant_scalar_broadcast(rng):
  # bf16 values stored widened to float32 (tests/data/README.md); 0.5 * x + 0 is exact.
  x = rng.uniform(-8, 8, size=(8, 16)).astype(ml_dtypes.bfloat16)
  out = (x.astype(np.float32) * 0.5).astype(ml_dtypes.bfloat16)
  return [x.astype(np.float32)], [out.astype(np.float32)]


# ---- hand-written collective cases (tests/data/collectives/coll_hlo_*) ----------------------------

COLL_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'data', 'collectives')
SIZES = (1, 2, 4, 8)


def _tiled(n):
  return f'sharding={{devices=[{n},1]<=[{n}]}}'


def coll_reducers_module(n):
  t = _tiled(n)
  return f"""HloModule coll_hlo_reducers_n{n}, num_partitions={n}

absmax {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ge = pred[] compare(aa, ab), direction=GE
  ROOT r = f32[] select(ge, a, b)
}}

xors {{
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] xor(a, b)
}}

ENTRY e {{
  x = f32[8,4] parameter(0), {t}
  y = s32[8,4] parameter(1), {t}
  a = f32[8,4] all-reduce(x), channel_id=1, replica_groups={{}}, use_global_device_ids=true, to_apply=absmax
  b = s32[8,4] all-reduce(y), channel_id=2, replica_groups={{}}, use_global_device_ids=true, to_apply=xors
  c = f32[{8 // n},4] reduce-scatter(x), channel_id=3, replica_groups={{}}, use_global_device_ids=true, dimensions={{0}}, to_apply=absmax
  ROOT t = (f32[8,4], s32[8,4], f32[{8 // n},4]) tuple(a, b, c), sharding={{{{replicated}}, {{replicated}}, {{devices=[{n},1]<=[{n}]}}}}
}}
"""


def coll_reducers(rng, n):
  # Distinct magnitudes: the absolute maximum is unique, whatever the order of the fold.
  mags = rng.permutation(np.arange(1, 8 * n * 4 + 1, dtype=np.float32)).reshape(8 * n, 4) / 4
  x = np.where(rng.uniform(size=mags.shape) < 0.5, -mags, mags).astype(np.float32)
  y = rng.integers(-1000, 1000, size=(8 * n, 4), dtype=np.int32)
  xs, ys = np.split(x, n), np.split(y, n)
  stack = np.stack(xs)
  pick = np.take_along_axis(stack, np.abs(stack).argmax(axis=0)[None], axis=0)[0]
  b = ys[0].copy()
  for v in ys[1:]:
    b ^= v
  return [x, y], [pick, b, pick]  # the reduce-scatter's chunks joined are the all-reduce


def coll_broadcast_module(n):
  t = _tiled(n)
  half = max(1, n // 2)
  groups = [list(range(half))[::-1], list(range(half, n))[::-1]] if n > 1 else [[0]]
  g = '{' + ','.join('{' + ','.join(map(str, x)) + '}' for x in groups) + '}'
  return f"""HloModule coll_hlo_broadcast_n{n}, num_partitions={n}

ENTRY e {{
  x = f32[8,4] parameter(0), {t}
  y = s32[3] parameter(1), sharding={{devices=[{n}]<=[{n}]}}
  ROOT b = (f32[8,4], s32[3]) collective-broadcast(x, y), channel_id=1, replica_groups={g}, sharding={{{{devices=[{n},1]<=[{n}]}}, {{devices=[{n}]<=[{n}]}}}}
}}
"""


def coll_broadcast(rng, n):
  # Groups are the two halves in reverse order: rank 0, the root, is each half's last device.
  x = rng.uniform(-4, 4, size=(8 * n, 4)).astype(np.float32)
  y = rng.integers(-100, 100, size=(3 * n,), dtype=np.int32)
  half = max(1, n // 2)
  root = [half - 1 if d < half else n - 1 for d in range(n)]
  xs, ys = np.split(x, n), np.split(y, n)
  return [x, y], [np.concatenate([xs[root[d]] for d in range(n)]), np.concatenate([ys[root[d]] for d in range(n)])]


def coll_send_recv_module(n):
  t = _tiled(n)
  ring = '{' + ','.join(f'{{{i},{(i + 1) % n}}}' for i in range(n)) + '}'
  last = f'{{{{{n - 1},0}}}}'
  def attrs(pairs):
    return f'frontend_attributes={{_xla_send_recv_source_target_pairs="{pairs}"}}'
  return f"""HloModule coll_hlo_send_recv_n{n}, num_partitions={n}

ENTRY e {{
  x = f32[8,4] parameter(0), {t}
  tok = token[] after-all()
  rv = (f32[8,4], u32[], token[]) recv(tok), channel_id=1, {attrs(ring)}
  sd = (f32[8,4], u32[], token[]) send(x, tok), channel_id=1, {attrs(ring)}
  rd = (f32[8,4], token[]) recv-done(rv), channel_id=1, {attrs(ring)}
  sdd = token[] send-done(sd), channel_id=1, {attrs(ring)}
  g = f32[8,4] get-tuple-element(rd), index=0
  n2 = f32[8,4] negate(x)
  rv2 = (f32[8,4], u32[], token[]) recv(tok), channel_id=2, {attrs(last)}
  rd2 = (f32[8,4], token[]) recv-done(rv2), channel_id=2, {attrs(last)}
  sd2 = (f32[8,4], u32[], token[]) send(n2, tok), channel_id=2, {attrs(last)}
  sdd2 = token[] send-done(sd2), channel_id=2, {attrs(last)}
  g2 = f32[8,4] get-tuple-element(rd2), index=0
  ROOT t = (f32[8,4], f32[8,4]) tuple(g, g2), sharding={{{{devices=[{n},1]<=[{n}]}}, {{devices=[{n},1]<=[{n}]}}}}
}}
"""


def coll_send_recv(rng, n):
  # Channel 1: a ring (device d gets d - 1's x); channel 2: only device 0 receives, -x of the
  # last device (the others get zeros). Channel 2's recv-done is written before its send: the
  # backends order send -> recv-done -> send-done (passes/send_recv_ordering.h).
  x = rng.uniform(-4, 4, size=(8 * n, 4)).astype(np.float32)
  xs = np.split(x, n)
  ring = np.concatenate([xs[(d - 1) % n] for d in range(n)])
  second = np.concatenate([-xs[n - 1] if d == 0 else np.zeros_like(xs[d]) for d in range(n)])
  return [x], [ring, second]


COLL_CASES = {
    'reducers': (coll_reducers_module, coll_reducers),
    'broadcast': (coll_broadcast_module, coll_broadcast),
    'send_recv': (coll_send_recv_module, coll_send_recv),
}


CASES = {
    'hlo_slice_to_dynamic_pad_s32': slice_to_dynamic_pad,
    'hlo_set_dimension_size_f32': set_dimension_size,
    'hlo_dot_no_dimension_numbers_f32': dot_no_dimension_numbers,
    'hlo_constant_scalar_broadcast_bf16': constant_scalar_broadcast,
}


def npz_bytes(inputs, outputs):
  arrays = {f'in{i}': np.asarray(v) for i, v in enumerate(inputs)}
  arrays.update({f'out{i}': np.asarray(v) for i, v in enumerate(outputs)})
  buf = io.BytesIO()
  np.savez(buf, **arrays)
  return buf.getvalue()


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument('--check', action='store_true')
  args = ap.parse_args()
  bad = 0
  for what, (module, fn) in COLL_CASES.items():
    for n in SIZES:
      name = f'coll_hlo_{what}_n{n}'
      folder = os.path.join(COLL_ROOT, name)
      text = module(n)
      inputs, outputs = fn(np.random.default_rng(zlib.crc32(name.encode())), n)
      path = os.path.join(folder, 'case.npz')
      if args.check:
        try:
          with open(os.path.join(folder, 'module.hlo')) as f:
            same = f.read() == text
          have = np.load(path)
          want = np.load(io.BytesIO(npz_bytes(inputs, outputs)))
          same = same and sorted(have.files) == sorted(want.files) and all(
              np.array_equal(have[k], want[k]) for k in want.files)
        except OSError:
          same = False
        print(f'{name}: {"ok" if same else "DIFFERS"}')
        bad += not same
      else:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, 'module.hlo'), 'w') as f:
          f.write(text)
        with open(path, 'wb') as f:
          f.write(npz_bytes(inputs, outputs))
        print(f'wrote {folder}')
  for name, fn in CASES.items():
    folder = os.path.join(ROOT, name)
    if not os.path.isfile(os.path.join(folder, 'module.hlo')):
      print(f'{name}: no module.hlo in {folder}', file=sys.stderr)
      bad += 1
      continue
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs, outputs = fn(rng)
    path = os.path.join(folder, 'case.npz')
    if args.check:
      have = np.load(path)
      want = np.load(io.BytesIO(npz_bytes(inputs, outputs)))
      same = sorted(have.files) == sorted(want.files) and all(np.array_equal(have[k], want[k]) for k in want.files)
      print(f'{name}: {"ok" if same else "DIFFERS"}')
      bad += not same
    else:
      with open(path, 'wb') as f:
        f.write(npz_bytes(inputs, outputs))
      print(f'wrote {path}')
  return 1 if bad else 0


if __name__ == '__main__':
  sys.exit(main())
