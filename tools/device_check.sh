#!/usr/bin/env bash
# Runs kiln's GPU checks on a machine with an NVIDIA GPU and writes the logs to $1.
#
#   tools/device_check.sh OUT_DIR [BUILD_DIR]
#
# Steps (each logged to OUT_DIR/<step>.log; environment and results go to OUT_DIR/summary.txt,
# at most 8 files in all, which is what the device tool brings back):
#   configure  cmake with the CUDA driver on (no nvcc needed: kernels go through NVRTC)
#   build      the whole project (ninja if present)
#   devices    the platform listing (what `kiln devices` prints)
#   gpu_tests  ctest -L gpu
#   memcheck   compute-sanitizer --tool memcheck over the conformance, device (BFC on real memory)
#              and NVRTC tests (the fake-region BFC test never touches the GPU, so it is not run
#              there: the sanitizer fails a program that makes no CUDA call) and the differential
#              suite's cuda cases (~3 min on the H200; its data: tests/data and $KILN_SHARED_DIR,
#              default ../shared, which the device tool does not carry -- copy corpus/xla-fuzz and
#              bench/suite/*_small into an ignored folder, carry it, point KILN_SHARED_DIR there);
#              KILN_MEMCHECK_TESTS names another list
#   bench      kiln_runtime_bench (Markdown tables); skipped with KILN_DEVICE_CHECK_RUNTIME_BENCH=0
#   gpu_bench  bench/gpu/run.sh OUT_DIR/gpu_bench (kiln vs XLA vs PyTorch), only with
#              KILN_DEVICE_CHECK_GPU_BENCH=1 and when the script exists
#   cpu_tests  ctest -L cpu, only with KILN_DEVICE_CHECK_CPU=1
#   cpu_bench  bench/cpu/run_suite.py (kiln's cpu backend vs XLA's CPU backend through the jax
#              installed there) on that machine's cores, only with KILN_DEVICE_CHECK_CPU_BENCH=1
# Dependencies missing on the GPU machine (GoogleTest...) come from .device-deps/env.sh when the
# checkout carries it. Exit status: 0 when every step passed, 1 otherwise (all steps run).
#
# From the device tool: run(command="bash tools/device_check.sh $OUT/runtime",
#                           carry=[".device-deps"], timeout_s=600)
set -u
out="${1:?usage: tools/device_check.sh OUT_DIR [BUILD_DIR]}"
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${2:-$src/build-gpu}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: > "$summary"
failed=0
jobs="$(nproc 2>/dev/null || echo 8)"

step() {  # step NAME COMMAND...
  local name="$1"
  shift
  local start=$SECONDS
  if "$@" > "$out/$name.log" 2>&1; then
    echo "PASS  $name ($((SECONDS - start)) s)" | tee -a "$summary"
  else
    echo "FAIL  $name ($((SECONDS - start)) s): see $name.log" | tee -a "$summary"
    failed=1
  fi
}

# The CUDA toolkit: CUDA_HOME if set, else /usr/local/cuda.
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$CUDA_HOME/bin:$CUDA_HOME/compute-sanitizer:$PATH"
if [ -f "$src/.device-deps/env.sh" ]; then
  pushd "$src" > /dev/null && . .device-deps/env.sh && popd > /dev/null
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  # The device machine gets a copy of the tree without .git: the caller passes KILN_COMMIT.
  echo "commit: ${KILN_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv 2>&1
  echo "compilers: $(c++ --version | head -1); $(cmake --version | head -1)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || echo none)"
  echo
} >> "$summary" 2>&1

step configure cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKILN_ENABLE_CUDA=ON
step build cmake --build "$build" -j "$jobs"

# The listing must show a usable cuda platform: otherwise every GPU test would only skip.
devices() {
  local bin
  bin="$(find "$build" -name runtime_platform_test -type f | head -1)"
  [ -n "$bin" ] || { echo "runtime_platform_test not built"; return 1; }
  "$bin" --gtest_filter='*ListsBuiltinPlatforms*' || return 1
  ! grep -q "^cuda: unavailable" "$out/devices.log"
}
step devices devices

step gpu_tests ctest --test-dir "$build" -L gpu -V
skipped="$(grep -c 'SKIPPED \] [A-Za-z].* ms)$' "$out/gpu_tests.log" 2>/dev/null)"
echo "      gpu test cases skipped: ${skipped:-0} (see gpu_tests.log)" | tee -a "$summary"

if command -v compute-sanitizer > /dev/null; then
  memcheck() {
    local status=0
    for test in ${KILN_MEMCHECK_TESTS:-cuda_conformance_test cuda_device_test cuda_nvrtc_test differential_test}; do
      local bin
      bin="$(find "$build" -name "$test" -type f | head -1)"
      [ -z "$bin" ] && { echo "missing $test"; status=1; continue; }
      echo "=== $test"
      # API errors are expected (the tests provoke out-of-memory, bad modules, oversized
      # launches); memcheck reports only memory errors.
      # differential_test: only its cuda cases (every tests/data case, bench small and xla-fuzz
      # module on the cuda backend), with the data folders ctest would give it.
      if [ "$test" = differential_test ]; then
        KILN_SOURCE_DIR="$src" KILN_SHARED_DIR="${KILN_SHARED_DIR:-$src/../shared}" GTEST_FILTER='*_cuda' \
          compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 "$bin" || status=1
        continue
      fi
      compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 "$bin" \
        || status=1
    done
    return $status
  }
  step memcheck memcheck
else
  echo "SKIP  memcheck (compute-sanitizer not found)" | tee -a "$summary"
fi

bench="$(find "$build" -name kiln_runtime_bench -type f | head -1)"
if [ -n "$bench" ] && [ "${KILN_DEVICE_CHECK_RUNTIME_BENCH:-1}" = 1 ]; then
  step bench "$bench" --platform=cuda
fi

if [ "${KILN_DEVICE_CHECK_GPU_BENCH:-0}" = 1 ] && [ -f "$src/bench/gpu/run.sh" ]; then
  step gpu_bench bash "$src/bench/gpu/run.sh" "$out/gpu_bench" "$build"
fi

if [ "${KILN_DEVICE_CHECK_CPU:-0}" = 1 ]; then
  step cpu_tests ctest --test-dir "$build" -L cpu --output-on-failure -j "$jobs"
fi

if [ "${KILN_DEVICE_CHECK_CPU_BENCH:-0}" = 1 ]; then
  cpu_bench() {
    local kiln eigen
    kiln="$(find "$build" -name kiln -type f -perm -u+x | head -1)"
    eigen="$(find "$build" -name eigen_gemm -type f -perm -u+x | head -1)"
    JAX_PLATFORMS=cpu timeout 300 python3 "$src/bench/cpu/run_suite.py" --kiln "$kiln" \
      ${eigen:+--eigen "$eigen"} --iterations 20 --repeat 2 --markdown
  }
  step cpu_bench cpu_bench
fi

echo "logs in $out" | tee -a "$summary"
exit $failed
