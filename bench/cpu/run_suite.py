"""The CPU benchmark: every module of bench/cpu/modules through kiln's cpu backend and through
XLA's CPU backend (jaxlib) in the same run, on the same inputs.

    python3 bench/cpu/run_suite.py [--kiln build/src/kiln/tools/kiln] [--iterations 20]
                                   [--only gemm_f32,mlp_f32] [--threads N] [--markdown]

For each module: random inputs (numpy, fixed seed; normal, std 1/sqrt(rows) for matrices, 0.5 else) go to an .npz; XLA compiles
exactly the module text (jaxlib's HLO text parser -> HloModuleProto -> StableHLO -> the CPU
PjRt client: the text kiln reads, not a re-trace of the JAX function) and runs it
--warmup + --iterations times; its outputs go into the same .npz. Then
`kiln compare --expected` checks kiln's outputs against XLA's (rtol = atol = 1e-4), and `kiln bench --json` times
kiln. Times are medians of wall time per execution (XLA: execute + block_until_ready).
Memory: the bytes a run touches as each compiler plans them before running: kiln
arguments + constants + arena (the arena holds temporaries and outputs: MemoryStats of
`kiln compile --stats`); XLA arguments + outputs + temporaries - aliased (CompiledMemoryStats).
Prints a table: kiln ms, XLA ms, kiln/XLA, memory both, the geometric mean of the ratios, and
for the GEMM modules Eigen's best time for the shape (bench/cpu/eigen_gemm, built with kiln).
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def xla_prepare(text):
    import jax
    from jaxlib import _hlo
    from jax._src.lib import _jax
    module = _hlo.hlo_module_from_text(text)
    stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(stablehlo, _jax.DeviceList((dev,)), _jax.CompileOptions())
    return exe, dev


def random_inputs(text, seed):
    """One array per entry parameter, from the entry_computation_layout."""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", text)
    if not m:
        raise RuntimeError("no entry_computation_layout")
    rng = np.random.default_rng(seed)
    arrays = []
    for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
        shape = tuple(int(d) for d in dims.split(",") if d)
        if dtype != "f32":
            raise RuntimeError(f"bench inputs: only f32 parameters, got {dtype}")
        # Matrices (weights, activations) with std 1/sqrt(rows), like initialized weights:
        # recurrences (the LSTM) then stay contractive, so results do not depend chaotically
        # on rounding; vectors and others std 0.5.
        std = 1 / math.sqrt(shape[0]) if len(shape) == 2 else 0.5
        arrays.append((rng.standard_normal(shape) * std).astype(np.float32))
    return arrays


def xla_bench(exe, dev, args, warmup, iterations):
    import jax
    bufs = [jax.device_put(a, dev) for a in args]
    out = exe.execute(bufs)
    jax.block_until_ready(out)
    for _ in range(warmup):
        jax.block_until_ready(exe.execute(bufs))
    ts, cpu = [], []
    for _ in range(iterations):
        c = time.process_time()
        t = time.perf_counter()
        jax.block_until_ready(exe.execute(bufs))
        ts.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    ms = exe.get_compiled_memory_stats()
    mem = ms.argument_size_in_bytes + ms.output_size_in_bytes + ms.temp_size_in_bytes - ms.alias_size_in_bytes
    return statistics.median(ts) * 1e3, statistics.median(cpu) * 1e3, mem, [np.asarray(o) for o in out]


def kiln_bench(kiln, path, npz, warmup, iterations, threads):
    cmd = [kiln, "bench", path, "--device", "cpu", "--inputs", npz, "--warmup", str(warmup),
           "--iterations", str(iterations), "--json"]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kiln bench failed: {r.stderr.strip() or r.stdout.strip()}")
    j = json.loads(r.stdout)
    m = j["metrics"]
    # kiln's outputs live in the arena (temp_bytes), so they are not added again.
    return j["median_ms"], j["cpu_median_ms"], m["argument_bytes"] + m["constant_bytes"] + m["temp_bytes"]


def kiln_compare(kiln, path, npz, threads):
    # XLA's CPU backend computes exp, tanh, log... with its own polynomial approximations and
    # sums in its own order: a sanity check, looser than the differential suite's bound.
    cmd = [kiln, "compare", path, "--device", "cpu", "--expected", npz, "--rtol", "1e-4", "--atol", "1e-4"]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def eigen_best(eigen, text, iterations, threads):
    """Eigen's best time for a GEMM module (two parameters [M,K] and [K,N]), or None."""
    m = re.search(r"entry_computation_layout=\{\(f32\[(\d+),(\d+)\]\{1,0\}, f32\[(\d+),(\d+)\]\{1,0\}\)->", text)
    if not m or not os.path.exists(eigen):
        return None
    mm, k, k2, n = (int(g) for g in m.groups())
    if k != k2:
        return None
    cmd = [eigen, str(mm), str(n), str(k), "--iterations", str(iterations)]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return json.loads(r.stdout)["best_ms"] if r.returncode == 0 else None


