#!/bin/bash
# One device call for the NCCL collectives (issue 17): build the targets they need, the
# collective thunks test, the differential collective cases on cuda, the executable test, a
# few `kiln run`s (one participant, mpirun), the llama corpus modules, the collectives bench.
#   run(command="bash tools/device_nccl.sh", carry=[".device-deps"], timeout_s=420)
set -u
src=$(pwd)
ln -sfn $src/.device-deps/shared $src/../shared 2>/dev/null || true
source .device-deps/env.sh
export CUDA_HOME=/usr/local/cuda PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT
b=$src/build-gpu
t0=$SECONDS
if ! python3 -c 'import ctypes; ctypes.CDLL("libnccl.so.2")' 2>/dev/null; then
  n=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -f "$n" ] && export KILN_NCCL_LIBRARY=$n
fi
echo "nccl: ${KILN_NCCL_LIBRARY:-libnccl.so.2 on the loader path}; mpirun: $(command -v mpirun)"
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release > $OUT/configure.log 2>&1 || { tail -30 $OUT/configure.log; exit 1; }
ninja -C $b -j16 kiln differential_test cuda_collective_thunks_test cuda_gpu_executable_test kiln_collectives_bench nccl_direct_bench > $OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -60; exit 1; }
echo "build $((SECONDS-t0)) s  commit $(git rev-parse --short HEAD)"
export KILN_SOURCE_DIR=$src KILN_SHARED_DIR=$src/.device-deps/shared
K=$b/src/kiln/tools/kiln
timeout 90 $b/src/kiln/cuda/compiler/cuda_collective_thunks_test 2>&1 | tee $OUT/thunks_test.log | grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|error" | head -20
d=$(find $b -name differential_test -type f -perm -u+x | head -1)
KILN_DIFFERENTIAL_REQUIRE=cuda timeout 120 $d --gtest_filter='*Collectives*cuda*' 2>&1 | tee $OUT/diff.log | grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED" | head -20
timeout 90 $b/src/kiln/cuda/compiler/cuda_gpu_executable_test 2>&1 | grep -E "^\[  (PASSED|FAILED) |tests ran" | head -8
echo "tests $((SECONDS-t0)) s"
timeout 20 $K run tests/data/collectives/coll_dp_gradient_n1/module.hlo --device cuda 2>&1 | tail -4
timeout 30 $K bench tests/data/collectives/coll_tp_matmul_n1/module.hlo --device cuda --iterations 20 2>&1 | grep -E "median|graph|collectives|host" | head -5
timeout 20 $K run tests/data/collectives/coll_psum_n2/module.hlo --device cuda 2>&1 | tail -2
R="--allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -x KILN_NCCL_LIBRARY -x LD_LIBRARY_PATH"
timeout 30 mpirun $R -np 1 $K run tests/data/collectives/coll_psum_n1/module.hlo --device cuda --outputs $OUT/mpi1.npz 2>&1 | tail -3
timeout 40 mpirun $R -np 2 $K run tests/data/collectives/coll_psum_n2/module.hlo --device cuda --outputs $OUT/mpi2.npz 2>&1 | tail -6
for m in hlo_llama31_70b_bf16_16x8; do
  f=.device-deps/shared/corpus/xla-models/$m.hlo
  [ -f $f ] || f=$src/../shared/corpus/xla-models/$m.hlo
  timeout 60 $K compile $f --device cuda --thunks --autotune off > $OUT/$m.thunks 2>&1; echo "$m compile rc=$? collectives=$(grep -c '^ *collective %' $OUT/$m.thunks) host: $(grep -i 'on the host' $OUT/$m.thunks | head -1)"
  timeout 60 $K run $f --device cuda --autotune off 2>&1 | tail -2 | cut -c1-300
done
echo "misc $((SECONDS-t0)) s"
KILN_COLL_ITERS=${KILN_COLL_ITERS:-20} timeout 170 bash bench/gpu/collectives/run.sh $OUT/coll $b 1 > $OUT/coll.log 2>&1; echo "bench rc=$?"
cat $OUT/coll/table.md 2>/dev/null | head -130
tail -3 $OUT/coll/kiln.log $OUT/coll/nccl.log 2>/dev/null
echo "total $((SECONDS-t0)) s"
