#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A tenant's ssqd gets only the descriptors ssqd means it to have: 0-2 and
# its socketpair end. ssqd started by a launcher that left a descriptor
# open without close-on-exec (a shell's `7</dev/null`, a supervisor's
# pipe) must not hand it on to every tenant it starts, where it would live
# as long as the tenant and reach whatever it named.
# Here: ssqd --tenants uid --allow-uid 65534 started with fd 7 open on a
# marker file; the tenant of uid 65534 starts with ssqd; no descriptor of
# the tenant may name the marker (its own fd 7 may be something it opened).
# Before: the tenant held the marker as its fd 7.
set -u
: "${SSQD:?SSQD (the ssqd binary) not set: run through ctest}"
sock=/tmp/ssq-tenfds-$$.sock
log=/tmp/ssq-tenfds-$$.log
marker=/tmp/ssq-tenfds-$$.marker
a=
cleanup() {
	[ -n "$a" ] && kill "$a" 2>/dev/null && wait "$a" 2>/dev/null
	rm -f "$sock" "$sock.lock" "$marker"
}
trap cleanup EXIT
: >"$marker"
"$SSQD" --socket "$sock" --tenants uid --allow-uid 65534 7<"$marker" 2>"$log" &
a=$!
tpid=
for _ in $(seq 300); do
	tpid=$(sed -n 's/.*tenant uid 65534: its ssqd is pid \([0-9]*\).*/\1/p' "$log" | head -1)
	[ -n "$tpid" ] && grep -q "serving $sock" "$log" && break
	sleep 0.1
done
[ -n "$tpid" ] || { echo "FAIL: no tenant for uid 65534 started:"; cat "$log"; exit 1; }
[ "$(readlink "/proc/$a/fd/7")" = "$marker" ] ||
	{ echo "FAIL: the launcher's fd 7 is not open in ssqd $a: the test proves nothing"; exit 1; }
fds=$(ls "/proc/$tpid/fd" | sort -n | tr '\n' ' ')
echo "ssqd $a; tenant ssqd $tpid holds: $fds"
for f in /proc/"$tpid"/fd/*; do
	if [ "$(readlink "$f")" = "$marker" ]; then
		echo "FAIL: tenant ssqd $tpid inherited the launcher's fd 7 as its ${f##*/} ($marker)"
		exit 1
	fi
done
kill -0 "$a" || { echo "FAIL: ssqd is gone"; cat "$log"; exit 1; }
rm -f "$log"
echo "ctrl_tenant_fds: ok"
