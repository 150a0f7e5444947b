#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two hosts launched as perftest launches them: the server is the bare
# command, the client names the server's host, and each finds its host's
# ssqd where clients look by default ($XDG_RUNTIME_DIR/ssqd.sock; each
# "host" here has its own XDG_RUNTIME_DIR and an ssqd started without
# --socket, B --listen, A --connect). Run: ib_write_bw, ib_read_lat,
# ib_atomic_lat and ib_write_bw -a --out_json_file (2..2^23, the JSON's
# results one a size). Before, a bare command ran on one host and the
# client was refused ("two hosts need --ssq_socket").
# Also: a client with no ssqd at its default socket says how to start one;
# a bare command whose default ssqd has no peer runs on one host as before.
. "$(dirname "$0")/bench_common.sh"
ssqd=${SSQD:-$build/ssqd}
command -v python3 >/dev/null || { echo "skip: python3 missing (scripts/install-deps.sh)"; exit 77; }
unset XDG_RUNTIME_DIR
mkdir -m 700 "$tmp/A" "$tmp/B" "$tmp/L" "$tmp/none"

# B: ssqd --listen, A: ssqd --connect, both at their default sockets, with
# a QP timeout of 4.096 us x 2^18 = 1.07 s (ssqd's default 14, 67 ms, is
# shorter than the emulated wire takes for a window of 4 MiB WRITEs on a
# busy 2-core machine: "transport retry counter exceeded" at -a's 4 MiB).
emu=("$ssqd" --device emu --hugepages=off --qp-timeout 18)
pair_b=(env "XDG_RUNTIME_DIR=$tmp/B" "${emu[@]}")
pair_a=(env "XDG_RUNTIME_DIR=$tmp/A" "${emu[@]}")
start_pair
[ -S "$tmp/A/ssqd.sock" ] && [ -S "$tmp/B/ssqd.sock" ] || bad "ssqd did not take the default sockets"

# perftest KIND ROWS TOOL FLAGS...: `TOOL FLAGS` on B (bare), `TOOL FLAGS
# ${cli[@]} 127.0.0.1` on A (the client writes the JSON); both exit 0, the
# server says it served as perftest's, the client's stdout parses
# (perftest_table).
cli=()
perftest() {
	local kind=$1 rows=$2 tool=$3 sp try spid src crc
	shift 3
	for try in 1 2 3; do
		sp=$(port)
		(cd "$tmp" && XDG_RUNTIME_DIR=$tmp/B exec timeout 300 "$bin/$tool" -p "$sp" \
			--timeout 120 "$@" >"$tmp/srv.out" 2>&1) &
		spid=$!
		pids+=($spid)
		server_ready "$spid"
		crc=0
		(cd "$tmp" && XDG_RUNTIME_DIR=$tmp/A exec timeout 300 "$bin/$tool" -p "$sp" "$@" \
			"${cli[@]}" 127.0.0.1) >"$tmp/cli.out" 2>&1 || crc=$?
		src=0
		wait "$spid" || src=$?
		grep -q 'TCP port .*: Address already in use' "$tmp/srv.out" || break
	done
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		echo "--- client"; tail -n 15 "$tmp/cli.out"; echo "--- server"; tail -n 15 "$tmp/srv.out"
		bad "$tool $*: client exit $crc, server exit $src"
		return 0
	fi
	grep -q "the ssqd at $tmp/B/ssqd.sock has a peer: serving its client" "$tmp/srv.out" ||
		bad "$tool $*: the bare command did not serve on B's default ssqd: $(head -n2 "$tmp/srv.out")"
	grep -q 'every check passed' "$tmp/srv.out" || bad "$tool $*: the server's checks did not pass"
	if parsed=$(perftest_table "$kind" "$rows" "$tmp/cli.out" 2>&1); then
		echo "ok   $tool $* / $tool $* 127.0.0.1: $parsed"
	else
		bad "$tool $*: the client's stdout is not perftest's: $(tail -n2 <<<"$parsed")"
		tail -n 12 "$tmp/cli.out"
	fi
}

perftest bw 1 ssq_write_bw -s 64 -n 2000
grep -q 'the data landed in the server' "$tmp/cli.out" || bad "write_bw: no server verdict on the client"
perftest lat 1 ssq_read_lat -n 300
perftest lat 1 ssq_atomic_lat -A FETCH_AND_ADD -n 300
grep -q 'the fetch-and-add counter is 300, 300 completed' "$tmp/cli.out" ||
	bad "atomic_lat: the server's counter: $(grep 'server:' "$tmp/cli.out")"
perftest lat 1 ssq_write_lat -n 300
# --out_json on both sides, as a lab's script gives both the same flags: the
# server takes it with a note (before: refused), the client writes the file.
cli=(--out_json_file="$tmp/a.json")
perftest bw 23 ssq_write_bw -a -n 20 --out_json
cli=()
grep -q -- "--out_json on the server: the client writes the results" "$tmp/srv.out" ||
	bad "--out_json on the server: no note: $(head -n3 "$tmp/srv.out")"
[ ! -e "$tmp/perftest_out.json" ] || bad "the server wrote perftest_out.json" 
python3 - "$tmp/a.json" <<'PY' || bad "two hosts -a --out_json_file: not perftest's results, 2..2^23"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["test_info"]["test"] == "RDMA_Write_BW_Test", d["test_info"]
assert d["test_info"]["Data_ex_method"] == "Ethernet", d["test_info"]
assert [r["MsgSize"] for r in d["results"]] == [2 ** k for k in range(1, 24)]
assert all(r["n_iterations"] == 20 and r["MsgRate"] > 0 for r in d["results"])
print("ok   -a JSON: 23 sizes, 2..8388608")
PY

# A client whose host has no ssqd at the default socket: how to start one.
rc=0
XDG_RUNTIME_DIR=$tmp/none timeout 60 "$bin/ssq_write_bw" -p "$(port)" -n 10 127.0.0.1 \
	>"$tmp/none.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "ssqd at $tmp/none/ssqd.sock" "$tmp/none.out" &&
	grep -q -- "ssqd --connect 127.0.0.1:PORT here" "$tmp/none.out" ||
	bad "client without a default ssqd: exit $rc: $(cat "$tmp/none.out")"

# A bare command whose default ssqd runs loopback: one host, its own ssqd.
XDG_RUNTIME_DIR=$tmp/L "$ssqd" --device emu --hugepages=off >"$tmp/l.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -S "$tmp/L/ssqd.sock" ] && break; sleep 0.05; done
rc=0
(cd "$tmp" && XDG_RUNTIME_DIR=$tmp/L exec timeout 120 "$bin/ssq_write_bw" -s 64 -n 200) \
	>"$tmp/l.out" 2>&1 || rc=$?
[ "$rc" = 0 ] && ! grep -q 'serving' "$tmp/l.out" && perftest_table bw 1 "$tmp/l.out" >/dev/null ||
	bad "bare command, loopback default ssqd: exit $rc: $(tail -n3 "$tmp/l.out")"
exit "$fail"
