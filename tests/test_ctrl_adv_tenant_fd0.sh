#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ssqd --tenants closes no descriptor it did not open. Its tenant table
# starts zeroed (static), and ssqd_tenants_start "forgot" each of its 16
# slots by closing slot.fd, 0: ssqd's descriptor 0. Started with stdin
# closed (a supervisor may), descriptor 0 is the first ssqd opens, the
# lock file that claims its socket (util/socket_claim.c): closed, the lock
# went, and a second ssqd took the same socket from the running one.
# Here: ssqd A --tenants uid with stdin closed, and A with no --tenants
# (the loop ran before ssqd_tenants_start looked at --tenants); ssqd B on
# A's socket must be refused ("in use") while A serves.
# Before: B started and served A's path (A's lock was gone), both ways.
set -u
: "${SSQD:?SSQD (the ssqd binary) not set: run through ctest}"
sock=/tmp/ssq-tenfd0-$$.sock
log=/tmp/ssq-tenfd0-$$.log
a= b=
cleanup() {
	[ -n "$b" ] && kill "$b" 2>/dev/null && wait "$b" 2>/dev/null
	[ -n "$a" ] && kill "$a" 2>/dev/null && wait "$a" 2>/dev/null
	rm -f "$sock" "$sock.lock"
}
trap cleanup EXIT
one() {
	"$SSQD" --socket "$sock" "$@" 0<&- 2>"$log" &
	a=$!
	for _ in $(seq 300); do
		grep -q "serving $sock" "$log" && break
		sleep 0.1
	done
	grep -q "serving $sock" "$log" || { echo "FAIL: ssqd A did not start: $log"; cat "$log"; exit 1; }
	"$SSQD" --socket "$sock" 0</dev/null 2>"$log.b" &
	b=$!
	# B gives up at once when the socket is claimed; 30 s for a loaded machine.
	for _ in $(seq 300); do
		kill -0 "$b" 2>/dev/null || break
		grep -q "serving $sock" "$log.b" && break
		sleep 0.1
	done
	if grep -q "serving $sock" "$log.b" || kill -0 "$b" 2>/dev/null; then
		echo "FAIL: a second ssqd took $sock while ssqd A (pid $a, stdin closed, ${*:-no options}) served it:"
		cat "$log.b"
		exit 1
	fi
	wait "$b"
	rc=$?
	b=
	echo "second ssqd refused (exit $rc): $(tail -1 "$log.b")"
	kill -0 "$a" || { echo "FAIL: ssqd A is gone"; exit 1; }
	kill "$a"; wait "$a"; a=
}
one --tenants uid --allow-uid 65534
one
rm -f "$log" "$log.b"
echo "ctrl_adv_tenant_fd0: ok"
