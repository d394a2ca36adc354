#!/usr/bin/env python3
"""Writes kiln's conformance cases: small JAX programs and XLA's CPU results for them.

    python3 tools/gen_cases.py --out tests/data [--only PATTERN] [--check]

For every case in the table (tools/kiln_cases/*.py) it writes <out>/[<subdir>/]<name>/ with
  module.hlo  jax.jit(fn).lower(*inputs).as_text(dialect="hlo"), untouched;
  case.npz    in0, in1, ... (the entry parameters in order) and out0, out1, ... (the flattened
              result as XLA's CPU backend computes it). bf16/f16/f8 values are stored widened to
              float32 and int4/uint4 widened to int8/uint8 (all exact); every other dtype is
              stored as itself.
See tests/data/README.md for the conventions. PATTERN is a comma-separated list of fnmatch
globs on case names (e.g. 'ew_*_f16' or 'conv_*,dot_*'); without --only, stale case folders are removed.

Cases that need 64-bit types run in a second process with jax_enable_x64 (that flag changes
default dtypes and so the HLO of other cases). --check regenerates in memory and compares with
the files on disk instead of writing (a determinism check).
"""

import argparse
import collections
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
# The collective cases (kiln_cases/collectives.py) run shard_map on meshes of up to 8 of the
# host platform's devices; the other cases run on the first one as before.
if '--xla_force_host_platform_device_count' not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') +
                             ' --xla_force_host_platform_device_count=8').strip()
warnings.filterwarnings('ignore')

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MAX_INPUT_BYTES = 64 * 1024


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  p.add_argument('--out', default='tests/data', help='output folder (default tests/data)')
  p.add_argument('--only', default=None, help='fnmatch globs on case names, comma separated')
  p.add_argument('--check', action='store_true',
                 help='compare regenerated cases with the files on disk; write nothing')
  p.add_argument('--list', action='store_true', help='list the selected cases and exit')
  p.add_argument('--x64-only', action='store_true', help=argparse.SUPPRESS)
  return p.parse_args(argv)


def build_table():
  from kiln_cases import spec
  from kiln_cases import (elementwise, convert, shape, gather_scatter, reduce, dot_conv,
                          sort, control, random, fft, linalg, nn, attention, collectives)
  table = spec.Table()
  for mod in (elementwise, convert, shape, gather_scatter, reduce, dot_conv, sort, control,
              random, fft, linalg, nn, attention, collectives):
    mod.register(table.add)
  return table.cases


def selected(cases, only):
  pats = None if only is None else only.split(',')
  return [c for c in cases if pats is None or any(fnmatch.fnmatchcase(c.name, p) for p in pats)]


# --- storage -------------------------------------------------------------------------------------

def to_store(a):
  """The npz form of an array: narrow floats widened to float32, int4 to int8."""
  import numpy as np
  from kiln_cases import spec
  name = spec.HLO_NAME.get(a.dtype)
  if name in spec.NARROW_FLOATS:
    return a.astype(np.float32)
  if name == 's4':
    return a.astype(np.int8)
  if name == 'u4':
    return a.astype(np.uint8)
  return a


def hlo_dtype(a):
  from kiln_cases import spec
  return spec.HLO_NAME[a.dtype]


_SHAPE_RE = re.compile(r'\b([a-z][a-z0-9]*)\[([0-9,]*)\]')


def entry_signature(hlo):
  """Flattened (dtype, dims) lists of the entry parameters and result, from the module header."""
  key = 'entry_computation_layout={'
  i = hlo.index(key) + len(key)
  depth, j = 1, i
  while depth:
    depth += {'{': 1, '}': -1}.get(hlo[j], 0)
    j += 1
  sig = hlo[i:j - 1]
  depth = 0
  for k in range(len(sig) - 1):
    ch = sig[k]
    if ch in '([{':
      depth += 1
    elif ch in ')]}':
      depth -= 1
    elif depth == 0 and sig[k:k + 2] == '->':
      break
  params, result = sig[:k], sig[k + 2:]

  def shapes(text):
    return [(m.group(1), tuple(int(d) for d in m.group(2).split(',') if d))
            for m in _SHAPE_RE.finditer(text)]
  return shapes(params), shapes(result)


# --- one case -------------------------------------------------------------------------------------

def run_case(case):
  """Returns (hlo_text, inputs, outputs) for a case, all in native dtypes."""
  import jax
  import numpy as np
  inputs = case.inputs()
  for k, a in enumerate(inputs):
    if a.nbytes > MAX_INPUT_BYTES:
      raise ValueError(f'in{k} is {a.nbytes} bytes (limit {MAX_INPUT_BYTES})')
    if a.size > 0 and not case.allow_zero and not np.any(to_store(a) != 0):
      raise ValueError(f'in{k} is all zeros')
  jitted = jax.jit(case.fn)
  if case.platform:
    lowered = jitted.trace(*inputs).lower(lowering_platforms=(case.platform,))
  else:
    lowered = jitted.lower(*inputs)
  hlo = lowered.as_text(dialect='hlo')
  if case.reference is not None:  # XLA's CPU backend cannot run it: numpy's outputs
    jitted = lambda *a: case.reference(*a)  # noqa: E731 (what reload_and_rerun reruns)
  outputs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jitted(*inputs))]
  if not outputs:
    raise ValueError('the function returns nothing')
  params, results = entry_signature(hlo)
  got_in = [(hlo_dtype(a), a.shape) for a in inputs]
  got_out = [(hlo_dtype(a), a.shape) for a in outputs]
  if params != got_in:
    raise ValueError(f'entry parameters {params} != inputs {got_in} (an unused input?)')
  if results != got_out:
    raise ValueError(f'entry result {results} != outputs {got_out}')
  return hlo, inputs, outputs, jitted


