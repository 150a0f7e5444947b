#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A lab's perftest command lines, run unchanged but for the binary's name
# (ib_X -> ssq_X), their standard output parsed as perftest's by a parser
# written for perftest (the table after its header line; --output's one
# number a size). Before, -F, -c RC, --cq-mod, -N, -C, -H, -U, -o, -A, -m
# and --output were "unknown flag" (exit 1), -d with --ssq_socket was
# ignored (a NIC figure from an emulated ssqd), and ssq_send_bw's defaults
# failed against a default ssqd (64 KiB messages, 4 KiB receive buffers).
# Flags ssq cannot honour (-b, -R, -z, -c UD) are refused by name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_common.sh"
export SSQD=${SSQD:-$build/ssqd}
command -v python3 >/dev/null || { echo "skip: python3 missing (scripts/install-deps.sh)"; exit 77; }

# lab KIND ROWS COMMAND...: runs, exit 0, stdout parses (perftest_table).
lab() {
	local kind=$1 rows=$2 rc
	shift 2
	set +e
	timeout 240 "$bin/$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		bad "'$*': exit $rc: $(head -n3 "$tmp/err")"
	elif ! parsed=$(perftest_table "$kind" "$rows" "$tmp/out" 2>&1); then
		bad "'$*': stdout is not perftest's: $(tail -n2 <<<"$parsed")"
		sed 's/^/     /' "$tmp/out" | tail -n 12
	else
		echo "ok   $*: $(cut -c1-150 <<<"$parsed")"
	fi
}
# refuse NEEDLE COMMAND...: exit 1 saying NEEDLE.
refuse() {
	local needle=$1 rc
	shift
	set +e
	timeout 60 "$bin/$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	set -e
	[ $rc -eq 1 ] && grep -qF -- "$needle" "$tmp/err" &&
		echo "ok   $*: refused: $(grep -m1 -F -- "$needle" "$tmp/err" | cut -c1-150)" ||
		bad "'$*': exit $rc, want 1 saying '$needle': $(head -n2 "$tmp/err")"
}

# perftest's README and common lab scripts (run on the emulated device).
lab bw:Gb 1 ssq_write_bw -F --report_gbits -n 500
lab bw 1 ssq_write_bw -F -c RC -q 2 -s 65536 -n 500
lab bw 1 ssq_write_bw -F --cq-mod=10 -N -n 500
lab bw 1 ssq_write_bw -F -m 1024 -n 300
lab bw 1 ssq_read_bw -F -o 16 -n 500
lab bw 1 ssq_read_bw -F --report-both -n 300
lab bw 1 ssq_send_bw -F -c RC -n 300
lab bw 1 ssq_atomic_bw -F -A CMP_AND_SWAP -n 500
lab bw 1 ssq_atomic_bw -F -A FETCH_AND_ADD -n 500
lab lat:cycles 1 ssq_write_lat -F -C -n 300
lab lat 1 ssq_write_lat -F -H -n 100
lab lat 1 ssq_send_lat -F -U -n 100
# ib_read_lat and ib_atomic_lat (before: no ssq_read_lat, ssq_atomic_lat).
lab lat 1 ssq_read_lat -F -n 300
lab lat 1 ssq_read_lat -F -s 4096 -n 200
lab lat 1 ssq_atomic_lat -F -n 300
lab lat 1 ssq_atomic_lat -F -A CMP_AND_SWAP -n 300
grep -q '^ 8 ' "$tmp/out" || bad "ssq_atomic_lat: not 8 bytes: $(tail -n2 "$tmp/out")"
lab value 1 ssq_read_lat --output=latency -n 100
lab lat 1 ssq_read_lat -n 200 --out_json --out_json_file="$tmp/rl.json"
python3 - "$tmp/rl.json" <<'PY' || bad "ssq_read_lat --out_json_file: not perftest's JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["test_info"]["test"] == "RDMA_Read_Latency_Test", d["test_info"]
r = d["results"]
for k in ("MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg",
          "t_stdev", "percentile_99", "percentile_99.9"):
    assert k in r, k
assert r["MsgSize"] == 2 and r["n_iterations"] == 200 and r["t_avg"] > 0, r
PY
lab lat 1 ssq_atomic_lat -A FETCH_AND_ADD -n 100 --out_json_file="$tmp/al.json"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["test_info"]["test"]; assert t == "Atomic_FETCH_AND_ADD_Latency_Test", t' "$tmp/al.json" ||
	bad "ssq_atomic_lat --out_json_file: not perftest's test name"
lab value 1 ssq_write_bw -F --output=bandwidth -n 300
lab value 1 ssq_read_bw --output=message_rate -n 300
lab value 1 ssq_write_lat -F --output=latency -n 200
lab value 23 ssq_write_bw --output=bandwidth -a -n 50
grep -q 'BW peak.*' "$tmp/out" && bad "--output=bandwidth: the table is on stdout too"
# -s up to perftest's MAX_SIZE, 8 MiB, and -a 2..2^23 (before: -s at most
# 1 MiB, -a 20 rows), -a's JSON a list of perftest's results, one a size.
lab bw 1 ssq_write_bw -s 8388608 -n 10
lab lat 1 ssq_read_lat -s 8388608 -n 10
lab bw 23 ssq_write_bw -a -n 20 --out_json --out_json_file="$tmp/a.json"
lab lat 23 ssq_read_lat -a -n 20 --out_json_file="$tmp/al.json"
python3 - "$tmp/a.json" "$tmp/al.json" <<'PY' || bad "-a --out_json_file: not a list of perftest's results, 2..2^23"
import json, sys
for path, keys in ((sys.argv[1], ("BW_peak", "BW_average", "MsgRate")),
                   (sys.argv[2], ("t_min", "t_typical", "t_avg", "percentile_99.9"))):
    d = json.load(open(path))
    rs = d["results"]
    assert [r["MsgSize"] for r in rs] == [2 ** k for k in range(1, 24)], rs
    assert all(r["n_iterations"] == 20 and all(r[k] >= 0 for k in keys) for r in rs), rs
    print("ok  ", path, d["test_info"]["test"], len(rs), "sizes")
