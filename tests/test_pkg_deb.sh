#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages a lab installs with apt, split as Debian splits a
# library (cmake/deb.cmake): `cpack -G DEB` in the build tree makes
# libssq0, libssq-dev, ssqd and ssq-tools, <name>_<version>-1_<arch>.deb.
# Each control names its package and version and the libraries it needs
# (dpkg-shlibdeps); libssq0 is the SONAME alone, with shlibs, a symbols
# file listing its exports and the ldconfig trigger, libssq-dev depends on it at its version; apt would
# install the four (apt-get install -s); lintian finds no error and no
# warning in them (the overrides each say why). Each holds its own files
# and no other's; unpacked into a scratch root (dpkg -x, what dpkg
# --install puts in place) they hold libssq, the headers, ssq.pc, the CMake
# package, ssqd and the tools, the units (ExecStart naming /usr/bin/ssqd)
# and the man pages; that root's ssqd answers --version, and a consumer
# built with that root's ssq.pc alone links its libssq, runs, and posts an
# RDMA WRITE through its ssqd.
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
arch=$(dpkg --print-architecture)
debs=()
for p in libssq0 libssq-dev ssqd ssq-tools; do
	deb=$work/out/${p}_${version}-1_$arch.deb
	[ -f "$deb" ] || { bad "no $(basename "$deb") in $work/out: $(ls "$work/out")"; continue; }
	debs+=("$deb")
done
[ "${#debs[@]}" -eq 4 ] || exit 1
extra=$(find "$work/out" -maxdepth 1 -name '*.deb' | wc -l)
[ "$extra" -eq 4 ] && ok "cpack -G DEB: $(cd "$work/out" && echo *.deb)" ||
	bad "cpack made $extra packages, want 4: $(ls "$work/out")"

control() { # PACKAGE FIELD: the field of that package's control
	dpkg-deb -f "$work/out/${1}_${version}-1_$arch.deb" "$2"
}
for p in libssq0 libssq-dev ssqd ssq-tools; do
	[ "$(control $p Package)" = "$p" ] && [ "$(control $p Version)" = "$version-1" ] ||
		bad "$p: Package '$(control $p Package)' Version '$(control $p Version)'"
done
grep -q 'libibverbs1' <<<"$(control libssq0 Depends)" && grep -q 'libc6' <<<"$(control libssq0 Depends)" &&
	ok "libssq0 Depends: $(control libssq0 Depends)" || bad "libssq0 Depends: $(control libssq0 Depends)"
[ "$(control libssq0 Section)" = libs ] && [ "$(control libssq-dev Section)" = libdevel ] ||
	bad "Section: libssq0 '$(control libssq0 Section)', libssq-dev '$(control libssq-dev Section)'"
grep -q "libssq0 (= $version-1)" <<<"$(control libssq-dev Depends)" &&
	grep -q 'libibverbs-dev' <<<"$(control libssq-dev Depends)" &&
	ok "libssq-dev Depends: $(control libssq-dev Depends)" ||
	bad "libssq-dev Depends: '$(control libssq-dev Depends)', want libssq0 (= $version-1), libibverbs-dev"
for p in ssqd ssq-tools; do
	grep -q 'libibverbs1' <<<"$(control $p Depends)" || bad "$p Depends: $(control $p Depends)"
	grep -q 'libssq' <<<"$(control $p Depends)" && bad "$p depends on libssq: it links libssq.a"
done
ctl=$work/ctl
dpkg-deb -e "$work/out/libssq0_${version}-1_$arch.deb" "$ctl"
major=${version%%.*}
grep -qx "libssq $major libssq0 (>= $version-1)" "$ctl/shlibs" && ok "libssq0 shlibs: $(cat "$ctl/shlibs")" ||
	bad "libssq0 shlibs: '$(cat "$ctl/shlibs" 2>/dev/null)'"
grep -qx 'activate-noawait ldconfig' "$ctl/triggers" 2>/dev/null && ok "libssq0 triggers ldconfig" ||
	bad "libssq0 has no ldconfig trigger"
[ ! -e "$ctl/postinst" ] && [ ! -e "$ctl/postrm" ] || bad "libssq0 has maintainer scripts: $(ls "$ctl")"
# Its symbols file lists what the library exports, each name@node once.
dpkg -x "$work/out/libssq0_${version}-1_$arch.deb" "$work/lib0"
so0=$(find "$work/lib0" -name "libssq.so.$major")
# (nm names the version node bare: dpkg writes it SSQ_0.1@SSQ_0.1.)
exp=$(nm -D --defined-only --with-symbol-versions "$so0" | awk '{ print $NF }' |
	sed -e 's/@@*/@/' -e 's/^\([^@]*\)$/\1@\1/' | sort)
