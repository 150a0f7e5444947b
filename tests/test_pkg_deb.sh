#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package a lab installs with apt: `cpack -G DEB` in the build
# tree makes ssq_<version>_<arch>.deb; its control names the package, the
# version and the libraries it needs (dpkg-shlibdeps); unpacked into a
# scratch root (dpkg -x, what dpkg --install puts in place) it holds
# libssq, the headers, ssq.pc, the CMake package, ssqd and the tools, the
# units (ExecStart naming /usr/bin/ssqd) and the man pages; that root's
# ssqd answers --version, and a consumer built with that root's ssq.pc
# alone links its libssq, runs, and posts an RDMA WRITE through its ssqd.
# Slow on a fresh tree: cpack builds every target first.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
here=$(cd "$(dirname "$0")" && pwd)
for t in cpack dpkg-deb pkg-config; do
	command -v $t >/dev/null ||
		{ echo "skip: $t not found (Debian: cmake, dpkg, pkgconf): no .deb to build"; exit 77; }
done
work=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fail=1
}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
san=()
grep -q '^SSQ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && san=(-fsanitize=address,undefined)

if ! (cd "$build" && cpack -G DEB -B "$work/out") >"$work/cpack.log" 2>&1; then
	echo "FAIL cpack -G DEB:"
	tail -n 20 "$work/cpack.log"
	exit 1
fi
deb=$(find "$work/out" -maxdepth 1 -name "ssq_${version}_*.deb")
[ -f "$deb" ] || { echo "FAIL no ssq_${version}_*.deb in $work/out: $(ls "$work/out")"; exit 1; }
ok "cpack -G DEB: $(basename "$deb")"
info=$(dpkg-deb -I "$deb")
for f in "Package: ssq" "Version: $version" "Depends: .*libibverbs1" "Depends: .*libc6"; do
	grep -qE "^ $f" <<<"$info" && ok "control: $(grep -m1 -E "^ ${f%%:*}:" <<<"$info" | cut -c2-120)" ||
		bad "control has no '$f'"
done

root=$work/root
dpkg -x "$deb" "$root"
for f in usr/bin/ssqd usr/bin/ssq_write_bw usr/bin/ssq_demo usr/include/ssq/ssq.h \
	usr/include/ssq/client.h usr/share/man/man8/ssqd.8 usr/share/man/man3/ssq_post_write.3 \
	usr/share/man/man1/ssq_write_bw.1 usr/share/man/man7/ssq.7; do
	[ -e "$root/$f" ] || bad "$f not in the package"
done
pc=$(find "$root" -name ssq.pc)
cmakecfg=$(find "$root" -name ssqConfig.cmake)
so=$(find "$root" -name 'libssq.so.*' -type f)
service=$(find "$root" -name ssqd.service)
[ -n "$pc" ] && [ -n "$cmakecfg" ] && [ -n "$so" ] && [ -n "$service" ] &&
	ok "library ${so#"$root"}, ${pc#"$root"}, ${cmakecfg#"$root"}, ${service#"$root"}" ||
	bad "missing: ssq.pc '$pc', ssqConfig.cmake '$cmakecfg', libssq.so '$so', ssqd.service '$service'"
[ -n "$service" ] && { grep -q '^ExecStart=/usr/bin/ssqd ' "$service" &&
	ok "ssqd.service: $(grep '^ExecStart=' "$service")" ||
	bad "ssqd.service: $(grep '^ExecStart=' "$service"), want /usr/bin/ssqd"; }

if v=$("$root/usr/bin/ssqd" --version 2>&1) && [[ $v == "ssqd $version "* ]]; then
	ok "the package's ssqd --version: $v"
else
	bad "the package's ssqd --version: '$v'"
fi

# A consumer built with the package's ssq.pc alone.
libdir=$(dirname "$(dirname "$pc")")
# shellcheck disable=SC2046
if "${CC:-cc}" -Wall -Wextra "${san[@]}" "$here/pkg_consumer.c" -o "$work/consumer" \
	$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs ssq) 2>"$work/cc.err"; then
	ok "consumer built with \$(pkg-config --cflags --libs ssq) from the package"
else
	bad "consumer did not build: $(head -n5 "$work/cc.err")"
	exit 1
fi
lib=$(LD_LIBRARY_PATH=$libdir ldd "$work/consumer" | awk '$1 ~ /^libssq\.so/ { print $3 }')
[[ $(realpath "$lib") == "$root"/* ]] && ok "consumer links the package's $lib" ||
	bad "consumer links '$lib', not the package's"
"$root/usr/bin/ssqd" --device emu --hugepages=off --data-mib 4 --socket "$work/s" \
	>"$work/ssqd.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
	[ -S "$work/s" ] && break
	sleep 0.1
done
if out=$(LD_LIBRARY_PATH=$libdir "$work/consumer" "$work/s" 2>&1) &&
	[[ $out == *"write through $work/s on emu: ok"* ]]; then
	ok "consumer posted an RDMA WRITE through the package's ssqd"
else
	bad "consumer through the package's ssqd: $out"
	sed 's/^/     ssqd: /' "$work/ssqd.log"
fi
exit "$fail"
