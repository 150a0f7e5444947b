# SPDX-License-Identifier: MIT
# Sourced by the perftest-style tools' tests that start daemons and servers
# of their own (test_bench_twohost*.sh, test_bench_peers.sh,
# test_bench_perftest_lab.sh). Sets: build, bin (the tools), tmp (removed
# at exit), pids (each killed and reaped at exit: add what you start),
# fail; bad prints a failure and makes the test fail; port prints a free
# TCP port on 127.0.0.1; start_pair starts two ssqd as two hosts;
# server_ready waits for a tool's server; pair runs a tool's server on B
# and its client on A; perftest_table parses a tool's output as a lab's
# perftest parser does.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
bin=$build/bench/perftest
export SSQ_EMU_MODE=full
unset SSQ_SOCKET
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# A TCP port on 127.0.0.1 nobody answers on just now: a random one, since
# several tests run at once, below the kernel's ephemeral range, where no
# outgoing connection takes it meanwhile (a clash shows as a failed bind,
# retried by the caller).
eph_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port() {
	local p
	while :; do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % (eph_lo > 11024 ? eph_lo - 10000 : 1000)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# Two ssqd as two hosts, paired over the emulated wire: B, the command in
# the array pair_b, with --listen PORT, and A, pair_a's, with --connect
# 127.0.0.1:PORT (each array an ssqd command line, env VAR=... in front
# where a side needs its own environment), their stderr in $tmp/b.log and
# $tmp/a.log, their pids in bpid and apid (and pids). Returns once B's
# queues are ready and both serve clients (A may pair first); a try that
# does not pair in 20 s (its port taken meanwhile, say) is stopped and made
# again on a fresh port; after 5 the logs are printed and the test fails.
start_pair() {
	local i lp
	for i in 1 2 3 4 5; do
		lp=$(port)
		"${pair_b[@]}" --listen "$lp" >"$tmp/b.log" 2>&1 &
		bpid=$!
		pids+=($bpid)
		"${pair_a[@]}" --connect "127.0.0.1:$lp" >"$tmp/a.log" 2>&1 &
		apid=$!
		pids+=($apid)
		for _ in $(seq 400); do
			grep -q 'queue(s) ready' "$tmp/b.log" 2>/dev/null &&
				grep -q 'serving' "$tmp/a.log" && grep -q 'serving' "$tmp/b.log" &&
				return 0
			kill -0 "$bpid" 2>/dev/null || break
			sleep 0.05
		done
		kill "$apid" "$bpid" 2>/dev/null || true
		wait "$apid" "$bpid" 2>/dev/null || true
	done
	cat "$tmp/b.log" "$tmp/a.log"
	echo "FAIL: the two ssqd never paired"
	exit 1
}

# Wait (up to 20 s) until the tool's server started as PID says, in
# $tmp/srv.out, that it waits for a client, or has exited: its line before
# the client dials (the client retries anyway).
server_ready() {
	for _ in $(seq 400); do
		grep -q 'waiting for a client' "$tmp/srv.out" && return 0
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
}

# pair TOOL "SERVER FLAGS" CLIENT FLAGS...: after start_pair (B's socket at
# $tmp/b.sock, A's at $tmp/a.sock), TOOL as the server with SERVER FLAGS on
# B and as the client with CLIENT FLAGS on A, server name 127.0.0.1, over a
# fresh TCP port (made again, up to 3 tries, when the server finds it
# taken). The client runs in $tmp, under timeout(1) for pair_timeout
# seconds where that is set (no limit where it is not). Sets src and crc,
# the two exit codes, spid (and pids); the outputs in $tmp/srv.out, cli.out.
pair() {
	local tool=$1 sflags=$2 sp try limit=()
	shift 2
	[ -z "${pair_timeout:-}" ] || limit=(timeout "$pair_timeout")
	for try in 1 2 3; do
		sp=$(port)
		# shellcheck disable=SC2086
		"$bin/$tool" --ssq_socket="$tmp/b.sock" --server -p "$sp" --timeout 60 $sflags \
			>"$tmp/srv.out" 2>&1 &
		spid=$!
		pids+=($spid)
		server_ready "$spid"
		crc=0
		(cd "$tmp" && exec "${limit[@]}" "$bin/$tool" --ssq_socket="$tmp/a.sock" -p "$sp" "$@" \
			127.0.0.1) >"$tmp/cli.out" 2>&1 || crc=$?
		src=0
		wait "$spid" || src=$?
		grep -q 'TCP port .*: Address already in use' "$tmp/srv.out" || return 0
	done
}

# perftest_table KIND ROWS FILE: FILE, a tool's standard output, parsed as
# a lab's parser reads perftest's: KIND bw (MiB/sec), bw:Gb
# (--report_gbits), lat (usec), lat:cycles (-C): the last table header's
# rows up to the closing line, ROWS of them, each all numbers, #bytes and
# #iterations > 0, MsgRate or t_avg > 0 (BW's 2 decimals show 0.00 for 2
# bytes under load, MsgRate has 6); value (--output): ROWS numbers > 0, one
# a line. Prints the rows; exits non-zero, saying why, where FILE is not
# perftest's. Needs python3.
perftest_table() {
	python3 - "$@" <<'PY'
import re, sys
kind, want = sys.argv[1], int(sys.argv[2])
out = open(sys.argv[3]).read().splitlines()
num = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
if kind == "value":
    vals = [l for l in out if l.strip()]
    assert len(vals) == want and all(num.match(v) for v in vals), out
    assert all(float(v) > 0 for v in vals), vals
    print("values", " ".join(vals))
    sys.exit(0)
kind, _, unit = kind.partition(":")
head = {"bw": r"^ #bytes\s+#iterations\s+BW peak\[%s/sec\]\s+BW average\[%s/sec\]\s+MsgRate\[Mpps\]",
        "lat": r"^ #bytes #iterations\s+t_min\[%s\]\s+t_max"}[kind]
unit = re.escape(unit or {"bw": "MiB", "lat": "usec"}[kind])
head = head.replace("%s", unit)
cols = {"bw": 5, "lat": 9}[kind]
h = max(i for i, l in enumerate(out) if re.match(head, l))
rows = []
for l in out[h + 1:]:
    if l.startswith("---"):
        break
    f = l.split()
    assert len(f) == cols and all(num.match(x) for x in f), ("row", l)
    rows.append(f)
assert len(rows) == want, (len(rows), want, out)
assert all(int(r[0]) > 0 and int(r[1]) > 0 for r in rows), rows
assert all(float(r[4 if kind == "bw" else 3]) > 0 for r in rows), rows
print("rows", "; ".join(" ".join(r) for r in rows))
PY
}
