#!/usr/bin/env bash
# End-to-end tests of the `kiln` binary: exit codes, messages, .npz in and out.
#   cli_test.sh KILN_BINARY SOURCE_DIR
# Prints one line per check and "N passed, M failed" at the end; exits non-zero on a failure.
set -u
KILN=$1
DATA=$2/src/kiln/tools/testdata
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

# check NAME EXPECTED_EXIT PATTERN -- COMMAND...: runs COMMAND, checks its exit code and that
# its stdout+stderr match the extended regex PATTERN (empty: anything).
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

check version 0 '^kiln [0-9]+\.[0-9]+' -- "$KILN" --version
check help 0 'Examples:' -- "$KILN" --help
check run_help 0 '--inputs' -- "$KILN" run --help
check no_subcommand 2 'subcommand is required' -- "$KILN"
check bad_flag 2 '' -- "$KILN" run "$DATA/small.hlo" --no-such-flag

# Inputs from an npz, outputs to an npz, and back: the outputs equal the stored expectation.
check run_npz 0 'out0 f32\[2,3\].*min 1 max 6' -- \
  "$KILN" run "$DATA/small.hlo" --inputs "$DATA/inputs.npz" --outputs "$TMP/out.npz" --print
check outputs_written 0 '' -- test -s "$TMP/out.npz"
check compare_written 0 'OK: 2 outputs match' -- \
  "$KILN" compare "$DATA/small.hlo" --inputs "$DATA/inputs.npz" --expected "$TMP/out.npz"
check compare_expected 0 'OK: 2 outputs match' -- \
  "$KILN" compare "$DATA/small.hlo" --inputs "$DATA/inputs.npz" --expected "$DATA/expected.npz"
check compare_wrong 1 'worst at \[1, 2\]: actual 6, expected 6.5' -- \
  "$KILN" compare "$DATA/small.hlo" --inputs "$DATA/inputs.npz" --expected "$DATA/wrong.npz"
check compare_interpreter 0 'OK: 2 outputs match' -- \
  "$KILN" compare "$DATA/small.hlo" --device interpreter --reference interpreter --seed 3

# Random inputs are deterministic per seed.
check random_a 0 '' -- "$KILN" run "$DATA/small.hlo" --seed 5 --outputs "$TMP/a.npz"
check random_b 0 '' -- "$KILN" run "$DATA/small.hlo" --seed 5 --outputs "$TMP/b.npz"
check random_same 0 '' -- cmp "$TMP/a.npz" "$TMP/b.npz"
check random_c 0 '' -- "$KILN" run "$DATA/small.hlo" --seed 6 --outputs "$TMP/c.npz"
check random_differs 1 '' -- cmp -s "$TMP/a.npz" "$TMP/c.npz"

# Inputs that need a lossy conversion: an error naming --cast, accepted with --cast.
check needs_cast 2 'in1.*2\.5 \(f32\) does not convert exactly to s32; pass --cast' -- \
  "$KILN" run "$DATA/small.hlo" --inputs "$DATA/fractional.npz"
check with_cast 0 'out1 s32\[\].*\{2\}' -- \
  "$KILN" run "$DATA/small.hlo" --inputs "$DATA/fractional.npz" --cast
check missing_input 2 "no input for parameter 0" -- \
  "$KILN" run "$DATA/small.hlo" --inputs "$DATA/expected.npz"

