#!/bin/bash
# The Python package on the GPU machine, in one device call: build the extension for that
# machine's Python (3.12, with jax and torch), run the pytest suite (gpu-marked tests on cuda:0,
# then the cpu ones), the dispatch benchmark and the example on cuda:0. Results under $OUT.
#
#   ../shared/device/stage.sh                 # (here) googletest, CLI11 -> .device-deps
#   python3 -m pip download -q -d .whl --only-binary=:all: --python-version 3.12 --no-deps \
#       nanobind scikit-build-core pytest pluggy iniconfig packaging pathspec   # (here) -> .whl
#   run(command="bash python/device_check.sh", carry=[".device-deps", ".whl"], timeout_s=600)
#
# KILN_PIP_INSTALL=1 also builds and installs the wheel (pip install .) for that python and runs
# the gpu tests against the installed package instead of the build tree.
set -u
src=$(pwd)
[ -f .device-deps/env.sh ] && source .device-deps/env.sh
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
OUT=${OUT:-$src/device-out}
mkdir -p "$OUT"
b=$src/build-gpu
t0=$SECONDS
# The machine's python3 may itself be a venv (a venv made from it would not see its jax and
# torch): its packages are used as they are, the wheels go into a folder on PYTHONPATH.
py=$(command -v python3)
deps=$b/python-deps
mkdir -p "$b"
"$py" -c 'import nanobind, pytest, scikit_build_core' 2>/dev/null || {
  "$py" -m pip install -q --no-index --find-links "$src/.whl" --target "$deps" nanobind scikit-build-core pytest ||
    { echo "cannot install nanobind/pytest: carry .whl (see the header)"; exit 1; }
  export PYTHONPATH=$deps${PYTHONPATH:+:$PYTHONPATH}
}
"$py" -c 'import sys, jax, numpy, ml_dtypes; print("python", sys.version.split()[0], "jax", jax.__version__, jax.devices())'
"$py" -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1 | tail -1
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$py" \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
ninja -C "$b" -j16 _kiln kiln > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "build $((SECONDS - t0)) s  commit $(git rev-parse --short HEAD 2>/dev/null)"

export XLA_PYTHON_CLIENT_PREALLOCATE=false KILN_SOURCE_DIR=$src KILN_TOOL=$b/src/kiln/tools/kiln PYTHONDONTWRITEBYTECODE=1
path=$src/python:$b/python${PYTHONPATH:+:$PYTHONPATH}
if [ "${KILN_PIP_INSTALL:-0}" = 1 ]; then
  (cd "$src" && "$py" -m pip install -q --no-build-isolation --no-index . -Cbuild-dir="$b-wheel" \
     > "$OUT/pip.log" 2>&1) || { tail -30 "$OUT/pip.log"; exit 1; }
  echo "pip install . $((SECONDS - t0)) s"
  path=$src/python/tests${PYTHONPATH:+:$PYTHONPATH}   # the installed package, not the build tree
fi
KILN_REQUIRE_GPU=1 PYTHONPATH=$path timeout 360 "$py" -m pytest -q -p no:cacheprovider -rfE \
  "$src/python/tests" -m gpu > "$OUT/pytest_gpu.log" 2>&1
echo "pytest -m gpu rc=$?"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.log" | head -30; tail -1 "$OUT/pytest_gpu.log"
PYTHONPATH=$path timeout 120 "$py" -m pytest -q -p no:cacheprovider "$src/python/tests" -m "not gpu" \
  > "$OUT/pytest_cpu.log" 2>&1
echo "pytest -m 'not gpu' rc=$?"; tail -1 "$OUT/pytest_cpu.log"
PYTHONPATH=$path timeout 120 "$py" "$src/bench/python/dispatch.py" --device cuda:0 2>&1 | tee "$OUT/dispatch.txt"
PYTHONPATH=$path timeout 60 "$py" "$src/examples/jit_mlp.py" --device cuda:0 2>&1 | tail -2
echo "total $((SECONDS - t0)) s"
