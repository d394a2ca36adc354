#!/usr/bin/env python3
"""Counts, per test case, the instructions the cpu backend runs on the evaluator's kernel.

For every tests/data/<case>/module.hlo (and tests/data/hlo/*, tests/data/collectives/*) it runs
`kiln compile --device cpu --stats` and reads the kernel count and the "on the host
(evaluator)" line (backend/executable.h HostFallbackLine). Prints the cases with any fallback,
those where every kernel falls back, and the totals by kind.

  tools/cpu_fallback_census.py --kiln build-release/src/kiln/tools/kiln [--root tests/data] [-j 2]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys


def census(kiln, module):
    p = subprocess.run([kiln, "compile", "--device", "cpu", "--stats", module],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, None, {}, (p.stderr.strip().splitlines() or ["?"])[-1]
    m = re.search(r"thunks: \d+ \((\d+) kernels", p.stdout)
    kernels = int(m.group(1)) if m else 0
    kinds = {}
    total = 0
    m = re.search(r"on the host \(evaluator\): (\d+) instructions?: (.*)", p.stdout)
    if m:
        total = int(m.group(1))
        for part in m.group(2).split(", "):
            kind, _, n = part.rpartition(" x")
            kinds[kind] = int(n)
    return kernels, total, kinds, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--root", default="tests/data")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="print every case with a fallback")
    a = ap.parse_args()
    modules = []
    for sub in ["", "hlo", "collectives"]:
        d = os.path.join(a.root, sub)
        for c in sorted(os.listdir(d)):
            m = os.path.join(d, c, "module.hlo")
            if os.path.isfile(m):
                modules.append((os.path.join(sub, c) if sub else c, m))
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        results = list(ex.map(lambda cm: (cm[0],) + census(a.kiln, cm[1]), modules))
    any_fb, all_fb, errors = [], [], []
    by_kind = collections.Counter()
    cases_by_kind = collections.Counter()
    for case, kernels, total, kinds, err in results:
        if err is not None:
            errors.append((case, err))
            continue
        if total:
            any_fb.append((case, kernels, total, kinds))
            if total >= kernels:
                all_fb.append(case)
            for k, n in kinds.items():
                by_kind[k] += n
                cases_by_kind[k] += 1
    print(f"{len(modules)} cases, {len(errors)} not compiled, {len(any_fb)} with a fallback, "
          f"{len(all_fb)} where every kernel falls back")
    for k, n in cases_by_kind.most_common():
        print(f"  {k}: {n} cases, {by_kind[k]} instructions")
    if a.list:
        for case, kernels, total, kinds in any_fb:
            print(f"{case}: {total}/{kernels} kernels: " + ", ".join(f"{k} x{n}" for k, n in kinds.items()))
    for case, err in errors:
        print(f"not compiled: {case}: {err}", file=sys.stderr)


if __name__ == "__main__":
    main()
