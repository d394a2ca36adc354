#!/usr/bin/env bash
# Installs a kiln build into a fresh prefix (cmake --install), builds examples/embed against it
# with find_package(kiln), and runs it on examples/mlp.hlo.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
cmake -S "$src/examples/embed" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/build/embed" "$src/examples/mlp.hlo")
echo "$out"
grep -Eq 'on (cuda|cpu):0: ' <<<"$out" || { echo "FAIL: unexpected output"; exit 1; }
# The install holds libkiln and the public headers, not the static rooms or backend headers.
if ls "$tmp"/prefix/lib*/libkiln_*.a >/dev/null 2>&1; then echo "FAIL: static rooms installed"; exit 1; fi
if [ -e "$tmp/prefix/include/kiln/cpu" ]; then echo "FAIL: backend headers installed"; exit 1; fi
echo "PASS: built and ran the example against $(ls "$tmp"/prefix/lib*/libkiln.so*)"
