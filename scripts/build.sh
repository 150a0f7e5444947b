#!/usr/bin/env bash
# Configure and build ssq into BUILD_DIR (default build/), after installing
# what is missing. Extra arguments go to cmake's configure step, e.g.
#   scripts/build.sh build-asan -DSSQ_SANITIZE=ON
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" -- --no-print-directory >/dev/null
echo "build: $build ready"
