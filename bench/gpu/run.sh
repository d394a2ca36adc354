#!/usr/bin/env bash
# kiln vs XLA (JAX) vs PyTorch on the workloads of the shared bench suite (loops and attention included), in one device call.
#
#   bench/gpu/run.sh OUT_DIR [BUILD_DIR]
#
# Runs `kiln bench MODULE.hlo --device cuda` on each workload's module.hlo (the HLO JAX hands
# an HLO compiler), then the shared scripts xla_workloads.py (XLA's own compile of the same
# function) and torch_workloads.py (eager and torch.compile), and writes to OUT_DIR:
#   kiln.txt     every kiln bench report, untuned (--autotune off: the libraries' heuristic
#                favourites, the emitters' default launch configurations)
#   kiln_tuned.txt  per workload: a cold `kiln tune` (fresh cache OUT_DIR/autotune-cache) and its
#                wall time, a warm `kiln compile` (all cache hits) and `kiln bench --autotune on`
#                with that cache (skipped with KILN_BENCH_AUTOTUNE=0)
#   xla.jsonl    XLA's rows        torch.jsonl  PyTorch's rows      bench_py.log  their stderr
#   table.md     the comparison: median wall ms per system, kiln/XLA and kiln/best-torch
#                ratios, kiln's % of the workload's floor (report.py says how floors are made)
# The bench scripts and suite are found in $KILN_BENCH_DIR, else .device-deps/bench (what
# ../shared/device/stage.sh copies), else ../shared/bench. BUILD_DIR holds a built `kiln`
# (default build-gpu; or point KILN at the binary). KILN_BENCH_ONLY=name,name limits the workloads; KILN_BENCH_SKIP_TORCH=1
# and KILN_BENCH_SKIP_XLA=1 skip those systems.
set -u
out="${1:?usage: bench/gpu/run.sh OUT_DIR [BUILD_DIR]}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${2:-$src/build-gpu}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
kiln="${KILN:-$(find "$build" -name kiln -type f -perm -u+x | grep tools/kiln | head -1)}"
[ -n "$kiln" ] || { echo "no kiln binary under $build"; exit 1; }
benchdir="${KILN_BENCH_DIR:-}"
for d in "$src/.device-deps/bench" "$src/../shared/bench"; do
  [ -z "$benchdir" ] && [ -f "$d/xla_workloads.py" ] && benchdir="$d"
done
[ -n "$benchdir" ] || { echo "no bench scripts (xla_workloads.py) found"; exit 1; }
names="gemm_bf16 gemm_f32 mlp_bf16 transformer_bf16 resblock_bf16 resblock_f32 softmax_f32 layernorm_f32 mlp_train_f32 gru_scan_f32 train_loop_f32 gpt_scan_bf16 attention_bf16"
[ -n "${KILN_BENCH_ONLY:-}" ] && names="${KILN_BENCH_ONLY//,/ }"
csv="${names// /,}"

: > "$out/kiln.txt"
for w in $names; do
  echo "=== $w" >> "$out/kiln.txt"
  "$kiln" bench "$benchdir/suite/$w/module.hlo" --device cuda --warmup 3 --iterations 30 --autotune off \
    >> "$out/kiln.txt" 2>&1 || echo "FAILED: kiln bench $w" >> "$out/kiln.txt"
done
if [ "${KILN_BENCH_AUTOTUNE:-1}" != 0 ]; then
  : > "$out/kiln_tuned.txt"
  cache="$out/autotune-cache"
  rm -rf "$cache"
  for w in $names; do
    m="$benchdir/suite/$w/module.hlo"
    echo "=== $w" >> "$out/kiln_tuned.txt"
    t0=$(date +%s.%N)
    timeout 120 "$kiln" tune "$m" --device cuda --autotune-cache "$cache" -q \
      --autotune-dump-json "$out/tune_$w.json" >> "$out/kiln_tuned.txt" 2>&1 || echo "FAILED: kiln tune $w" >> "$out/kiln_tuned.txt"
    echo "tune wall seconds $(awk "BEGIN{print $(date +%s.%N) - $t0}")" >> "$out/kiln_tuned.txt"
    "$kiln" compile "$m" --device cuda --autotune-cache "$cache" >> "$out/kiln_tuned.txt" 2>&1 \
      || echo "FAILED: kiln compile $w" >> "$out/kiln_tuned.txt"
    "$kiln" bench "$m" --device cuda --warmup 3 --iterations 30 --autotune on --autotune-cache "$cache" \
      >> "$out/kiln_tuned.txt" 2>&1 || echo "FAILED: kiln bench --autotune on $w" >> "$out/kiln_tuned.txt"
  done
fi
if [ "${KILN_BENCH_SKIP_XLA:-0}" != 1 ]; then
  python3 "$benchdir/xla_workloads.py" "$(mktemp -d)" "$csv" > "$out/xla.jsonl" 2> "$out/bench_py.log" || true
fi
if [ "${KILN_BENCH_SKIP_TORCH:-0}" != 1 ]; then
  python3 "$benchdir/torch_workloads.py" "$csv" > "$out/torch.jsonl" 2>> "$out/bench_py.log" || true
fi
python3 "$(dirname "$0")/report.py" "$out" "$benchdir/suite" | tee "$out/table.md"
# Issue 15's training step with attention (not in the shared suite): KILN_BENCH_TRAIN_ATTENTION=1
# times XLA on it (bench/gpu/train_attention/gen.py --time) and benches kiln's compile of the
# same module (train_attention.txt).
if [ "${KILN_BENCH_TRAIN_ATTENTION:-0}" = 1 ]; then
  ta="$out/train_attention"
  KILN_BENCH_DIR="$benchdir" python3 "$(dirname "$0")/train_attention/gen.py" "$ta" --time > "$out/train_attention_xla.jsonl" 2>> "$out/bench_py.log" || true
  "$kiln" bench "$ta/train_attention_bf16/module.hlo" --device cuda --warmup 3 --iterations 30 --autotune off \
    > "$out/train_attention.txt" 2>&1 || echo "FAILED: kiln bench train_attention_bf16" >> "$out/train_attention.txt"
fi
