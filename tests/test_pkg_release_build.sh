#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A distribution's build: `cmake -DCMAKE_BUILD_TYPE=Release` with Debian's
# dpkg-buildflags (CFLAGS, with CPPFLAGS appended as debhelper's cmake
# build system does; LDFLAGS), no SSQ_WERROR. Builds libssq and ssqd only,
# to spare the CPU (the tools and tests are the project's own builds' job).
#  - SSQ_WERROR is off unless asked for: a packager's newer compiler must
#    not stop on a warning (GCC 12 Release stopped on -Werror=format-
#    truncation in src/ctrl/daemon/peers/peer.c before it was an option);
#  - and the build is free of warnings under those flags: the test adds
#    -Werror to the packager's CFLAGS itself, so a warning fails it on this
#    run and every rerun (an object that only warned would not be rebuilt).
# The build directory stays under the build tree, so a rerun recompiles
# only what changed.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}
# The compiler: $SSQ_RELEASE_CC (scripts/test.sh runs it again with clang),
# else the build's own.
cc=${SSQ_RELEASE_CC:-${CC:-cc}}
command -v dpkg-buildflags >/dev/null ||
	{ echo "skip: dpkg-buildflags not found (Debian: dpkg-dev): no packager's flags to build with"; exit 77; }
rel=$build/pkg-release-$(basename "$cc")
cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
echo "CC=$cc CFLAGS=$cflags"
echo "LDFLAGS=$ldflags"
# A fresh cache each run: the flags are read at the first configure only.
rm -f "$rel/CMakeCache.txt"
if ! CC=$cc CFLAGS="$cflags -Werror" LDFLAGS=$ldflags cmake -S "$src" -B "$rel" \
	-DCMAKE_BUILD_TYPE=Release -DSSQ_BUILD_TESTS=OFF -DSSQ_BUILD_BENCH=OFF >"$rel.configure.log" 2>&1; then
	echo "FAIL: configure:"
	cat "$rel.configure.log"
	exit 1
fi
if ! grep -q '^SSQ_WERROR:BOOL=OFF$' "$rel/CMakeCache.txt"; then
	echo "FAIL: SSQ_WERROR is not off by default: $(grep '^SSQ_WERROR' "$rel/CMakeCache.txt" || echo 'no such option')"
	exit 1
fi
echo "ok   SSQ_WERROR off by default"
set +e
cmake --build "$rel" -j2 --target ssq ssqd >"$rel.build.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ] || grep -q 'warning:' "$rel.build.log"; then
	echo "FAIL: Release build of libssq and ssqd with dpkg-buildflags (exit $rc):"
	grep -B2 -A8 -e 'warning:' -e 'error:' "$rel.build.log" | head -n 80
	exit 1
fi
echo "ok   Release build of libssq and ssqd with dpkg-buildflags and $cc: no warnings"
"$rel/ssqd" --version || { echo "FAIL: the Release ssqd does not answer --version"; exit 1; }
exit 0
