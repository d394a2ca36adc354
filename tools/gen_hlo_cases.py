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