# A malformed module: exit 2, FILE:LINE:COL, the line and a caret.
check malformed 2 'malformed\.hlo:5:[0-9]+: ' -- "$KILN" run "$DATA/malformed.hlo"
check malformed_caret 2 '^ +\^$' -- "$KILN" run "$DATA/malformed.hlo"
check unverified 2 'inferred shape f32\[2\] of negate' -- "$KILN" run "$DATA/unverified.hlo"
check missing_file 2 'cannot open' -- "$KILN" run "$TMP/none.hlo"
# Not files: clear errors with exit 2, never an abort or an endless read.
check module_is_directory 2 'is a directory' -- "$KILN" run "$TMP"
check module_is_device 2 'not a regular file' -- "$KILN" run /dev/zero
check inputs_is_directory 2 'is a directory' -- "$KILN" run "$DATA/small.hlo" --inputs "$TMP"
check expected_is_device 2 'not a regular file' -- "$KILN" compare "$DATA/small.hlo" --expected /dev/zero
check threads_out_of_range 2 'threads' -- "$KILN" run "$DATA/small.hlo" --threads 100000
check threads_negative 2 'threads' -- "$KILN" run "$DATA/small.hlo" --threads -1
printf 'HloModule huge\nENTRY e {\n  p = f32[1099511627776] parameter(0)\n  ROOT n = f32[1099511627776] negate(p)\n}\n' > "$TMP/huge.hlo"
check huge_parameter 1 'out of memory allocating 4398046511104 bytes for the random inputs of huge' -- "$KILN" run "$TMP/huge.hlo" --device interpreter
check rtol_negative 2 'finite number' -- "$KILN" compare "$DATA/small.hlo" --rtol -1
check rtol_nan 2 'finite number' -- "$KILN" compare "$DATA/small.hlo" --atol nan
check expected_and_reference 2 'excludes' -- "$KILN" compare "$DATA/small.hlo" --expected x.npz --reference cpu
# Not HLO text: the error says what it looks like and how to get HLO text.
printf 'module @jit_f {\n  func.func public @main(%%arg0: tensor<2xf32>) -> tensor<2xf32> {\n' > "$TMP/stablehlo.mlir"
check stablehlo_hint 2 'looks like StableHLO' -- "$KILN" run "$TMP/stablehlo.mlir"
printf '\x0a\x05\x00\x01\x02binary' > "$TMP/module.pb"
check binary_hint 2 'looks like a binary file' -- "$KILN" run "$TMP/module.pb"
# --no-verify skips the verifier, not the bounds: an out-of-range tuple index or slice is a
# malformed module (exit 2).
printf 'HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  t = (f32[4]) tuple(x)\n  ROOT g = f32[4] get-tuple-element(t), index=3\n}\n' > "$TMP/gte.hlo"
check no_verify_tuple_index 2 'index=3 is out of range' -- "$KILN" run "$TMP/gte.hlo" --device cpu --no-verify
printf 'HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT s = f32[8] slice(x), slice={[0:8]}\n}\n' > "$TMP/slice.hlo"
check no_verify_slice 2 'out of range \[0:4\]' -- "$KILN" run "$TMP/slice.hlo" --device cpu --no-verify

# Devices.
# rocm: not built (no ROCm headers at configure time), or built without an AMD GPU to run on.
check device_rocm_unavailable 2 "kiln: (device 'rocm' is not built yet \(available: (cuda, )?cpu, interpreter\)|rocm: (no device|libamdhip64 not found))" -- \
  "$KILN" run "$DATA/small.hlo" --device rocm
# The deviceless rocm compile, where the rocm backend and a HIP compiler are built in.
if "$KILN" devices | grep -q '^rocm: AMD GPUs' && command -v "${KILN_ROCM_CLANG:-clang++-19}" >/dev/null; then
  printf 'HloModule k\nENTRY e {\n  x = f32[1024] parameter(0)\n  ROOT y = f32[1024] exponential(x)\n}\n' > "$TMP/exp.hlo"
  check rocm_compile_gfx942 0 '1 kernels in 1 code object\(s\) for gfx942' -- \
    "$KILN" compile "$TMP/exp.hlo" --device rocm --target gfx942 --dump-kernels "$TMP/rocm_kernels"
  check rocm_dumped_code_object 0 'gfx942' -- bash -c "ls $TMP/rocm_kernels/*.gfx942.hsaco && cat $TMP/rocm_kernels/code_objects.txt"
  check rocm_unsupported_target 2 "target 'gfx9999' is not supported" -- \
    "$KILN" compile "$DATA/small.hlo" --device rocm --target gfx9999
