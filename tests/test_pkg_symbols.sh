#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed libssq.so exports the API and nothing else: the defined
# dynamic symbols are exactly the names src/libssq.map lists one by one
# (no wildcard), each at version SSQ_0.1 (plus the version node itself);
# each is declared in the installed headers and has its man3 page, and
# every out-of-line call the installed headers declare is exported (so an
# internal is neither exported nor declared where applications look); the
# SONAME is libssq.so.<major>; it needs no DPDK (ldd: no librte_*) and no
# libsystemd, and holds no emulated device (no emu symbol, defined or wanted).
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

# The map names the API one by one, as liburing.map does: a wildcard
# (ssq_*) would export every internal that happens to be called ssq_.
map=$src/src/libssq.map
mapnames=$(sed -e 's|/\*.*\*/||' -e '/\/\*/,/\*\//d' "$map" |
	sed -n '/global:/,/local:/p' | grep -oE '^[[:space:]]*[A-Za-z0-9_*?]+;' | tr -d ' \t;' | sort -u)
grep -q '[*?]' <<<"$mapnames" && bad "libssq.map's global: has a wildcard: $(grep '[*?]' <<<"$mapnames" | tr '\n' ' ')"
[ "$(wc -l <<<"$mapnames")" -gt 30 ] || bad "found only $(wc -l <<<"$mapnames") names in $map"
exported=$(grep -vx 'SSQ_0.1' <<<"$defined" | sed 's/@.*//' | sort -u)
extra=$(comm -23 <(echo "$exported") <(echo "$mapnames"))
lacking=$(comm -13 <(echo "$exported") <(echo "$mapnames"))
[ -z "$extra" ] && ok "every export is one libssq.map names" ||
	bad "exported but not named in libssq.map (internals?):" $extra
[ -z "$lacking" ] && ok "every name in libssq.map is exported ($(wc -l <<<"$mapnames"))" ||
	bad "named in libssq.map but not exported:" $lacking

# What the installed headers declare out of line (a line that starts with
# a type and ends the name with '(': not SSQ_INLINE) is what is exported.
# ssq_fault_hook is no call of libssq: <ssq/queue_pvt.h> declares it only
# under SSQ_FAULT_HOOKS, for the test program that defines it.
declared=$(cat "$prefix"/include/ssq/*.h | grep -vE '^(SSQ_INLINE|static|#|[[:space:]])' |
	grep -oE '^[a-z][a-z0-9_ ]*[ *]ssq_[a-z0-9_]+\(' | grep -oE 'ssq_[a-z0-9_]+\($' | tr -d '(' |
	grep -vx ssq_fault_hook | sort -u)
[ "$(wc -l <<<"$declared")" -gt 30 ] || bad "found only $(wc -l <<<"$declared") declarations in the headers"
undeclared=$(comm -23 <(echo "$exported") <(echo "$declared"))
unexported=$(comm -13 <(echo "$exported") <(echo "$declared"))
[ -z "$undeclared" ] && ok "every export is declared in the installed headers" ||
	bad "exported but declared in no installed header (internals):" $undeclared
[ -z "$unexported" ] && ok "every out-of-line call of the installed headers ($(wc -l <<<"$declared")) is exported" ||
	bad "declared in the installed headers but not exported:" $unexported

# Every exported function has a page (or a .so link) in man3: the contract
# is written down (ssq__wake_waiters(3) says why that one is ABI).
mandir3=$mandir/man3
nopage=
npaged=0
for f in $exported; do
	if [ -f "$mandir3/$f.3" ]; then
		npaged=$((npaged + 1))
	else
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
