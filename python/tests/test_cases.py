"""Every conformance case of tests/data (module.hlo + case.npz: JAX programs and XLA's CPU
results, tools/gen_cases.py) through kiln.compile on the cpu, judged by the project's
comparison (docs/tolerances.md: per-type tolerances, exact outputs bit for bit, NaN only
against NaN)."""

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
  expected = []
  k = 0
  while f"out{k}" in npz.files:
    expected.append(kiln.asarray(npz[f"out{k}"], "cpu"))
    k += 1
  ok, report = _kiln._compare_outputs(hlo, outs, expected, exe._impl.runs_f32_products_in_tf32, backend_tolerance)
  assert ok, f"{case.name} on {device}:\n{report}"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case):
  run_case(case, "cpu")
