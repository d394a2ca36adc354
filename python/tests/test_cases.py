"""Every conformance case of tests/data (module.hlo + case.npz: JAX programs and XLA's CPU
results, tools/gen_cases.py) through kiln.compile on the cpu, judged by the project's
comparison (docs/tolerances.md: per-type tolerances, exact outputs bit for bit, NaN only
against NaN).

The multi-participant cases of tests/data/collectives (shard_map programs over 1, 2, 4, 8
devices; case.npz holds XLA's global inputs and outputs) run as the differential suite runs
them (src/kiln/differential, RunCollectiveCase): the global inputs split by the parameters'
shardings (Executable.split_global), every participant against the interpreter's (the
compiled-backend rule), and the global outputs (Executable.run_global: joined by the root's
sharding) against XLA's with the per-type tolerances (CompareOptions{})."""

import os

import numpy as np
import pytest

import kiln
from kiln import _kiln

from conftest import ROOT

DATA = ROOT / "tests" / "data"
CASES = sorted(p.parent for p in DATA.glob("**/case.npz") if (p.parent / "module.hlo").exists())


# XLA's CPU outputs that kiln does not reproduce on purpose (the same list as the evaluator's
# conformance test, src/kiln/eval/conformance_test.cc, KnownFailures): strict, so a case that
# starts passing fails until it leaves the list.
KNOWN_DIFFERENCES = {
    "ew_convert_round_f64": "f64 -> bf16: XLA's CPU rounds through f32 (double rounding), kiln once",
    "ew_denormal_f32": "XLA's CPU flushes f32 denormals to zero; kiln keeps them (IEEE)",
    "ew_reduce_precision_f16": "reduce-precision of an f16 subnormal: XLA works on the f16 bits, kiln on f32",
}


def _param(case):
  rel = str(case.relative_to(DATA))
  marks = [pytest.mark.xfail(reason=KNOWN_DIFFERENCES[case.name], strict=True)] if case.name in KNOWN_DIFFERENCES else []
  return pytest.param(case, id=rel, marks=marks)


def test_cases_found():
  assert len(CASES) > 900, f"expected the ~1000 cases of {DATA}, found {len(CASES)}"


def _inputs(npz, exe):
  """in0, in1, ... narrowed back to the parameters' types (stored widened, exactly)."""
  inputs = []
  for i, p in enumerate(exe.parameters):
    a = npz[f"in{i}"]
    if a.dtype != p.dtype:
      a = a.astype(p.dtype)
    inputs.append(a)
  return inputs


def run_case(case, device, backend_tolerance=False, **compile_options):
  """Compiles and runs one case on `device`; asserts its outputs match XLA's. backend_tolerance:
  judged by the differential suite's rule for a compiled backend (src/kiln/differential:
  CompareOptions::backend_vs_evaluator, BackendTolerance in src/kiln/eval/tolerance.h) rather
  than the per-type defaults."""
  hlo = (case / "module.hlo").read_text()
  npz = np.load(case / "case.npz")
  exe = kiln.compile(hlo, device, filename=str(case / "module.hlo"), **compile_options)
  outs = [kiln.asarray(o.numpy(), "cpu") for o in exe.run_flat(_inputs(npz, exe))]
  expected = _expected(npz)
  ok, report = _kiln._compare_outputs(hlo, outs, expected, exe._impl.runs_f32_products_in_tf32, backend_tolerance)
  assert ok, f"{case.name} on {device}:\n{report}"


COLLECTIVES = DATA / "collectives"


def _is_collective(case):
  return COLLECTIVES in case.parents


def _expected(npz):
  expected = []
  k = 0
  while f"out{k}" in npz.files:
    expected.append(kiln.asarray(npz[f"out{k}"], "cpu"))
    k += 1
  return expected


def _host(arrays):
  return [kiln.asarray(a.numpy(), "cpu") for a in arrays]


def _flat(result):
  return list(result) if isinstance(result, tuple) else [result]


def run_collective_case(case, device, backend_tolerance=False, **compile_options):
  """One case of tests/data/collectives over all its participants on `device`, judged as the
  differential suite judges it: each participant against the interpreter's (the compiled-backend
  rule), the global outputs against XLA's (the per-type tolerances, CompareOptions{}; with
  backend_tolerance, as run_case's, the compiled-backend rule and TF32 where the device runs
  f32 products so)."""
  hlo = (case / "module.hlo").read_text()
  npz = np.load(case / "case.npz")
  exe = kiln.compile(hlo, device, filename=str(case / "module.hlo"), **compile_options)
  n = int(case.name.rsplit("_n", 1)[1])
  assert exe.num_participants == n, f"{case.name}: {exe.num_participants} participants, the mesh has {n}"
  inputs = _inputs(npz, exe)  # global arrays; the parameters' element types
  assert [a.shape for a in inputs] == [p.shape for p in exe.global_parameters], case.name
  per_participant = exe.split_global(*inputs)
  assert len(per_participant) == n
  got = exe.run_participants(per_participant, timeout=120)
  ref = kiln.compile(hlo, "interpreter", filename=str(case / "module.hlo"))
  want = ref.run_participants(ref.split_global(*inputs), timeout=120)
  for i in range(n):
    ok, report = _kiln._compare_outputs(hlo, _host(got[i]), _host(want[i]), exe._impl.runs_f32_products_in_tf32, True)
    assert ok, f"{case.name} on {device}, participant {i} of {n} vs the interpreter:\n{report}"
  joined = _flat(exe.run_global(*inputs, timeout=120))
  assert [a.shape for a in joined] == [r.shape for r in exe.global_results], case.name
  tf32 = backend_tolerance and exe._impl.runs_f32_products_in_tf32
  ok, report = _kiln._compare_outputs(hlo, _host(joined), _expected(npz), tf32, backend_tolerance, False)
  assert ok, f"{case.name} on {device}, global outputs vs XLA:\n{report}"
  # run_global is split_global + run_participants + join_global.
  for a, b in zip(joined, _flat(exe.join_global(got))):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_collective_cases_found():
  found = [c for c in CASES if _is_collective(c)]
  assert len(found) >= 48, f"expected the 48 cases of {COLLECTIVES}, found {len(found)}"
  assert sum(not c.name.endswith("_n1") for c in found) >= 36


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case):
  if _is_collective(case):
    run_collective_case(case, "cpu")
  else:
    run_case(case, "cpu")
