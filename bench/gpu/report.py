"""Builds bench/gpu's comparison table from run.sh's outputs.

    python3 bench/gpu/report.py OUT_DIR SUITE_DIR

Reads OUT_DIR/kiln.txt (kiln bench reports, untuned), kiln_tuned.txt (cold `kiln tune` time, warm
compile time, `kiln bench --autotune on`; optional), xla.jsonl and torch.jsonl (the shared scripts'
rows) and prints a Markdown table: median wall time of execute + synchronize per system (kiln's
device time from CUDA events beside it), kiln/XLA and kiln/best-PyTorch ratios, and kiln's % of
the workload's floor.

Floor = max(bytes / 4.24 TB/s, FLOPs / peak): bytes are the entry parameters and results (from
module.hlo's entry_computation_layout: what any implementation must read and write at least),
4.24 TB/s the device-to-device copy rate measured on the H200 (ANCHORS.md), FLOPs those
xla_workloads.py reports, peak 810 TFLOP/s for bf16 (ANCHORS.md) and 405 for f32 run in TF32
(half the bf16 rate, the tensor cores' ratio). A kiln run that failed shows as 'failed'.
"""
import json, os, re, sys

out, suite = sys.argv[1], sys.argv[2]
WIDTH = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "f64": 8, "pred": 1, "s8": 1, "u8": 1}


def load_rows(path):
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rows[r["name"]] = r
    return rows


def kiln_rows(path):
    rows, cur = {}, None
    if not os.path.exists(path):
        return rows
    for line in open(path):
        m = re.match(r"=== (\S+)", line)
        if m:
            cur = m.group(1)
            rows[cur] = {}
            continue
        if cur is None:
            continue
        m = re.match(r"median ([\d.]+) ms\s+min ([\d.]+) ms\s+max ([\d.]+) ms", line)
        if m:
            rows[cur]["wall_ms"] = float(m.group(1))
            rows[cur]["wall_min_ms"] = float(m.group(2))
        m = re.match(r"device time \(events\): median ([\d.]+) ms", line)
        if m:
            rows[cur]["device_ms"] = float(m.group(1))
        if line.startswith("FAILED"):
            rows[cur]["failed"] = True
        m = re.search(r"cuda graph: (\w+)", line)
        if m:
            rows[cur]["graph"] = m.group(1)
        m = re.match(r"tune wall seconds ([\d.]+)", line)
        if m:
            rows[cur]["tune_s"] = float(m.group(1))
        m = re.match(r"compiled \S+ in ([\d.]+) ms", line)
        if m:
            rows[cur]["compile_ms"] = float(m.group(1))
    return rows


def io_bytes(module):
    text = open(module).read()
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->(.*?)\}\n", text)
    if not m:
        return 0
    total = 0
    for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1) + " " + m.group(2)):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * WIDTH.get(t, 4)
    return total


def main():
    k, x, t = kiln_rows(os.path.join(out, "kiln.txt")), load_rows(os.path.join(out, "xla.jsonl")), \
        load_rows(os.path.join(out, "torch.jsonl"))
    tuned = kiln_rows(os.path.join(out, "kiln_tuned.txt"))
    print("| workload | kiln ms | kiln device ms | kiln tuned ms | XLA ms | torch eager | torch.compile | kiln/XLA | kiln tuned/XLA | kiln/torch best | kiln % of floor | floor ms | cold tune s | warm compile ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in k:
        kr, xr, tr = k[name], x.get(name, {}), t.get(name, {})
        module = os.path.join(suite, name, "module.hlo")
        flops = xr.get("gflop", 0) * 1e9
        peak = 810e12 if "bf16" in name else 405e12
        floor = max(io_bytes(module) / 4.24e12 if os.path.exists(module) else 0, flops / peak) * 1e3
        km = kr.get("wall_ms")
        xm = xr.get("xla_ms")
        tb = [v for v in (tr.get("torch_eager_ms"), tr.get("torch_compiled_ms")) if v]
        f = lambda v, d=3: f"{v:.{d}f}" if isinstance(v, (int, float)) else "–"
        ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "–"
        pct = f"{100 * floor / km:.0f}%" if km and floor else "–"
        kcell = "failed" if kr.get("failed") and not km else f(km)
        ur = tuned.get(name, {})
        um = ur.get("wall_ms")
        ucell = "failed" if ur.get("failed") and not um else f(um)
        print(f"| {name} | {kcell} | {f(kr.get('device_ms'))} | {ucell} | {f(xm)} | {f(tr.get('torch_eager_ms'))} | "
              f"{f(tr.get('torch_compiled_ms'))} | {ratio(km, xm)} | {ratio(um, xm)} | {ratio(km, min(tb) if tb else None)} | "
              f"{pct} | {f(floor)} | {f(ur.get('tune_s'), 1)} | {f(ur.get('compile_ms'), 1)} |")


main()