else
  echo "skip rocm_compile_*: the rocm backend or clang++-19 is not here"
fi
check run_default_cpu 0 'ran on cpu:0' -- "$KILN" run "$DATA/small.hlo" --threads 2
check compare_cpu 0 'OK: 2 outputs match' -- \
  "$KILN" compare "$DATA/small.hlo" --device cpu --reference interpreter --threads 2
check compile_stats 0 'memory: arguments 28 B, outputs 28 B' -- \
  "$KILN" compile "$DATA/small.hlo" --device cpu --stats --dump-passes "$TMP/passes"
check compile_dumps 0 '' -- test -n "$(ls "$TMP/passes")"
check compile_interpreter 0 'the interpreter compiles nothing' -- "$KILN" compile "$DATA/small.hlo" --device interpreter
check bench_cpu 0 'median [0-9.]+ ms  min' -- "$KILN" bench "$DATA/small.hlo" --device cpu --warmup 1 --iterations 3
check bench_bad_iterations 2 'iterations' -- "$KILN" bench "$DATA/small.hlo" --iterations 0
check device_unknown 2 "kiln: unknown device 'tpu'" -- "$KILN" run "$DATA/small.hlo" --device tpu
check device_ordinal 2 "interpreter has 1 device" -- "$KILN" run "$DATA/small.hlo" --device interpreter:3
check devices 0 'interpreter: the reference evaluator \(host\)' -- "$KILN" devices

# Backend flags from the environment (KILN_<FLAG>, read by the tool only): a bad value is an
# error naming the flag, good ones compile.
check env_flag_bad 2 "cpu_gemm_kernel: expected kiln or eigen, got 'bogus'" -- \
  env KILN_CPU_GEMM_KERNEL=bogus "$KILN" compile "$DATA/small.hlo" --device cpu
check env_flags 0 'OK: 2 outputs match' -- \
  env KILN_CPU_GEMM_KERNEL=eigen KILN_CPU_GEMM_POOL=separate KILN_CPU_EXPR_CHAINS=0 KILN_CPU_CONV=im2col \
  "$KILN" compare "$DATA/small.hlo" --device cpu --reference interpreter --threads 2
check flag_bad 2 "cpu_conv: expected auto or im2col, got 'x'" -- \
  "$KILN" compile "$DATA/small.hlo" --device cpu --flag cpu_conv=x

# An input member no parameter takes is named in a warning.
check npz_extra_member 0 'warning: .*inputs_extra.npz:bias is not an input of cli_small' -- \
  "$KILN" run "$DATA/small.hlo" --device cpu --inputs "$DATA/inputs_extra.npz"

# Stored outputs are never compared with a run on random inputs.
check expected_without_inputs 2 'holds no inputs .* --inputs' -- "$KILN" compare "$DATA/small.hlo" --device cpu --expected "$DATA/expected.npz"

# What runs on the host evaluator instead of a native kernel is counted, by kind (issue 16).
check fallback_compile 0 'on the host \(evaluator\): 1 instruction: stochastic-convert x1' -- \
  "$KILN" compile "$DATA/host_fallback.hlo" --device cpu
check fallback_stats 0 'on the host \(evaluator\): 1 instruction: stochastic-convert x1' -- \
  "$KILN" compile "$DATA/host_fallback.hlo" --device cpu --stats
check fallback_run 0 'on the host \(evaluator\): 1 instruction: stochastic-convert x1' -- \
  "$KILN" run "$DATA/host_fallback.hlo" --device cpu
check no_fallback 0 '' -- bash -c "! '$KILN' compile '$DATA/small.hlo' --device cpu --stats 2>&1 | grep -q 'on the host'"

check info 0 'parameters \(2\)' -- "$KILN" info "$DATA/small.hlo"
check info_bytes 0 'bytes: parameters 28 B, outputs 28 B' -- "$KILN" info "$DATA/small.hlo"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
