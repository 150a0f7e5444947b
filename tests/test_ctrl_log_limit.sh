#!/usr/bin/env bash
# A client sending bad message after bad message cannot flood ssqd's log:
# each gets its error reply, but ssqd writes at most 10 lines a second about
# them and then one line saying how many it left out (before: one line each).
set -euo pipefail
ssqd=${SSQD:?}
work=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

"$ssqd" --device emu --hugepages=off --data-mib 4 --socket "$work/s" 2>"$work/log" &
pid=$!
for _ in $(seq 100); do
	[ -S "$work/s" ] && break
	sleep 0.1
done
python3 - "$work/s" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.settimeout(5)
for i in range(200):
    s.send(b"\xde\xad\xbe\xef garbage %d" % i)  # bad magic: -EBADMSG
    s.recv(4096)                              # its error reply
PY
# The summary line comes at ssqd's first look once the second is over: it
# looks at least every 250 ms, later on a loaded machine.
for _ in $(seq 100); do
	grep -q "more such lines left out" "$work/log" && break
	sleep 0.1
done
n=$(grep -c "client pid" "$work/log" || true)
fail=0
if [ "$n" -gt 30 ] || [ "$n" -lt 1 ]; then
	echo "FAIL: $n log lines for 200 bad messages (want 1..30)"
	fail=1
fi
if ! grep -q "more such lines left out" "$work/log"; then
	echo "FAIL: no line saying how many were left out"
	fail=1
fi
[ "$fail" -eq 0 ] && echo "ok   200 bad messages: $n lines and '$(grep -m1 "left out" "$work/log")'"
exit "$fail"
