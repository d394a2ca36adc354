#!/usr/bin/env bash
# Collective bus bandwidth: kiln's collective thunks beside NCCL's own calls, measured the same
# way (README.md), over message sizes 8 B - 1 GiB.
#
#   bench/gpu/collectives/run.sh OUT_DIR [BUILD_DIR] [GPUS]
#
# Builds nothing: BUILD_DIR (default build-gpu) must hold kiln_collectives_bench and
# nccl_direct_bench (ninja kiln_collectives_bench nccl_direct_bench). GPUS (default: every GPU
# nvidia-smi lists) participants, one per GPU, in one process. Writes OUT_DIR/kiln.tsv,
# OUT_DIR/nccl.tsv and OUT_DIR/table.md (both side by side, kiln/NCCL time and busbw ratios).
# KILN_COLL_MIN / KILN_COLL_MAX (bytes), KILN_COLL_OPS, KILN_COLL_ITERS narrow the sweep.
set -u
out="${1:?usage: bench/gpu/collectives/run.sh OUT_DIR [BUILD_DIR] [GPUS]}"
src="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${2:-$src/build-gpu}"
gpus="${3:-$(nvidia-smi -L 2>/dev/null | wc -l)}"
[ "$gpus" -ge 1 ] 2>/dev/null || gpus=1
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0   # never NVLink multicast (the GPU machines' rule)
kb=$(find "$build" -name kiln_collectives_bench -type f -perm -u+x | head -1)
nb=$(find "$build" -name nccl_direct_bench -type f -perm -u+x | head -1)
[ -n "$kb" ] && [ -n "$nb" ] || { echo "build kiln_collectives_bench and nccl_direct_bench in $build first"; exit 1; }
args=(--min "${KILN_COLL_MIN:-8}" --max "${KILN_COLL_MAX:-1073741824}" --iterations "${KILN_COLL_ITERS:-20}"
      --ops "${KILN_COLL_OPS:-all_reduce,all_gather,reduce_scatter,all_to_all}")
"$nb" --gpus "$gpus" "${args[@]}" > "$out/nccl.tsv" 2> "$out/nccl.log" || { echo "nccl_direct_bench failed:"; tail -5 "$out/nccl.log"; }
"$kb" --participants "$gpus" "${args[@]}" > "$out/kiln.tsv" 2> "$out/kiln.log" || { echo "kiln_collectives_bench failed:"; tail -5 "$out/kiln.log"; }
python3 - "$out" "$gpus" <<'PY'
import sys, os
out, gpus = sys.argv[1], sys.argv[2]
def read(p):
    rows = {}
    if not os.path.exists(p): return rows
    for line in open(p):
        f = line.rstrip("\n").split("\t")
        if len(f) != 7 or f[0] == "system": continue
        rows[(f[1], int(float(f[3])))] = (float(f[4]), float(f[5]), float(f[6]))
    return rows
k, n = read(os.path.join(out, "kiln.tsv")), read(os.path.join(out, "nccl.tsv"))
def size(b):
    for u, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s: return f"{b / s:g} {u}"
    return f"{b} B"
lines = [f"{gpus} GPU(s), one process; time = median wall time of one synchronous call; busbw as nccl-tests "
         "(all-reduce 2(n-1)/n, others (n-1)/n x algbw: 0 with one GPU, so algbw is shown too)", "",
         "| op | size | kiln us | NCCL us | kiln/NCCL time | kiln algbw GB/s | NCCL algbw GB/s | kiln busbw GB/s | NCCL busbw GB/s |",
         "|---|---|---|---|---|---|---|---|---|"]
for key in sorted(set(k) | set(n), key=lambda x: (x[0], x[1])):
    a, b = k.get(key), n.get(key)
    ratio = f"{a[0] / b[0]:.2f}" if a and b and b[0] > 0 else "-"
    fmt = lambda r, i: f"{r[i]:.2f}" if r else "-"
    lines.append(f"| {key[0]} | {size(key[1])} | {fmt(a,0)} | {fmt(b,0)} | {ratio} | {fmt(a,1)} | {fmt(b,1)} | {fmt(a,2)} | {fmt(b,2)} |")
open(os.path.join(out, "table.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
