#!/usr/bin/env bash
# kiln's one entry point for people and CI. Each command is self-contained: it installs what is
# missing (Debian 12 packages, as root or through sudo), configures and builds, then does its job.
#
#   ./kiln.sh example   build (Release) and run examples/mlp.hlo, printing its outputs, and the
#                       Python example examples/jit_mlp.py (kiln.jit on a JAX MLP)
#   ./kiln.sh test      build (Release) and run the whole CTest suite (label cpu; GPU tests,
#                       label gpu, run only where an NVIDIA GPU is visible), the pytest suite
#                       of the Python package (python/tests) included
#   ./kiln.sh build     just install and build
#   ./kiln.sh fuzz [SECONDS]
#                       build the libFuzzer targets with clang (installed with its libFuzzer
#                       runtime like the other packages) and run each for SECONDS (60);
#                       skipped with a note only when clang is missing and KILN_NO_INSTALL=1
#
# Environment: KILN_BUILD_DIR (default build-release), KILN_JOBS (default nproc),
# KILN_NO_INSTALL=1 to skip the package step, KILN_PYTHON (default python3): the Python the
# package is built for. Its packages (nanobind, pytest, jax, ...: python/requirements-dev.txt)
# go into a venv in the build directory that also sees the system's site packages.
set -euo pipefail

cd "$(dirname "$0")"
ROOT=$(pwd)
BUILD_DIR=${KILN_BUILD_DIR:-$ROOT/build-release}
JOBS=${KILN_JOBS:-$(nproc 2>/dev/null || echo 2)}
PACKAGES=(cmake ninja-build g++ libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
          libeigen3-dev zlib1g-dev ccache python3-dev python3-venv python3-pip)
# The ROCm backend's build and compile tests (docs/rocm.md): Debian 12's HIP 5.2 runtime, hipRTC
# and comgr, its device libraries, and clang-19 (gfx942) with lld. Headers Debian 12 lacks come
# from rocm_sdk below.
ROCM_PACKAGES=(libamdhip64-dev rocm-device-libs libamd-comgr-dev clang-19 lld-19 llvm-19)
# The fuzz command's compiler: clang and its libFuzzer/sanitizer runtime (Debian 12: LLVM 14).
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

say() { printf '\033[1mkiln.sh:\033[0m %s\n' "$*"; }

