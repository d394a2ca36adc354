#!/bin/bash
# One device call: configure + build (build-gpu), the gpu label without the tuned differential
# shards, the attention workloads against XLA and PyTorch (untuned), PyTorch's SDPA on the same
# shapes. From the device tool, after ../shared/device/stage.sh and a copy of ../shared/bench +
# corpus into .device-deps/shared (and the cuDNN frontend headers of PyPI's
# nvidia-cudnn-frontend into .device-deps/root/usr/include for cuDNN SDPA):
#   run(command="bash tools/device_quick.sh", carry=[".device-deps"], timeout_s=520)
# About 350 s on the H200 (build 120-150 s). KILN_BENCH_ONLY overrides the workloads.
set -u
src=$(pwd)
ln -sfn $src/.device-deps/shared $src/../shared 2>/dev/null || true
source .device-deps/env.sh
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT
b=$src/build-gpu
t0=$SECONDS
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release > $OUT/configure.log 2>&1 || { tail -30 $OUT/configure.log; exit 1; }
grep "cuDNN frontend" $OUT/configure.log
ninja -C $b -j16 > $OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -60; exit 1; }
echo "build $((SECONDS-t0)) s  commit $(git rev-parse --short HEAD)"
export KILN_SOURCE_DIR=$src KILN_SHARED_DIR=$src/.device-deps/shared
(cd $b && timeout 330 ctest -L gpu -E differential_gpu_tuned -j4 --output-on-failure > $OUT/ctest_gpu.log 2>&1; echo "ctest rc=$?")
grep -E "tests passed|tests failed|\(Failed\)|Timeout|Not Run" $OUT/ctest_gpu.log | head -20
grep -h "cudnn sdpa declines" $OUT/ctest_gpu.log | head
echo "tests $((SECONDS-t0)) s"
KILN_BENCH_AUTOTUNE=0 KILN_BENCH_ONLY=${KILN_BENCH_ONLY:-attention_bf16,transformer_bf16,gpt_scan_bf16} bash bench/gpu/run.sh $OUT/bench $b > $OUT/bench.log 2>&1; echo "bench rc=$?"
cat $OUT/bench/table.md | head -8
grep -E "^=== |median" $OUT/bench/kiln.txt | head -12
$b/src/kiln/tools/kiln compile .device-deps/shared/bench/suite/attention_bf16/module.hlo --device cuda --thunks 2>&1 | grep -i "attention" | head -3
python3 bench/gpu/torch_sdpa.py 2>&1 | tail -4
# KILN_BENCH_TRAIN_ATTENTION=1: the training step with attention (bench/gpu/train_attention) too.
if [ "${KILN_BENCH_TRAIN_ATTENTION:-0}" = 1 ]; then
  cat $OUT/bench/train_attention_xla.jsonl
  grep -E "median|rror|FAILED" $OUT/bench/train_attention.txt | head -5
  timeout 120 python3 bench/gpu/train_attention/torch_train.py 2>&1 | tail -2
  $b/src/kiln/tools/kiln bench $OUT/bench/train_attention/train_attention_bf16/module.hlo --device cuda --autotune off \
    --warmup 3 --iterations 10 --profile 2>&1 | grep -vE "^\s*$" | head -30 | cut -c1-160
  $b/src/kiln/tools/kiln compile $OUT/bench/train_attention/train_attention_bf16/module.hlo --device cuda --stats --thunks 2>&1 |
    grep -iE "attention|peak|total|temp" | cut -c1-220 | head -12
fi
echo "total $((SECONDS-t0)) s"
