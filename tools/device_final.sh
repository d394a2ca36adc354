set -u; src=$(pwd); ln -sfn $src/.device-deps/shared $src/../shared 2>/dev/null || true
source .device-deps/env.sh; export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH; mkdir -p $OUT; b=$src/build-gpu; t0=$SECONDS
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_ENABLE_ROCM=OFF > $OUT/configure.log 2>&1 || { tail -20 $OUT/configure.log; exit 1; }
ninja -C $b -j16 differential_test cuda_libs_attention_test cuda_collective_thunks_test > $OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -40; exit 1; }
echo "build $((SECONDS-t0)) s"; export KILN_SOURCE_DIR=$src KILN_SHARED_DIR=$src/.device-deps/shared
(cd $b && timeout 200 ctest -R "^differential_gpu_test|cuda_collective_thunks_test|cuda_libs_attention_test" -j4 --output-on-failure > $OUT/ctest.log 2>&1; echo "ctest rc=$?")
grep -E "tests passed|tests failed|\(Failed\)|Timeout|Passed|FAILED  \]" $OUT/ctest.log | head -30; echo "total $((SECONDS-t0)) s"