install_packages() {
  [ "${KILN_NO_INSTALL:-0}" = 1 ] && return 0
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { say "missing packages ${missing[*]}; run as root or install them"; exit 1; }
    sudo=(sudo)
  fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

VENV=$BUILD_DIR/python-venv

# rocm_sdk: the HIP 6.x, rocBLAS, hipBLASLt, MIOpen and RCCL headers and the gfx942-capable device
# libraries, from Debian's newer suites (trixie, sid) through a private apt configuration (its
# own lists and cache under the build directory; the system's apt state is untouched), unpacked
# with dpkg -x into $BUILD_DIR/rocm-sdk/root, never installed (about 1 MB; their libraries need
# a newer libc than Debian 12's). CMake finds them there (cmake/kiln_rocm.cmake); without them
# the ROCm parts are skipped, and configure says why.
ROCM_SDK_DEBS=(rocm-device-libs-17/trixie libamdhip64-dev/sid libmiopen-dev/sid libhipblaslt-dev/sid
               librocblas-dev/sid libhipblas-dev/sid libhipblas-common-dev/sid librccl-dev/sid)
rocm_sdk() {
  local w=$BUILD_DIR/rocm-sdk
  # A directory unpacked before a package was added to the list is fetched again.
  [ -f "$w/root/usr/include/hip/hip_version.h" ] && [ -f "$w/root/usr/include/rccl/rccl.h" ] && return 0
  if [ "${KILN_NO_INSTALL:-0}" = 1 ]; then
    say "KILN_NO_INSTALL=1: ROCm headers not fetched; the ROCm parts will be skipped"
    return 0
  fi
  local src=/etc/apt/sources.list.d/debian.sources
  if [ ! -f "$src" ]; then
    say "no $src: cannot fetch the ROCm headers; the ROCm parts will be skipped"
    return 0
  fi
  say "fetching the ROCm headers and device libraries (${ROCM_SDK_DEBS[*]}) into $w"
  mkdir -p "$w/parts" "$w/lists/partial" "$w/cache/archives/partial" "$w/debs"
  awk 'BEGIN{RS="";ORS="\n\n"} NR==1' "$src" | sed 's/^Suites:.*/Suites: trixie sid/' > "$w/parts/newer.sources"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$w/parts" -o "Dir::State::Lists=$w/lists"
           -o "Dir::Cache=$w/cache" -o APT::Sandbox::User=root)
  if ! apt-get "${o[@]}" update -qq >"$w/apt.log" 2>&1 ||
     ! (cd "$w/debs" && apt-get "${o[@]}" download "${ROCM_SDK_DEBS[@]}" >>"$w/apt.log" 2>&1); then
    say "fetching the ROCm headers failed (see $w/apt.log); the ROCm parts will be skipped"
    return 0
  fi
  rm -rf "$w/root"
  for f in "$w"/debs/*.deb; do dpkg -x "$f" "$w/root"; done
  ls "$w/debs" > "$w/versions.txt"  # sid moves on: what came is logged
  say "ROCm headers: $(tr '\n' ' ' < "$w/versions.txt")"
}

# The venv the Python extension is built for and its tests run in: the system's site packages
# (jax, numpy where installed) plus python/requirements-dev.txt. With KILN_NO_INSTALL=1 an
# existing venv is used as it is, and without one the extension is left out.
python_env() {
  if [ ! -x "$VENV/bin/python" ]; then
    [ "${KILN_NO_INSTALL:-0}" = 1 ] && return 0
    mkdir -p "$BUILD_DIR"
    say "making the Python venv $VENV"
    "${KILN_PYTHON:-python3}" -m venv --system-site-packages "$VENV"
  fi
  [ "${KILN_NO_INSTALL:-0}" = 1 ] && return 0
  if ! "$VENV/bin/python" -c 'import nanobind, pytest, numpy, ml_dtypes, jax' 2>/dev/null; then
    say "installing the Python packages of python/requirements-dev.txt into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/python/requirements-dev.txt"
  fi
}

# build [TARGET...]: everything by default.
build() {
  install_packages "${PACKAGES[@]}" "${ROCM_PACKAGES[@]}"
  rocm_sdk
  python_env
  local python_args=()
  [ -x "$VENV/bin/python" ] && python_args=(-DKILN_BUILD_PYTHON=ON "-DPython_EXECUTABLE:FILEPATH=$VENV/bin/python")
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    say "configuring $BUILD_DIR (Release)"
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_args[@]}" >/dev/null
  elif [ ${#python_args[@]} -gt 0 ] && ! grep -qx "Python_EXECUTABLE:[A-Z]*=$VENV/bin/python" "$BUILD_DIR/CMakeCache.txt"; then
    say "configuring $BUILD_DIR for the Python venv"
    cmake -S "$ROOT" -B "$BUILD_DIR" "${python_args[@]}" >/dev/null
  fi
  say "building ${*:-everything} with $JOBS jobs"
  ninja -C "$BUILD_DIR" -j "$JOBS" --quiet "$@"
}

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }

cmd_example() {
  local targets=(kiln)
  [ -x "$VENV/bin/python" ] || python_env
  [ -x "$VENV/bin/python" ] && targets+=(_kiln)
  build "${targets[@]}"
  say "kiln run examples/mlp.hlo --print"
  "$BUILD_DIR/src/kiln/tools/kiln" run "$ROOT/examples/mlp.hlo" --print
  if [ -x "$VENV/bin/python" ]; then
    say "python examples/jit_mlp.py (kiln.jit)"
    PYTHONPATH="$ROOT/python:$BUILD_DIR/python" "$VENV/bin/python" "$ROOT/examples/jit_mlp.py"
  else
    say "no Python venv (KILN_NO_INSTALL=1): examples/jit_mlp.py skipped"
  fi
}

cmd_test() {
  build
  local gpu_tests
  gpu_tests=$(ctest --test-dir "$BUILD_DIR" -N -L gpu | sed -n 's/^Total Tests: //p')
  if have_gpu; then
    say "running every test (a GPU is visible)"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
  else
    say "running the cpu tests; ${gpu_tests:-0} GPU test(s) (label gpu) skipped: no GPU here"
    ctest --test-dir "$BUILD_DIR" -L cpu --output-on-failure -j "$JOBS"
    echo "GPU tests skipped (no GPU visible): ${gpu_tests:-0}"
  fi
}

cmd_fuzz() {
  local seconds=${1:-60}
  install_packages "${PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
  if ! command -v clang++ >/dev/null; then
    say "clang++ not found: fuzzing skipped (apt-get install ${FUZZ_PACKAGES[*]} to enable)"
    return 0
  fi
  local dir=$ROOT/build-fuzz
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DKILN_BUILD_FUZZERS=ON -DKILN_BUILD_TESTS=OFF >/dev/null
  fi
  # Every executable target whose name ends in _fuzzer.
  local targets
  targets=$(ninja -C "$dir" -t targets all | sed -n 's/^\([A-Za-z0-9_]*_fuzzer\): phony$/\1/p' | grep -v '^cmake_' | sort -u)
  if [ -z "$targets" ]; then
    say "no *_fuzzer targets in this tree: nothing to fuzz"
    return 0
  fi
  ninja -C "$dir" -j "$JOBS" $targets >/dev/null
  for t in $targets; do
    local bin
    bin=$(find "$dir" -type f -name "$t" -perm -u+x | head -n 1)
    [ -n "$bin" ] || { say "built $t but cannot find its binary"; return 1; }
    local corpus=$dir/corpus-$t seeds=()
    mkdir -p "$corpus"
    # Seeds (read, never written): the kept corpus of earlier runs (tests/fuzz/<room>_corpus.tar.gz,
    # minimized with -merge=1; the hlo one serves every hlo_* target), the HLO corpus and examples.
    local kept=$ROOT/tests/fuzz/${t%%_*}_corpus.tar.gz
    if [ -f "$kept" ]; then
      rm -rf "$dir/seeds-$t" && mkdir -p "$dir/seeds-$t" && tar -C "$dir/seeds-$t" -xzf "$kept" && seeds+=("$dir/seeds-$t")
    fi
    for d in "$ROOT/../shared/corpus/xla-fuzz" "$ROOT/examples"; do [ -d "$d" ] && seeds+=("$d"); done
    # A dictionary beside the target's source: <target>.dict or, without the room prefix,
    # parser_fuzzer.dict for hlo_parser_fuzzer.
    local dict=() f
    # (every hlo_* target reads HLO text: the parser's dictionary serves them all)
    for f in "$t.dict" "${t#*_}.dict" $([ "${t%%_*}" = hlo ] && echo parser_fuzzer.dict); do
      local found
      found=$(find "$ROOT/src" -name "$f" | head -n 1)
      if [ -n "$found" ]; then dict=(-dict="$found"); break; fi
    done
    say "fuzzing $t for ${seconds}s"
    # A crash or leak exits non-zero (and fails the command); its input lands in $dir. UBSan's
    # checks are recoverable (-fsanitize=undefined): halt_on_error makes a report a failure too.
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    "$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/" "${dict[@]}" \
      "$corpus" "${seeds[@]}" 2>&1 | grep -vE '^".*" # Uses: [0-9]+$|recommended dictionary' | tail -n 12
  done
}

case "${1:-}" in
  example) cmd_example ;;
  test) cmd_test ;;
  build) build ;;
  fuzz) shift; cmd_fuzz "$@" ;;
  *)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
