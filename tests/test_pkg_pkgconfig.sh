#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ssq.pc is relocatable: installed with `cmake --install --prefix P`, then
# `pkg-config --cflags ssq` names P (prefix=${pcfiledir}/..), and still the
# new place after the install is moved. A consumer built with pkg-config
# alone (no edits to ssq.pc) links the installed libssq.so and runs: it
# builds a WQE, then posts an RDMA WRITE through the installed ssqd.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

pc() { PKG_CONFIG_PATH=$pcdir pkg-config "$@"; }

# The prefix line, as installed.
line=$(grep '^prefix=' "$pcdir/ssq.pc")
case $line in
'prefix=${pcfiledir}'*) ok "ssq.pc: $line" ;;
*) bad "ssq.pc is not relocatable: $line" ;;
esac

# pkg-config names P, and its paths are P's.
cflags=$(pc --cflags ssq)
echo "     pkg-config --cflags ssq: $cflags"
inc=$(echo "$cflags" | tr ' ' '\n' | sed -n 's/^-I//p' | head -n1)
if [[ $inc == "$prefix"/* ]] && [ "$(realpath "$inc")" = "$prefix/include" ]; then
	ok "pkg-config --cflags names the prefix: -I$inc = $prefix/include"
else
	bad "pkg-config --cflags gives -I$inc, not under $prefix"
fi
for v in prefix libdir includedir; do
	got=$(realpath -m "$(pc --variable=$v ssq)")
	case $v in
	prefix) want=$prefix ;;
	libdir) want=$libdir ;;
	includedir) want=$prefix/include ;;
	esac
	[ "$got" = "$want" ] && ok "pkg-config --variable=$v: $got" ||
		bad "pkg-config --variable=$v: $got, want $want"
done
[ "$(pc --modversion ssq)" = "$version" ] && ok "pkg-config --modversion ssq: $version" ||
	bad "pkg-config --modversion ssq: $(pc --modversion ssq), want $version"

# Moved elsewhere, the same ssq.pc follows.
mv "$prefix" "$work/moved"
inc=$(PKG_CONFIG_PATH=${pcdir/#$prefix/$work/moved} pkg-config --cflags ssq |
	tr ' ' '\n' | sed -n 's/^-I//p' | head -n1)
[ "$(realpath "$inc")" = "$work/moved/include" ] && ok "moved install: -I$inc" ||
	bad "moved install: pkg-config --cflags gives -I$inc"
mv "$work/moved" "$prefix"

# The consumer: pkg-config alone.
# shellcheck disable=SC2046
if "${CC:-cc}" -Wall -Wextra -Werror "${san[@]}" "$here/pkg_consumer.c" -o "$work/consumer" \
	$(pc --cflags --libs ssq) 2>"$work/cc.err"; then
	ok "consumer built: \$CC pkg_consumer.c \$(pkg-config --cflags --libs ssq)"
else
	bad "consumer did not build:"
	cat "$work/cc.err"
	pkg_done
fi
lib=$(LD_LIBRARY_PATH=$libdir ldd "$work/consumer" | awk '$1 ~ /^libssq\.so/ { print $3 }')
[ "$(realpath "$lib")" = "$(realpath "$libdir/libssq.so.${version%%.*}")" ] &&
	ok "consumer links the installed $lib" || bad "consumer links '$lib', not $libdir's libssq"
if LD_LIBRARY_PATH=$libdir "$work/consumer" | grep -q "RDMA_WRITE"; then
	ok "consumer builds and dumps an RDMA WRITE WQE"
else
	bad "consumer: no RDMA_WRITE WQE"
fi

# ... and posts through the installed ssqd.
"$bindir/ssqd" --device emu --hugepages=off --data-mib 4 --socket "$work/s" \
	>"$work/ssqd.log" 2>&1 &
ssqd_pid=$!
pkg_cleanup_hooks+=("kill $ssqd_pid 2>/dev/null; wait $ssqd_pid 2>/dev/null")
for _ in $(seq 100); do
	[ -S "$work/s" ] && break
	sleep 0.1
done
if out=$(LD_LIBRARY_PATH=$libdir "$work/consumer" "$work/s" 2>&1) &&
	[[ $out == *"write through $work/s on emu: ok"* ]]; then
	ok "consumer posted an RDMA WRITE through the installed ssqd, data checked"
else
	bad "consumer against the installed ssqd:"
	echo "$out"
	cat "$work/ssqd.log"
fi
pkg_done
