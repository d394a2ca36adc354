#!/usr/bin/env bash
# The malformed-input set through the `kiln` binary: every case of testdata/malformed/cases.txt
# must end with its exit code and message -- never with a crash, a hang or another exit code.
#   malformed_test.sh KILN_BINARY SOURCE_DIR
# Prints one line per case and "N passed, M failed" at the end; exits non-zero on a failure.
set -u
KILN=$1
DATA=$2/src/kiln/tools/testdata
MALFORMED=$DATA/malformed
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

# Where the kernel grants any allocation (vm.overcommit_memory=1), a 4 TiB array would be
# "allocated" and the process killed while zero-filling it; a cap on the address space keeps the
# out-of-memory cases about kiln's handling of a failed allocation.
if [ "$(cat /proc/sys/vm/overcommit_memory 2>/dev/null)" = 1 ]; then
  ulimit -v $((64 * 1024 * 1024))  # KiB: 64 GiB
fi

# Generated inputs: a chain of 2000 computations, each calling the next (deeper than
# kMaxCallDepth; at 200000 the recursive passes overflowed the stack).
{
  echo "HloModule deep_calls"
  for ((i = 0; i < 2000; ++i)); do
    if ((i < 1999)); then body="call(p), to_apply=c$((i + 1))"; else body="negate(p)"; fi
    printf 'c%d {\n  p = f32[] parameter(0)\n  ROOT r = f32[] %s\n}\n' "$i" "$body"
  done
  printf 'ENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), to_apply=c0\n}\n'
} >"$TMP/deep_calls.hlo"
mkdir "$TMP/empty_dir"

trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  s=${s%"${s##*[![:space:]]}"}
  printf '%s' "$s"
}

while IFS= read -r line || [ -n "$line" ]; do
  case $line in '' | '#'*) continue ;; esac
  IFS='|' read -r name want fragment args <<<"$line"
  name=$(trim "$name")
  want=$(trim "$want")
  fragment=$(trim "$fragment")
  read -ra argv <<<"$args"
  for i in "${!argv[@]}"; do
    a=${argv[$i]}
    a=${a//@M@/$MALFORMED}
    a=${a//@D@/$DATA}
    a=${a//@TMP@/$TMP}
    [ "$a" = @EMPTY@ ] && a=
    argv[$i]=$a
  done
  out=$(timeout 120 "$KILN" "${argv[@]}" 2>&1)
  rc=$?
  why=
  if [ "$rc" -eq 124 ]; then
    why="timed out (120 s)"
  elif [ "$rc" -ge 128 ]; then
    why="crashed: exit $rc (signal $((rc - 128)))"
  elif [ "$rc" -ne "$want" ]; then
    why="exit $rc, expected $want"
  elif [ -n "$fragment" ] && ! grep -Fq -- "$fragment" <<<"$out"; then
    why="output lacks '$fragment'"
  fi
  if [ -n "$why" ]; then
    echo "FAIL $name: $why"
    echo "    kiln ${argv[*]}"
    echo "$out" | head -20 | sed 's/^/    /'
    failed=$((failed + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
done <"$MALFORMED/cases.txt"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