def arrays_for_npz(inputs, outputs):
  d = {}
  for k, a in enumerate(inputs):
    d[f'in{k}'] = to_store(a)
  for k, a in enumerate(outputs):
    d[f'out{k}'] = to_store(a)
  return d


def same_bits(a, b):
  return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def write_case(folder, hlo, arrays):
  import numpy as np
  os.makedirs(folder, exist_ok=True)
  with open(os.path.join(folder, 'module.hlo'), 'w') as f:
    f.write(hlo)
  np.savez(os.path.join(folder, 'case.npz'), **arrays)


def reload_and_rerun(folder, inputs, jitted):
  """Sanity check: loads case.npz, restores the input dtypes, reruns, compares bit for bit."""
  import jax
  import numpy as np
  with np.load(os.path.join(folder, 'case.npz')) as z:
    stored = {k: z[k] for k in z.files}
  n_in = sum(1 for k in stored if k.startswith('in'))
  restored = [stored[f'in{k}'].astype(inputs[k].dtype) for k in range(n_in)]
  for k, (r, a) in enumerate(zip(restored, inputs)):
    if not same_bits(r, a):
      raise ValueError(f'in{k} does not survive the npz round trip')
  again = [np.asarray(o) for o in jax.tree_util.tree_leaves(jitted(*restored))]
  for k, o in enumerate(again):
    if not same_bits(to_store(o), stored[f'out{k}']):
      raise ValueError(f'out{k} differs when rerun from case.npz')


def check_case(folder, hlo, arrays):
  import numpy as np
  problems = []
  try:
    with open(os.path.join(folder, 'module.hlo')) as f:
      if f.read() != hlo:
        problems.append('module.hlo differs')
    with np.load(os.path.join(folder, 'case.npz')) as z:
      if sorted(z.files) != sorted(arrays):
        problems.append(f'arrays {sorted(z.files)} != {sorted(arrays)}')
      for k in arrays:
        if k in z.files and not same_bits(z[k], arrays[k]):
          problems.append(f'{k} differs')
  except OSError as e:
    problems.append(str(e))
  return problems


def process(cases, out, check):
  failures = []
  for case in cases:
    folder = os.path.join(out, case.subdir, case.name)
    t0 = time.time()
    try:
      hlo, inputs, outputs, jitted = run_case(case)
      arrays = arrays_for_npz(inputs, outputs)
      if check:
        problems = check_case(folder, hlo, arrays)
        if problems:
          raise ValueError('; '.join(problems))
      else:
        write_case(folder, hlo, arrays)
        reload_and_rerun(folder, inputs, jitted)
    except Exception as e:  # report every failing case, then fail the run
      msg = f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}'
      failures.append((case.name, msg))
      print(f'FAIL {case.name}: {msg}', flush=True)
      continue
    dt = time.time() - t0
    if dt > 5:
      print(f'  slow: {case.name} took {dt:.1f}s', flush=True)
  return failures


def remove_stale(out, cases):
  names = {os.path.join(c.subdir, c.name) for c in cases}
  for sub in ('', '_custom_call', 'collectives'):
    base = os.path.join(out, sub)
    if not os.path.isdir(base):
      continue
    for entry in sorted(os.listdir(base)):
      rel = os.path.join(sub, entry)
      path = os.path.join(base, entry)
      if entry.startswith('coll_hlo_'):  # hand-written (tools/gen_hlo_cases.py)
        continue
      if os.path.isfile(os.path.join(path, 'module.hlo')) and rel not in names:
        print(f'removing stale case {rel}')
        shutil.rmtree(path)


def dir_size(path):
  total = 0
  for root, _, files in os.walk(path):
    for f in files:
      total += os.path.getsize(os.path.join(root, f))
  return total


def main(argv):
  args = parse_args(argv)
  import jax
  if args.x64_only:
    jax.config.update('jax_enable_x64', True)
  cases = selected(build_table(), args.only)
  if args.list:
    for c in cases:
      print(f'{c.name}{"  [x64]" if c.x64 else ""}{"  [" + c.subdir + "]" if c.subdir else ""}')
    return 0
  mine = [c for c in cases if c.x64 == args.x64_only]
  failures = process(mine, args.out, args.check)
  if args.x64_only:
    return 1 if failures else 0

  rc = 0
  if any(c.x64 for c in cases):
    cmd = [sys.executable, os.path.abspath(__file__), '--out', args.out, '--x64-only']
    if args.only:
      cmd += ['--only', args.only]
    if args.check:
      cmd += ['--check']
    rc = subprocess.call(cmd)
  if not args.check and args.only is None:
    remove_stale(args.out, cases)

  failed = {n for n, _ in failures}
  counts = collections.Counter(
      (c.subdir + '/' if c.subdir else '') + c.family for c in cases)
  print('\ncases per family:')
  for fam in sorted(counts):
    print(f'  {fam:24s} {counts[fam]}')
  print(f'  {"total":24s} {len(cases)} ({sum(c.x64 for c in cases)} with x64)')
  if not args.check:
    print(f'size of {args.out}: {dir_size(args.out) / 1e6:.2f} MB')
  if failed or rc:
    print(f'{len(failed)} failed in the main process; x64 process exit code {rc}')
    return 1
  print('all cases ' + ('match the files on disk' if args.check else 'written and re-checked'))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
