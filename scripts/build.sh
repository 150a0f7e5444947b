#!/usr/bin/env bash
# Configure and build ssq into BUILD_DIR (default build/), after installing
# what is missing. Extra arguments go to cmake's configure step, e.g.
#   scripts/build.sh build-asan -DSSQ_SANITIZE=ON
# This is the project's own build: warnings are errors (SSQ_WERROR=ON; a
# packager's plain `cmake` leaves it off). The build shows one line per
# target as it finishes and ninja-or-make's [n/N] progress, so a two-minute
# build is not two silent minutes; the compiler's own output, when there is
# any, is shown as it comes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
"$here/scripts/install-deps.sh"
echo "build: configuring $build"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSSQ_WERROR=ON "$@" >/dev/null
echo "build: compiling with $(nproc) jobs"
# make prints "[ 42%] Built target X" per target; keep those lines and the
# compiler's diagnostics, drop the per-file "Building C object" chatter.
set +e
cmake --build "$build" -j"$(nproc)" -- --no-print-directory 2>&1 |
	grep --line-buffered -v -e '^\[ *[0-9]*%\] Building' -e '^\[ *[0-9]*%\] Linking' \
		-e '^Consolidate compiler generated dependencies' -e '^Scanning dependencies'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || { echo "build: FAILED in $build" >&2; exit 1; }
echo "build: $build ready"
