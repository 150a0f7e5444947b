#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs to pass ssq's tests: install the
# dependencies, build twice (AddressSanitizer + UndefinedBehaviorSanitizer,
# then the normal optimised build) and run every ctest suite in each. The
# run ends with ctest's own summary of the normal build and the time it took.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

"$here/scripts/install-deps.sh"
# The code follows the repo's .clang-format.
(cd "$here" && find include src tests bench tools fuzz examples -name '*.[ch]' -o -name '*.cc' |
	xargs clang-format --dry-run --Werror) || { echo "test.sh: run clang-format -i on the files above" >&2; exit 1; }
echo "format: clean"

# ctest runs twice as many tests as there are cores: most wait on ssqd, on
# deadlines and on sockets; those that keep cores busy say so (PROCESSORS
# in tests/CMakeLists.txt), and ctest counts them as two.
ctest_jobs=$((jobs * 2))

# Where the time goes, at each step's end: seconds since the start.
step_done() { echo "test.sh: $1 done at ${SECONDS} s"; }
step_done "dependencies and format"

# The sanitizer build at -O1 with line tables only (-g1): what the
# sanitizers' reports need (function, file, line), at about half the
# compile time of -O2 -g, which with ASan and UBSan took 5x a normal
# build's (docs/measurements.md, "The test suite's time"). -O1 is what
# clang's docs/AddressSanitizer.rst asks for ("-O1 or higher" for
# reasonable speed, -O1 for the best stack traces).
asan_flags="-O1 -g1 -DNDEBUG"
"$here/scripts/build.sh" "$here/build-asan" -DSSQ_SANITIZE=ON \
	"-DCMAKE_C_FLAGS_RELWITHDEBINFO=$asan_flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$asan_flags"
step_done "ASan build"
# Not under ASan: the Spin models and the TSan check build their own
# programs, and the packaging tests ship the normal build (labels spin, tsan,
# pkg).
echo "== ctest: ASan + UBSan build (all but the labels spin, tsan, pkg) =="
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure -j"$ctest_jobs" -LE '^(spin|tsan|pkg)$')
step_done "ASan suite"

"$here/scripts/build.sh" "$here/build"
step_done "normal build"
# A packager's build (Release, dpkg-buildflags, no SSQ_WERROR) once more
# with clang; the suite below runs it with the build's own compiler.
echo "== a packager's Release build with clang =="
(cd "$here/build" && SSQ_RELEASE_CC=clang ctest --output-on-failure -R '^pkg_release_build$')
step_done "packager's build"
echo "== ctest: normal build =="
cd "$here/build"
rc=0
ctest --output-on-failure -j"$ctest_jobs" || rc=$?
step_done "normal suite"
exit $rc