PY
refuse "-s '2097152': want 1..1048576" ssq_send_bw -s 2097152 -n 10
# -N: BW peak is printed 0, as perftest's; -C: cycles in the header.
lab bw 1 ssq_write_bw -N -n 300
awk '/^ 65536/ { exit !($3 == "0.00") }' "$tmp/out" || bad "-N: BW peak not 0.00: $(grep '^ 65536' "$tmp/out")"

refuse "-b: bidirectional" ssq_write_bw -b -n 10
refuse "-R: ssqd links QPs" ssq_write_bw -R -n 10
refuse "-z: ssqd links QPs" ssq_write_bw -z -n 10
refuse "-c UD: ssqd's queues are RC" ssq_send_bw -c UD -n 10
# -u: the QP timeout, given to the ssqd the tool starts as --qp-timeout
# (before: refused, "ssqd has no option for it yet"); the ssqd's command
# line recorded by a wrapper named by $SSQD.
printf '#!/bin/sh\necho "$*" >"%s"\nexec "%s" "$@"\n' "$tmp/ssqd.args" "$SSQD" >"$tmp/ssqd-rec"
chmod +x "$tmp/ssqd-rec"
SSQD=$tmp/ssqd-rec lab bw 1 ssq_write_bw -u 20 -n 300
grep -q -- "--qp-timeout 20" "$tmp/ssqd.args" || bad "-u 20: the ssqd started without --qp-timeout 20: $(cat "$tmp/ssqd.args")"
SSQD=$tmp/ssqd-rec lab lat 1 ssq_read_lat --qp-timeout=8 -n 100
grep -q -- "--qp-timeout 8" "$tmp/ssqd.args" || bad "--qp-timeout=8: not given to ssqd: $(cat "$tmp/ssqd.args")"
refuse "-u '32': want 0..31" ssq_write_bw -u 32 -n 10
refuse "-C: latency tools only" ssq_write_bw -C -n 10
refuse "-o: outstanding reads apply to READ" ssq_write_bw -o 4 -n 10
refuse "--output=latency: a bandwidth tool" ssq_write_bw --output=latency -n 10
refuse "-A FOO: want CMP_AND_SWAP" ssq_atomic_bw -A FOO -n 10
refuse "-A: the atomic type is ssq_atomic_bw's and ssq_atomic_lat's" ssq_read_lat -A CMP_AND_SWAP -n 10

# Against a default ssqd (what a lab runs): -d is checked, send_bw's
# defaults meet its 4 KiB receive buffers.
"$SSQD" --device emu --hugepages=off --socket "$tmp/s" 2>"$tmp/ssqd.log" &
pids+=($!)
for _ in $(seq 300); do
	[ -S "$tmp/s" ] && "$SSQD" --status --socket "$tmp/s" >/dev/null 2>&1 && break
	sleep 0.1
done
refuse "-d mlx5_0: the ssqd at $tmp/s runs on emu" ssq_write_bw --ssq_socket="$tmp/s" -d mlx5_0 -n 10
lab bw 1 ssq_write_bw --ssq_socket="$tmp/s" -d emu -F -n 300
lab bw 1 ssq_send_bw --ssq_socket="$tmp/s" -n 500
grep -q "sending 4096 bytes" "$tmp/err" && grep -q '^ 4096 ' "$tmp/out" ||
	bad "ssq_send_bw defaults against a default ssqd: not 4096-byte SENDs: $(cat "$tmp/err")"
# A default ssqd (64 MiB of data arena) cannot hold 8 senders' 8 MiB: said
# before the table, with what to give it (before: a sender failed mid-run).
refuse "-s 8388608 x 8 senders need 64 MiB of the data arena of the ssqd at $tmp/s" ssq_write_bw --ssq_socket="$tmp/s" -P 8 -s 8388608 -n 5
grep -q -- "--data-mib" "$tmp/err" || bad "arena too small: no --data-mib advice: $(cat "$tmp/err")"
grep -q "^ #bytes" "$tmp/out" && bad "arena too small: refused after the table's header"
lab bw 1 ssq_write_bw --ssq_socket="$tmp/s" -s 8388608 -n 10
refuse "-u 20: the ssqd at $tmp/s set up its QPs already: start that ssqd with --qp-timeout 20" ssq_write_bw --ssq_socket="$tmp/s" -u 20 -n 10
refuse "-m 1024: the MTU of the ssqd at $tmp/s cannot be seen" ssq_write_bw --ssq_socket="$tmp/s" -m 1024 -n 10
exit "$fail"