syms=$(grep '^ ' "$ctl/symbols" 2>/dev/null | awk '{ print $1 }' | sort)
head -n2 "$ctl/symbols" 2>/dev/null | grep -q "^libssq.so.$major libssq0 #MINVER#" &&
	grep -qx '\* Build-Depends-Package: libssq-dev' "$ctl/symbols" &&
	[ -n "$exp" ] && [ "$exp" = "$syms" ] &&
	ok "libssq0 symbols: the $(wc -l <<<"$syms") names libssq.so.$major exports" ||
	bad "libssq0 symbols file does not list the exports: $(diff <(echo "$exp") <(echo "$syms") | head -n5)"

# Who holds what: each file in one package, the one Debian would put it in.
contents() { dpkg-deb -c "$work/out/${1}_${version}-1_$arch.deb" | awk '{ print $6 }' | sed 's|^\./|/|'; }
want_in() { # PACKAGE REGEX...: each regex matches a file of the package
	local p=$1 files r
	shift
	files=$(contents "$p")
	for r in "$@"; do grep -qE "$r" <<<"$files" || bad "$p holds nothing matching $r"; done
}
want_in libssq0 "/libssq\.so\.$major\$" '/libssq\.so\.[0-9]+\.[0-9]+\.[0-9]+$' \
	'^/usr/share/doc/libssq0/copyright$' '^/usr/share/doc/libssq0/changelog\.Debian\.gz$'
want_in libssq-dev '^/usr/include/ssq/ssq\.h$' '/libssq\.so$' '/libssq\.a$' '/pkgconfig/ssq\.pc$' \
	'/cmake/ssq/ssqConfig\.cmake$' '^/usr/share/man/man3/ssq_post_write\.3\.gz$' \
	'^/usr/share/man/man7/ssq\.7\.gz$'
want_in ssqd '^/usr/bin/ssqd$' '/systemd/system/ssqd\.service$' '/systemd/system/ssqd\.socket$' \
	'^/usr/share/man/man8/ssqd\.8\.gz$'
want_in ssq-tools '^/usr/bin/ssq_write_bw$' '^/usr/bin/ssq_demo$' '^/usr/share/man/man1/ssq_write_bw\.1\.gz$'
contents libssq0 | grep -E '/libssq\.so$|/include/|/man/|/bin/' && bad "libssq0 holds more than the library"
contents ssqd | grep -E '/lib[^/]*\.so|/include/|/man[137]/|/bin/ssq_' && bad "ssqd holds another package's files"
contents ssq-tools | grep -E '/bin/ssqd$|/lib/|/include/|/man[378]/' && bad "ssq-tools holds another package's files"
contents libssq-dev | grep -E '/libssq\.so\.|/bin/|/man[18]/' && bad "libssq-dev holds another package's files"
dups=$(for p in libssq0 libssq-dev ssqd ssq-tools; do contents $p | grep -v '/$'; done |
	grep -v '^/usr/share/doc/\|^/usr/share/lintian/' | sort | uniq -d)
[ -z "$dups" ] && ok "no file is in two packages" || bad "in two packages: $dups"

# apt would install the four on this system (their Depends resolve).
if command -v apt-get >/dev/null; then
	if out=$(apt-get install -s "${debs[@]}" 2>&1); then
		ok "apt-get install -s: $(grep -c '^Inst ' <<<"$out") packages would be installed"
	else
		bad "apt-get install -s the four:"
		tail -n 8 <<<"$out" | sed 's/^/     /'
	fi
fi

# lintian, as Debian checks a package: no error, no warning (the overrides
# in cmake/deb/lintian-overrides say why); the informational tags shown.
if command -v lintian >/dev/null; then
	lint=$(lintian -I "${debs[@]}" 2>&1 | grep -v 'running with root privileges' || true)
	if grep -qE '^[EW]: ' <<<"$lint"; then
		bad "lintian:"
		grep -E '^[EW]: ' <<<"$lint" | sed 's/^/     /'
	else
		ok "lintian: no error, no warning in the four ($(grep -c '^I: ' <<<"$lint" || true) informational)"
	fi
	grep -E '^I: ' <<<"$lint" | sed 's/^/     /' || true
else
	bad "lintian not installed: scripts/install-deps.sh installs it"
fi

root=$work/root
for deb in "${debs[@]}"; do dpkg -x "$deb" "$root"; done
for f in usr/bin/ssqd usr/bin/ssq_write_bw usr/bin/ssq_demo usr/include/ssq/ssq.h \
	usr/include/ssq/client.h usr/share/man/man8/ssqd.8.gz usr/share/man/man3/ssq_post_write.3.gz \
	usr/share/man/man1/ssq_write_bw.1.gz usr/share/man/man7/ssq.7.gz; do
	[ -e "$root/$f" ] || bad "$f not in the packages"
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
