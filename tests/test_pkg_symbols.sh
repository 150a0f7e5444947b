#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed libssq.so exports the API and nothing else: every defined
# dynamic symbol is ssq_* at version SSQ_0.1 (plus the version node itself),
# every call declared in <ssq/client.h> is among them, the SONAME is
# libssq.so.<major>; it needs no DPDK (ldd: no librte_*) and no libsystemd,
# and holds no emulated device (no emu symbol, defined or wanted).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

so=$libdir/libssq.so
[ -e "$so" ] || { bad "no $so"; pkg_done; }
major=${version%%.*}

defined=$(nm -D --defined-only --with-symbol-versions "$so" | awk '{ print $NF }')
n=$(echo "$defined" | wc -l)
others=$(echo "$defined" | grep -vE '^ssq_[A-Za-z0-9_]+@@SSQ_0\.1$' | grep -vx 'SSQ_0.1' || true)
if [ -z "$others" ]; then
	ok "nm -D --defined-only: $((n - 1)) symbols, all ssq_*@@SSQ_0.1, and the node SSQ_0.1"
else
	bad "libssq.so exports more than ssq_*@@SSQ_0.1:"
	echo "$others" | sed 's/^/     /'
fi
grep -qx 'SSQ_0.1' <<<"$defined" && ok "version node SSQ_0.1 present" ||
	bad "no version node SSQ_0.1"

# Every out-of-line call of <ssq/client.h> is exported.
missing=
calls=0
for f in $(grep -hoE '^[a-z][a-z0-9_ ]*[ *]ssq_[a-z0-9_]+\(' "$prefix/include/ssq/client.h" |
	grep -oE 'ssq_[a-z0-9_]+\($' | tr -d '(' | sort -u); do
	grep -q "^$f@@" <<<"$defined" || missing+=" $f"
	calls=$((calls + 1))
done
[ "$calls" -gt 10 ] || bad "found only $calls calls in <ssq/client.h>"
[ -z "$missing" ] && ok "each of the $calls calls of <ssq/client.h> is exported" ||
	bad "declared in <ssq/client.h> but not exported:$missing"

# Every exported function has a page (or a .so link) in man3: the contract
# is written down, internals included (ssq_ctl_init(3) says they are ABI).
# Names whose page is still to be written go in $elsewhere (none now); a
# name listed there that has its page is said, to be dropped.
elsewhere=" "
mandir3=$mandir/man3
nopage=
npaged=0
for f in $(sed 's/@.*//' <<<"$defined" | grep '^ssq_' | sort -u); do
	if [ -f "$mandir3/$f.3" ]; then
		npaged=$((npaged + 1))
		[[ $elsewhere == *" $f "* ]] && echo "note $f has its page now: drop it from \$elsewhere"
	elif [[ $elsewhere != *" $f "* ]]; then
		nopage+=" $f"
	fi
done
[ -z "$nopage" ] && ok "$npaged exported functions each have a man3 page" ||
	bad "exported without a man3 page:$nopage"

soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = "libssq.so.$major" ] && ok "SONAME $soname" ||
	bad "SONAME '$soname', want libssq.so.$major"

deps=$(ldd "$so")
grep -q 'librte_' <<<"$deps" && bad "ldd libssq.so shows DPDK: $(echo "$deps" | grep librte_)" ||
	ok "ldd libssq.so: no librte_*"
grep -q 'libsystemd' <<<"$deps" && bad "ldd libssq.so shows libsystemd" ||
	ok "ldd libssq.so: no libsystemd (ssqd alone links it)"
emu=$(nm -D "$so" | grep -iE 'emu' || true)
[ -z "$emu" ] && ok "nm -D libssq.so: no emulator symbol" ||
	{ bad "emulator symbols in libssq.so:"; echo "$emu"; }
emu=$(nm "$libdir/libssq.a" 2>/dev/null | grep -E ' [TDBR] (ssq_)?emu_' || true)
[ -z "$emu" ] && ok "libssq.a: no emulator code" || { bad "emulator code in libssq.a:"; echo "$emu"; }
pkg_done
