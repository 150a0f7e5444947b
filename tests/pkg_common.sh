# SPDX-License-Identifier: MIT
# Sourced by tests/test_pkg_*.sh: install the build into a scratch prefix,
# as a user would with `cmake --install build --prefix P`, and say what is
# where. Sets: build, src, work, prefix, libdir, pcdir, mandir, bindir, san
# (the sanitizer flags a consumer of this build needs), version; ok / bad
# print a result (bad makes the test fail at pkg_done).
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}
work=$(mktemp -d)
pkg_cleanup_hooks=()
pkg_cleanup() {
	local h
	for h in "${pkg_cleanup_hooks[@]}"; do
		eval "$h" || true
	done
	rm -rf "$work"
}
trap pkg_cleanup EXIT
prefix=$work/prefix
fail=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fail=1
}
pkg_done() {
	[ "$fail" -eq 0 ] || echo "FAILED: see the FAIL lines above"
	exit "$fail"
}

# A sanitized libssq needs sanitized consumers.
san=()
if grep -q '^SSQ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
	san=(-fsanitize=address,undefined)
fi
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "FAIL: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
	{ echo "FAIL: cmake --install"; cat "$work/install.log"; exit 1; }
pc=$(find "$prefix" -name ssq.pc)
[ -n "$pc" ] && [ "$(echo "$pc" | wc -l)" -eq 1 ] ||
	{ echo "FAIL: want one ssq.pc under $prefix, found: ${pc:-none}"; exit 1; }
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
cache_dir() { # VAR DEFAULT: a GNUInstallDirs directory under the prefix
	local d
	d=$(sed -n "s/^$1:PATH=//p" "$build/CMakeCache.txt")
	d=${d:-$2}
	case $d in /*) echo "$d" ;; *) echo "$prefix/$d" ;; esac
}
bindir=$(cache_dir CMAKE_INSTALL_BINDIR bin)
mandir=$(cache_dir CMAKE_INSTALL_MANDIR share/man)
