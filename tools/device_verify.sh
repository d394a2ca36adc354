#!/bin/bash
# One device call: configure + build (build-gpu), then the whole gpu label (tuned differential
# shards included) and the Python package's GPU check. From the device tool:
#   run(command="bash tools/device_verify.sh", carry=[".device-deps", ".whl"], timeout_s=600)
set -u
src=$(pwd)
ln -sfn $src/.device-deps/shared $src/../shared 2>/dev/null || true
source .device-deps/env.sh
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT
b=$src/build-gpu
t0=$SECONDS
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release > $OUT/configure.log 2>&1 || { tail -30 $OUT/configure.log; exit 1; }
ninja -C $b -j16 > $OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -60; exit 1; }
echo "build $((SECONDS-t0)) s  commit $(git rev-parse --short HEAD 2>/dev/null)"
export KILN_SOURCE_DIR=$src KILN_SHARED_DIR=$src/.device-deps/shared
(cd $b && timeout ${KILN_CTEST_TIMEOUT:-380} ctest -L gpu ${KILN_CTEST_ARGS:-} -j4 --output-on-failure > $OUT/ctest_gpu.log 2>&1; echo "ctest rc=$?")
grep -E "tests passed|tests failed|\(Failed\)|Timeout|Not Run|Test +#" $OUT/ctest_gpu.log | head -40
echo "tests $((SECONDS-t0)) s"
