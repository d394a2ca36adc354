#!/usr/bin/env bash
# The `kiln` binary over several participants (docs/collectives.md, docs/npz.md):
# --replicas/--partitions and the module header, per-participant and global .npz inputs and
# outputs, compare and bench, on the interpreter and the cpu.
#   participants_cli_test.sh KILN_BINARY SOURCE_DIR [PYTHON]
# PYTHON (default python3): an interpreter with numpy, for checking written .npz files.
set -u
KILN=$1
DATA=$2/src/kiln/tools/testdata/collectives
PYTHON=${3:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

check() {
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; echo "$out" | sed 's/^/    /'; failed=$((failed + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output does not match /$pattern/"; echo "$out" | sed 's/^/    /'; failed=$((failed + 1)); return
  fi
  echo "ok   $name"
  passed=$((passed + 1))
}

for dev in interpreter cpu; do
  # The header's replica_count=4; p<i>.in0 = i+1 everywhere, so the sum is 10.
  check "${dev}_header_count" 0 'p3.out0 f32\[2,3\].*min 10 max 10' -- \
    "$KILN" run "$DATA/psum.hlo" --device $dev --inputs "$DATA/per_participant.npz" --outputs "$TMP/$dev.npz"
  check "${dev}_four_participants" 0 '4 participants \(4 replicas x 1 partitions\)' -- \
    "$KILN" run "$DATA/psum.hlo" --device $dev --inputs "$DATA/per_participant.npz"
  # --replicas overrides the header: two participants of the four in the file are missing.
  check "${dev}_override_count" 0 'min 3 max 3' -- \
    "$KILN" run "$DATA/psum.hlo" --device $dev --replicas 2 --inputs "$DATA/per_participant.npz"
  check "${dev}_random_inputs" 0 'p1.out0' -- "$KILN" run "$DATA/psum.hlo" --device $dev --replicas 2
  # A global array split by the parameter's sharding, the result joined by the root's.
  check "${dev}_global_split_join" 0 'out0 f32\[4,3\].*min 0 max 726' -- \
    "$KILN" run "$DATA/sharded.hlo" --device $dev --inputs "$DATA/global.npz" --outputs "$TMP/g_$dev.npz"
  check "${dev}_compare_vs_file" 0 'OK: 4 outputs match' -- \
    "$KILN" compare "$DATA/psum.hlo" --device $dev --inputs "$DATA/per_participant.npz" --expected "$TMP/$dev.npz"
  check "${dev}_bench" 0 'bench psum on .*4 participants' -- \
    "$KILN" bench "$DATA/psum.hlo" --device $dev --iterations 3 --warmup 1
done
check global_written 0 '' -- "$PYTHON" -c "
import numpy as np, sys
z = np.load('$TMP/g_cpu.npz'); w = np.load('$DATA/global_expected.npz')
sys.exit(0 if np.array_equal(z['out0'], w['out0']) and 'p1.out0' in z else 1)"
check compare_cpu_vs_interpreter 0 'OK: 4 outputs match' -- \
  "$KILN" compare "$DATA/psum.hlo" --device cpu --reference interpreter
check compare_sharded 0 'OK: 2 outputs match' -- \
  "$KILN" compare "$DATA/sharded.hlo" --device cpu --reference interpreter --inputs "$DATA/global.npz"
check missing_participant_input 2 "no member 'p4.in0'" -- \
  "$KILN" run "$DATA/psum.hlo" --device cpu --replicas 5 --inputs "$DATA/per_participant.npz"
check bad_replicas 2 '' -- "$KILN" run "$DATA/psum.hlo" --replicas 0

# A jax shard_map program (Shardy; 2x2 mesh): lowered to its per-device program on loading,
# global inputs split and outputs joined by the shardings, against jax's own outputs.
for dev in interpreter cpu; do
  check "${dev}_shard_map_vs_jax" 0 'OK: 2 outputs match' -- \
    "$KILN" compare "$DATA/shard_map_2x2.hlo" --device $dev --expected "$DATA/shard_map_2x2.npz"
  # Auto mesh axes (no sharding={...} on the parameters: read from Shardy's), a 2x4 mesh.
  check "${dev}_tensor_parallel_vs_jax" 0 'OK: 2 outputs match' -- \
    "$KILN" compare "$DATA/tensor_parallel_2x4.hlo" --device $dev --expected "$DATA/tensor_parallel_2x4.npz"
done
check shard_map_participants 0 '4 participants \(1 replicas x 4 partitions\)' -- \
  "$KILN" run "$DATA/shard_map_2x2.hlo" --device cpu --inputs "$DATA/shard_map_2x2.npz"
check unpartitioned_refused 2 'no automatic SPMD partitioner' -- \
  "$KILN" run "$DATA/unpartitioned.hlo" --device cpu

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
