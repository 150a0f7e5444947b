#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ssqd.service and ssqd.socket as installed under the systemd unit
# directory of the prefix: ExecStart names the installed ssqd,
# `systemd-analyze verify` passes on both (Documentation= pages found in
# the installed man pages), and socket activation works without systemd:
# ssqd started with a listening SOCK_SEQPACKET socket as fd 3 and
# LISTEN_FDS=1 LISTEN_PID=<its pid> - by systemd-socket-activate, and by a
# python3 helper that does what systemd does - serves that socket (a client
# connects through it), tells NOTIFY_SOCKET READY=1 and STATUS=, and
# STOPPING=1 at SIGTERM, exits 0 and leaves the socket file (systemd's) in
# place. A passed socket of the wrong kind, or two, is refused saying why;
# a LISTEN_PID that is not ssqd's is ignored and ssqd binds --socket as
# ever.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pkg_common.sh"

service=$(find "$prefix" -name ssqd.service)
socket=$(find "$prefix" -name ssqd.socket)
[ -f "$service" ] && [ -f "$socket" ] || { bad "ssqd.service / ssqd.socket not installed"; pkg_done; }
unitdir=$(dirname "$service")
[ "$(dirname "$socket")" = "$unitdir" ] || bad "ssqd.socket in $(dirname "$socket"), not $unitdir"
[[ $unitdir == "$prefix"/* ]] && ok "units installed in ${unitdir#"$prefix"/} under the prefix" ||
	bad "units in $unitdir, outside $prefix"
exec_line=$(grep '^ExecStart=' "$service")
[[ $exec_line == "ExecStart=$bindir/ssqd "* ]] && ok "$exec_line" ||
	bad "ssqd.service: '$exec_line' does not name $bindir/ssqd"
grep -q '^Type=notify$' "$service" && ok "ssqd.service: Type=notify" || bad "ssqd.service is not Type=notify"
listen=$(grep '^ListenSequentialPacket=' "$socket" || true)
[ -n "$listen" ] && ok "ssqd.socket: $listen" || bad "ssqd.socket has no ListenSequentialPacket="

# ---- systemd-analyze verify ----
if ! command -v systemd-analyze >/dev/null; then
	echo "note systemd-analyze not found (Debian: systemd): units not verified"
else
	# Can it verify at all here? A unit that cannot be wrong tells.
	printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' \
		>"$work/ssq-probe.service"
	if ! probe=$(systemd-analyze verify "$work/ssq-probe.service" 2>&1); then
		echo "note systemd-analyze verify cannot run here: on a unit with nothing to"
		echo "     object to it said: $(echo "$probe" | head -n3)"
		echo "     checked instead: the keys above, and ssqd's socket activation below"
	else
		set +e
		out=$(MANPATH=$mandir systemd-analyze verify "$socket" "$service" 2>&1)
		rc=$?
		set -e
		if [ $rc -eq 0 ] && ! grep -q . <<<"$out"; then
			ok "systemd-analyze verify ssqd.socket ssqd.service: clean"
		else
			bad "systemd-analyze verify: exit $rc:"
			echo "$out" | sed 's/^/     /'
		fi
	fi
fi

# ---- socket activation, no systemd ----
command -v python3 >/dev/null ||
	{ echo "SKIP: python3 missing (scripts/install-deps.sh): no socket-activation check"; pkg_done; }
cat >"$work/notify.py" <<'PY'
# NOTIFY_SOCKET as systemd has it: log each datagram, stop at STOPPING=1.
import socket, sys, time
path, log = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(0.5)
end = time.time() + 120
with open(log, "a") as f:
    while time.time() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        f.write(m.decode(errors="replace") + "\n")
        f.flush()
        if b"STOPPING=1" in m:
            break
PY
cat >"$work/activate.py" <<'PY'
# What systemd does for a socket unit: PATH KIND NFDS PID -- PROGRAM ARGS...
# Bind (and listen on, unless KIND is unlistened) NFDS unix sockets, put
# them at fds 3.., set LISTEN_FDS and LISTEN_PID (PID "self": this process,
# which becomes PROGRAM; "other": not it), exec PROGRAM.
import os, socket, sys
path, kind, nfds, pid = sys.argv[1:5]
argv = sys.argv[6:]
typ = socket.SOCK_STREAM if kind == "stream" else socket.SOCK_SEQPACKET
held = []
for i in range(int(nfds)):
    s = socket.socket(socket.AF_UNIX, typ)
    s.bind(path if i == 0 else "%s.%d" % (path, i))
    if kind != "unlistened":
        s.listen(64)
    held.append(os.dup2(s.fileno(), 100 + i))
    s.close()
for i, fd in enumerate(held):
    os.dup2(fd, 3 + i, inheritable=True)
    os.close(fd)
os.environ["LISTEN_FDS"] = nfds
os.environ["LISTEN_PID"] = str(os.getpid() if pid == "self" else 1)
os.execv(argv[0], argv)
PY

wait_for() { # TEST SECONDS
	local i
	for i in $(seq $(($2 * 10))); do
		eval "$1" && return 0
		sleep 0.1
	done
	return 1
}
ssqd_args=(--device emu --hugepages=off --data-mib 4)

# One run: LAUNCHER (sd: systemd-socket-activate, py: activate.py) starts
# ssqd on $work/<launcher>.sock; a client posts through it; SIGTERM.
activated() {
	local how=$1 sock=$work/$1.sock notify=$work/$1.notify log=$work/$1.notify.log
	local pid np rc out
	: >"$log"
	python3 "$work/notify.py" "$notify" "$log" &
	np=$!
	pkg_cleanup_hooks+=("kill $np 2>/dev/null")
	wait_for "[ -S '$notify' ]" 10 || { bad "$how: no NOTIFY_SOCKET listener"; return; }
	if [ "$how" = sd ]; then
		# It listens, and execs ssqd at the first connection.
		systemd-socket-activate --seqpacket -l "$sock" -E NOTIFY_SOCKET="$notify" \
			-E SSQ_SOCKET="$work/not-this.sock" "$bindir/ssqd" "${ssqd_args[@]}" \
			>"$work/$how.log" 2>&1 &
	else
		NOTIFY_SOCKET=$notify SSQ_SOCKET=$work/not-this.sock python3 "$work/activate.py" \
			"$sock" seqpacket 1 self -- "$bindir/ssqd" "${ssqd_args[@]}" \
			>"$work/$how.log" 2>&1 &
	fi
	pid=$!
	pkg_cleanup_hooks+=("kill $pid 2>/dev/null")
	# The socket file appears at bind(), before listen(): a connect in
	# between is refused, and systemd-socket-activate, never woken, would
	# not start ssqd. Wait for the launcher's word that it listens: its
	# "Listening on PATH as 3." (printed after listen), or ssqd's own
	# "serving PATH" (activate.py listens before it execs ssqd).
	if [ "$how" = sd ]; then
		ready="grep -q 'Listening on $sock' '$work/$how.log'"
	else
		ready="grep -q 'serving $sock' '$work/$how.log'"
	fi
	wait_for "$ready" 20 || { bad "$how: nothing listens on $sock"; cat "$work/$how.log"; return; }
	if out=$("$bindir/ssq_demo" -S "$sock" -P 2 -n 2000 2>&1) && grep -q "data verified" <<<"$out"; then
		ok "$how: ssq_demo's 2 senders posted through the passed socket, data verified"
	else
		bad "$how: ssq_demo through $sock:"
		echo "$out" | sed 's/^/     /'
		sed 's/^/     ssqd: /' "$work/$how.log"
	fi
	if wait_for "grep -q '^READY=1' '$log'" 20; then
		ok "$how: NOTIFY_SOCKET got $(grep -m1 '^STATUS=' "$log" || echo 'READY=1, no STATUS=')"
	else
		bad "$how: no READY=1 on NOTIFY_SOCKET; got: $(cat "$log")"
	fi
	grep -q "serving .* at $sock" "$log" || bad "$how: STATUS= does not name $sock"
	[ -e "$work/not-this.sock" ] && bad "$how: ssqd bound \$SSQ_SOCKET as well"
	kill -TERM "$pid"
	set +e
	wait "$pid"
	rc=$?
	set -e
	[ $rc -eq 0 ] && ok "$how: SIGTERM: exit 0" || { bad "$how: SIGTERM: exit $rc"; cat "$work/$how.log"; }
	wait_for "grep -q '^STOPPING=1' '$log'" 10 && ok "$how: NOTIFY_SOCKET got STOPPING=1" ||
		bad "$how: no STOPPING=1; got: $(cat "$log")"
	[ -S "$sock" ] && ok "$how: the passed socket's file left in place" ||
		bad "$how: ssqd removed the socket file it was passed"
	grep -q "serving $sock" "$work/$how.log" || bad "$how: ssqd's log does not say it serves $sock"
	kill "$np" 2>/dev/null || true
}
if command -v systemd-socket-activate >/dev/null; then
	activated sd
else
	echo "note systemd-socket-activate not found (Debian: systemd): the python3 helper only"
fi
activated py

# Refusals: what was passed is not one listening SOCK_SEQPACKET unix socket.
refused() { # KIND NFDS NEEDLE
	local rc
	set +e
	SSQ_SOCKET=$work/not-this.sock timeout 20 python3 "$work/activate.py" "$work/r-$1-$2.sock" \
		"$1" "$2" self -- "$bindir/ssqd" "${ssqd_args[@]}" >"$work/r.log" 2>&1
	rc=$?
	set -e
	if [ $rc -eq 1 ] && grep -qF -- "$3" "$work/r.log"; then
		ok "passed $2 $1 socket(s): exit 1, \"$(head -n1 "$work/r.log")\""
	else
		bad "passed $2 $1 socket(s): exit $rc (want 1 saying \"$3\"):"
		sed 's/^/     /' "$work/r.log"
	fi
}
refused stream 1 "is not a listening AF_UNIX SOCK_SEQPACKET socket"
refused unlistened 1 "is not a listening AF_UNIX SOCK_SEQPACKET socket"
refused seqpacket 2 "socket activation passed 2 sockets: want one"

# LISTEN_PID not ssqd's: not for it; ssqd binds --socket as when run by hand.
python3 "$work/activate.py" "$work/other.sock" seqpacket 1 other -- \
	"$bindir/ssqd" "${ssqd_args[@]}" --socket "$work/own.sock" >"$work/other.log" 2>&1 &
pid=$!
pkg_cleanup_hooks+=("kill $pid 2>/dev/null")
if wait_for "[ -S '$work/own.sock' ]" 20 && "$bindir/ssq_demo" -S "$work/own.sock" -P 1 -n 1000 \
	>/dev/null 2>&1; then
	ok "LISTEN_PID of another process: ignored, ssqd serves its own --socket"
else
	bad "LISTEN_PID of another process: ssqd did not serve --socket:"
	sed 's/^/     /' "$work/other.log"
fi
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[ -e "$work/own.sock" ] && bad "ssqd left its own socket file behind"
pkg_done
