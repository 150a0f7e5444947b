#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# -b (perftest's --bidirectional) across two hosts, on one machine: two ssqd
# on the emulated device (grants on), B --listen and A --connect; the
# tool's server on B and its client on A, both with -b. Both sides send:
# the server runs the client's -P / -q / --mode on B into a buffer the
# client granted it, while the client's senders write into the server's.
# Checked: both exit 0; the banner says "Bidirectional"; the row is
# perftest's -b row, the sum of both directions (#iterations the client's
# own, BW average above the server's own, which its verdict states); each
# side's data landed (write_bw, qp-per-process -q 2 too), each side's
# fetch-and-add counter is the other side's count (atomic_bw); read_bw
# runs; --out_json names the test RDMA_Write_Bidirectional_BW_Test;
# --report-both prints the local and remote rows apart, as perftest. -b on
# one side only is refused by both sides, -b on one host and in a latency
# tool refused by name. Before: -b was refused everywhere.
. "$(dirname "$0")/bench_common.sh"
ssqd=${SSQD:-$build/ssqd}
command -v python3 >/dev/null || { echo "skip: python3 missing (scripts/install-deps.sh)"; exit 77; }

# B (--listen) and A (--connect), each at a socket of its own.
emu=("$ssqd" --device emu --hugepages=off --queues 4 --data-mib 16)
pair_b=("${emu[@]}" --socket "$tmp/b.sock")
pair_a=("${emu[@]}" --socket "$tmp/a.sock")
start_pair
# pair's client (bench_common.sh) gets at most 300 s.
pair_timeout=300

# The -b row parsed as a lab parses perftest's, checked against the
# server's own BW average in its verdict: NAME SIZE ITERS VERB [POST_LIST].
bidir_ok() {
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		echo "--- client"; cat "$tmp/cli.out"; echo "--- server"; cat "$tmp/srv.out"
		bad "$1: client exit $crc, server exit $src"
		return 1
	fi
	grep -q 'every check passed' "$tmp/srv.out" || bad "$1: the server's checks"
	grep -q "^ *$4 Bidirectional ${5:-}BW Test" "$tmp/cli.out" ||
		bad "$1: banner: no '$4 Bidirectional ${5:-}BW Test'"
	if out=$(python3 - "$tmp/cli.out" "$2" "$3" <<'PY' 2>&1
import re, sys
out = open(sys.argv[1]).read().splitlines()
size, iters = sys.argv[2], sys.argv[3]
# The sum: the first header's row (--report-both's rows apart follow it).
h = min(i for i, l in enumerate(out)
        if re.match(r"^ #bytes\s+#iterations\s+BW peak\[MiB/sec\]\s+BW average\[MiB/sec\]\s+MsgRate\[Mpps\]", l))
f = out[h + 1].split()
assert len(f) == 5 and f[0] == size and f[1] == iters, ("row", out[h + 1])
peak, avg, rate = float(f[2]), float(f[3]), float(f[4])
# The server's own direction, as its verdict says it.
m = [re.search(r"; (\d+) back to the client, BW average ([0-9.]+) MiB/sec", l) for l in out]
m = [x for x in m if x]
assert len(m) == 1, "no verdict with the server's direction"
srv_msgs, srv_avg = int(m[0].group(1)), float(m[0].group(2))
assert srv_msgs == int(iters), ("the server's messages", srv_msgs, iters)
# The sum: both directions' averages, so above the server's own; the rate
# (Mpps) is the sum's too: average = rate x size.
assert avg > srv_avg > 0, ("BW average is not the sum", avg, srv_avg)
assert abs(avg * 2**20 - rate * 1e6 * int(size)) <= 0.02 * avg * 2**20 + 0.01 * 2**20, ("rate", avg, rate)
assert peak >= avg, ("peak", peak, avg)
print("row", " ".join(f), "= client + server (server's average %.2f)" % srv_avg)
PY
	); then
		echo "ok   $1: $out"
	else
		bad "$1: $out"
		cat "$tmp/cli.out"
	fi
}

pair ssq_write_bw "-b -s 256 -n 2000" -b -s 256 -P 2 -n 2000 --out_json_file="$tmp/w.json"
if bidir_ok "write_bw -b" 256 4000 RDMA_Write; then
	grep -q 'the data landed in the server' "$tmp/cli.out" || bad "write_bw -b: the server's check"
	grep -q -- '-b: the server.s data landed here' "$tmp/cli.out" || bad "write_bw -b: the client's check"
	python3 - "$tmp/w.json" <<'PY' || bad "write_bw -b: --out_json's test name"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["test_info"]["test"] == "RDMA_Write_Bidirectional_BW_Test", d["test_info"]["test"]
PY
fi

