#!/usr/bin/env bash
# ssqd's socket file appears only once the socket listens: a client that
# finds it (scripts wait with [ -S PATH ]) can connect at once. ssqd runs
# under strace, which holds its listen() back a second; meanwhile the path
# is polled and connected to the moment it exists. Bound at the path itself,
# the file was there during that second and the connect was refused
# (ECONNREFUSED). Also: the socket is mode 0660 and no PATH.new is left.
set -euo pipefail
ssqd=${SSQD:?}
command -v strace >/dev/null || { echo "skip: no strace"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
work=$(mktemp -d)
pid=
cleanup() {
	# ssqd under strace: its own pid is in its lock file (PATH.lock).
	local d
	d=$(cat "$work/s.lock" 2>/dev/null || true)
	[ -z "$d" ] || kill "$d" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# Can strace hold a system call back here (ptrace allowed)?
strace -f -qq -o /dev/null -e trace=getpid -e inject=getpid:delay_enter=1000 true 2>/dev/null ||
	{ echo "skip: strace cannot inject delays here"; exit 77; }

strace -f -qq -o /dev/null -e trace=listen -e inject=listen:delay_enter=1000000 \
	"$ssqd" --device emu --hugepages=off --data-mib 4 --socket "$work/s" >"$work/log" 2>&1 &
pid=$!
set +e
python3 - "$work/s" "$pid" <<'PY'
import errno, os, socket, sys, time
path, pid = sys.argv[1], int(sys.argv[2])
end = time.monotonic() + 60
while not os.path.exists(path):
    if time.monotonic() > end:
        print("FAIL: no socket at %s within 60 s" % path); sys.exit(1)
    try:
        os.kill(pid, 0)
    except OSError:
        print("FAIL: ssqd exited before its socket appeared"); sys.exit(1)
    time.sleep(0.001)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(path)
except OSError as e:
    print("FAIL: %s appeared before it listened: connect: %s" % (path, os.strerror(e.errno)))
    sys.exit(1)
print("ok   the socket file appeared listening: connect succeeded at once")
PY
rc=$?
set -e
fail=$rc
mode=$(stat -c %a "$work/s" 2>/dev/null || echo none)
if [ "$mode" = 660 ]; then
	echo "ok   mode 0660"
else
	echo "FAIL: socket mode $mode, want 660"
	fail=1
fi
if [ -e "$work/s.new" ]; then
	echo "FAIL: $work/s.new left behind"
	fail=1
fi
[ "$fail" -eq 0 ] || { echo "--- ssqd's log:"; cat "$work/log"; }
exit "$fail"