def mib(b):
    return f"{b / 2**20:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build/src/kiln/tools/kiln"))
    ap.add_argument("--modules", default=os.path.join(HERE, "modules"))
    ap.add_argument("--eigen", default=os.path.join(ROOT, "build/bench/cpu/eigen_gemm"),
                    help="eigen_gemm binary (GEMM modules: Eigen's best time beside kiln's)")
    ap.add_argument("--only", default="")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="kiln's threads (XLA always uses every core)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds per workload (interleaved); the best median of each side is kept")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--keep", default="", help="write the .npz files (inputs, XLA's outputs) here")
    ap.add_argument("--single-core", action="store_true",
                    help="pin this process, XLA and kiln to one core (kiln --threads 1)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="report process CPU time per run instead of wall time (on a loaded machine, "
                         "with --single-core: the work each one does, whatever else runs)")
    a = ap.parse_args()
    if a.single_core:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        a.threads = 1
    names = sorted(f[:-4] for f in os.listdir(a.modules) if f.endswith(".hlo"))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    rows = []
    tmp = a.keep or tempfile.mkdtemp(prefix="kiln_cpu_bench_")
    os.makedirs(tmp, exist_ok=True)
    for name in names:
        path = os.path.join(a.modules, name + ".hlo")
        text = open(path).read()
        args = random_inputs(text, a.seed)
        exe, dev = xla_prepare(text)
        x_ms, x_cpu, x_mem, outs = xla_bench(exe, dev, args, a.warmup, a.iterations)
        npz = os.path.join(tmp, name + ".npz")
        np.savez(npz, **{f"in{i}": v for i, v in enumerate(args)}, **{f"out{i}": v for i, v in enumerate(outs)})
        ok, msg = kiln_compare(a.kiln, path, npz, a.threads)
        try:
            k_ms, k_cpu, k_mem = kiln_bench(a.kiln, path, npz, a.warmup, a.iterations, a.threads)
            # --repeat: more (XLA, kiln) rounds, interleaved; each side keeps its best median
            # (on a shared machine, the round least disturbed by other work).
            for _ in range(a.repeat - 1):
                x2, xc2, _, _ = xla_bench(exe, dev, args, a.warmup, a.iterations)
                k2, kc2, _ = kiln_bench(a.kiln, path, npz, a.warmup, a.iterations, a.threads)
                x_ms, x_cpu, k_ms, k_cpu = min(x_ms, x2), min(x_cpu, xc2), min(k_ms, k2), min(k_cpu, kc2)
        except RuntimeError as e:
            print(f"{name}: {e}", file=sys.stderr)
            k_ms, k_cpu, k_mem = float("nan"), float("nan"), 0
        if a.cpu_time:
            k_ms, x_ms = k_cpu, x_cpu
        e_ms = None if a.cpu_time else eigen_best(a.eigen, text, a.iterations, a.threads)
        rows.append((name, k_ms, x_ms, k_ms / x_ms, k_mem, x_mem, ok, e_ms))
        if not ok:
            print(f"{name}: kiln differs from XLA:\n{msg}", file=sys.stderr)
        print(f"{name:18s} kiln {k_ms:9.3f} ms  xla {x_ms:9.3f} ms  ratio {k_ms / x_ms:5.2f}", file=sys.stderr,
              flush=True)
    ratios = [r[3] for r in rows if r[3] == r[3]]
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    def eig(k, e):
        return (f"{e:.3f}", f"{k / e:.2f}") if e else ("", "")
    if a.markdown:
        print("| workload | kiln ms | XLA ms | kiln/XLA | kiln MiB | XLA MiB | outputs match XLA | Eigen best ms | kiln/Eigen |")
        print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
        for n, k, x, r, km, xm, ok, e in rows:
            es, er = eig(k, e)
            print(f"| {n} | {k:.3f} | {x:.3f} | {r:.2f} | {mib(km)} | {mib(xm)} | {'yes' if ok else 'NO'} | {es} | {er} |")
        print(f"| geometric mean | | | {geo:.2f} | | | | | |")
    else:
        print(f"{'workload':18s} {'kiln ms':>10s} {'XLA ms':>10s} {'kiln/XLA':>9s} {'kiln MiB':>9s} {'XLA MiB':>8s}  match"
              f" {'Eigen ms':>9s} {'kiln/Eigen':>10s}")
        for n, k, x, r, km, xm, ok, e in rows:
            es, er = eig(k, e)
            print(f"{n:18s} {k:10.3f} {x:10.3f} {r:9.2f} {mib(km):>9s} {mib(xm):>8s}  {'yes' if ok else 'NO ':3s}"
                  f"   {es:>9s} {er:>10s}")
        print(f"{'geometric mean':18s} {'':10s} {'':10s} {geo:9.2f}")


if __name__ == "__main__":
    main()