# --report-both: after the sum, perftest prints the local and the remote
# rows apart, each under " Local results: " / " Remote results: " and the
# column header (src/write_bw.c); the sum is theirs added. Before: the sum
# alone, with a note on stderr.
pair ssq_write_bw "-b --report-both -s 512 -n 1500" -b --report-both -s 512 -P 2 -n 1500
if bidir_ok "write_bw -b --report-both" 512 3000 RDMA_Write; then
	if out=$(python3 - "$tmp/cli.out" <<'PY' 2>&1
import re, sys
out = open(sys.argv[1]).read().splitlines()
dash = "-" * 87
hdr = re.compile(r"^ #bytes\s+#iterations\s+BW peak\[MiB/sec\]\s+BW average\[MiB/sec\]\s+MsgRate\[Mpps\]$")
h = [i for i, l in enumerate(out) if hdr.match(l)]
assert len(h) == 3, ("want 3 headers (sum, local, remote)", len(h))
def row(i):
    f = out[i + 1].split()
    assert len(f) == 5, ("row", out[i + 1])
    return int(f[0]), int(f[1]), float(f[2]), float(f[3]), float(f[4])
s, l, r = row(h[0]), row(h[1]), row(h[2])
# perftest's layout: the sum row, a line, "", " Local results: ", a line,
# the header, the row; the same for the remote; the table's closing line.
for at, title in ((h[1], " Local results: "), (h[2], " Remote results: ")):
    assert out[at - 4:at] == [dash, "", title, dash], ("block", out[at - 4:at + 2])
    assert out[at + 2] == dash, ("after", title, out[at + 2])
assert out[h[0] + 2] == dash
assert s[0] == l[0] == r[0] == 512, ("#bytes", s, l, r)
assert s[1] == l[1] == 3000, ("#iterations: the sum's are the local's", s, l)
m = [re.search(r"; (\d+) back to the client, BW average ([0-9.]+) MiB/sec", x) for x in out]
m = [x for x in m if x]
assert r[1] == int(m[0].group(1)) == 3000, ("remote #iterations", r, m[0].group(0))
assert abs(r[3] - float(m[0].group(2))) <= 0.011, ("remote BW average != the server's", r, m[0].group(0))
for k, what in ((2, "peak"), (3, "average"), (4, "rate")):
    tol = 2e-6 if k == 4 else 0.02
    assert abs(s[k] - (l[k] + r[k])) <= tol, ("sum != local + remote", what, s, l, r)
assert l[3] > 0 and r[3] > 0
print("sum", s[1:], "= local", l[1:], "+ remote", r[1:])
PY
	); then
		echo "ok   write_bw -b --report-both: $out"
	else
		bad "write_bw -b --report-both: $out"
		cat "$tmp/cli.out"
	fi
	! grep -q -- '--report-both: taken' "$tmp/cli.out" ||
		bad "write_bw -b --report-both: still the note that the sum is printed"
fi
"$bin/ssq_write_bw" -h | grep -A1 -- '--report-both' | grep -q 'after their sum' ||
	bad "ssq_write_bw -h: --report-both is not said to print the rows after their sum"

pair ssq_write_bw "-b -s 100 -n 1001 -l 4 -Q 16" -b -s 100 -P 2 -q 2 --mode qp-per-process \
	-n 1001 -l 4 -Q 16
bidir_ok "write_bw -b qp-per-process -q 2" 100 2002 RDMA_Write "Post List " &&
	{ grep -q -- '-b: the server.s data landed here' "$tmp/cli.out" || bad "qp-per-process -b: the client's check"; }

pair ssq_atomic_bw "-b -n 1500" -b -n 1500
if bidir_ok "atomic_bw -b" 8 1500 "Atomic FETCH_AND_ADD"; then
	grep -q 'the fetch-and-add counter is 1500, 1500 completed' "$tmp/srv.out" ||
		bad "atomic_bw -b: the server's counter"
	grep -q -- '-b: the counter here is 1500, the server.s 1500' "$tmp/cli.out" ||
		bad "atomic_bw -b: the client's counter"
fi

pair ssq_read_bw "-b -s 64 -n 1000" -b -s 64 -P 2 --mode proxy -n 1000
bidir_ok "read_bw -b proxy" 64 2000 RDMA_Read

# -b on the client only: both sides refuse, naming it.
pair ssq_write_bw "-s 64" -b -s 64 -n 100
[ "$crc" != 0 ] && [ "$src" != 0 ] || bad "-b on one side ran (client $crc, server $src)"
grep -q -- '-b on the client only' "$tmp/cli.out" && grep -q -- '-b on the client only' "$tmp/srv.out" ||
	{ cat "$tmp/cli.out" "$tmp/srv.out"; bad "-b on one side: not named on both sides"; }

# Refused by name: one host, a latency tool, send_bw.
refuse() { # needle tool flags...
	local needle=$1 rc=0
	shift
	(cd "$tmp" && exec timeout 60 "$bin/$@") >"$tmp/r.out" 2>&1 </dev/null || rc=$?
	[ "$rc" = 1 ] && grep -qF -- "$needle" "$tmp/r.out" ||
		bad "'$*': exit $rc, want 1 saying '$needle': $(head -n2 "$tmp/r.out")"
}
refuse "-b: bidirectional needs the far side" ssq_write_bw -b -n 10
refuse "-b: bidirectional is only available in the BW tools" ssq_write_lat -b -n 10
refuse "-b with ssq_send_bw" ssq_send_bw --ssq_socket="$tmp/a.sock" -b -n 10 127.0.0.1
exit $fail
