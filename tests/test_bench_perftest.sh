#!/usr/bin/env bash
# The perftest-style tools (bench/perftest): ssq_write_bw in every --mode
# with 2 sender processes on the emulated device in sink mode prints the
# perftest table and writes --json with a message rate above 0;
# BW peak is never below the average; ssq_write_lat (full mode: it polls the
# destination's last byte) prints the latency table and refuses sink mode;
# ssq_read_bw and ssq_atomic_bw run; in full mode the data arrives in every
# mode (inline too), also with -q 2 (two queues round-robin; qp-per-process
# P x 2); --wire runs write_bw/write_lat/read_bw/atomic_bw over the
# emulated wire (the data lands in the other ssqd's arena);
# ssq_send_bw SENDs into ssqd's receive pool (full mode: the pool's log
# holds every payload, checked) in every mode, -q 2 and --wire; ssq_send_lat
# times each SEND until the log shows it (spinning, or with -e asleep in
# ssq_recv_wait), refuses sink mode and -s 1 with -P 2; write_bw -e
# (senders asleep in ssq_wait for completions) moves the data in lockfree
# and qp-per-process, says "events": true, and is refused in spinlock and
# by write_lat, naming -e; an ssqd without a pool is refused by name; bad flags fail with
# usage text naming the flag; perftest's conventions: -V names the version
# and revision, --out_json_file writes perftest's keys (and version,
# revision, host, time, cpus, as --json does), BW is in MiB = 2^20 bytes,
# -S is the service level (0..15; ssqd's QPs: 0), -x / -i go to the ssqd
# the tool starts, perftest's banner with each queue's QPN, and
# --run_infinitely prints a row every -D seconds until SIGINT, then exits
# 0; a tool finds the ssqd next to it (an install) with $SSQD unset;
# scripts/bench.sh --quick writes one record per run of the matrix, of
# the wire table and of the processes x peers table, pinned with --cpus
# (a bad --cpus is named and runs nothing).
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}
export SSQD=${SSQD:-$build/ssqd}
export SSQ_EMU_MODE=sink
unset SSQ_SOCKET
bin=$build/bench/perftest
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# A bandwidth table's data row: #bytes #iterations peak average MsgRate.
check_bw() { # name file json size iterations
	local row rate
	row=$(grep -A1 '#bytes' "$2" | tail -n1)
	read -r b it pk av rate <<<"$row" || true
	if [ "$b" != "$4" ] || [ "$it" != "$5" ]; then
		bad "$1: row '$row', want $4 bytes, $5 iterations"
	fi
	awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || bad "$1: MsgRate '$rate'"
	# BW > 0 from the record (6 decimals: a slow wire run of 8-byte
	# atomics under load shows 0.00 MiB/s in the table's 2).
	awk '/"bw_avg_mib_s"/ { p = $0; sub(/.*"bw_peak_mib_s": /, "", p); sub(/,.*/, "", p)
		a = $0; sub(/.*"bw_avg_mib_s": /, "", a); sub(/,.*/, "", a); if (p + 0 > 0 && a + 0 > 0) ok = 1 }
		END { exit !ok }' "$3" || bad "$1: BW not > 0 in $3"
	awk -v r="$pk" -v a="$av" 'BEGIN { exit !(r >= a) }' || bad "$1: BW peak $pk < average $av"
	grep -q '"msg_rate_mpps": [0-9]' "$3" || bad "$1: no msg_rate_mpps in $3"
	awk '/"msg_rate_mpps"/ { sub(/.*"msg_rate_mpps": /, ""); sub(/,.*/, ""); if ($0 + 0 > 0) ok = 1 }
		END { exit !ok }' "$3" || bad "$1: msg_rate_mpps not > 0 in $3"
	for k in mode procs size ns_per_wqe device; do
		grep -q "\"$k\": " "$3" || bad "$1: no $k in $3"
	done
}

head -n1 <("$bin/ssq_write_bw" -h) | grep -q Usage || bad "-h prints no usage"
for m in lockfree spinlock qp-per-process proxy; do
	out=$tmp/$m.out
	if "$bin/ssq_write_bw" --mode "$m" -P 2 -n 3000 -s 64 --json "$tmp/$m.json" >"$out" 2>&1; then
		cat "$out"
		head -n1 "$out" | grep -q 'running on the emulated mlx5 device' ||
			bad "$m: first line does not name the device"
		check_bw "$m" "$out" "$tmp/$m.json" 64 6000
		grep -q "\"mode\": \"$m\", \"procs\": 2" "$tmp/$m.json" || bad "$m: JSON mode/procs"
	else
		cat "$out"
		bad "ssq_write_bw --mode $m failed"
	fi
done

# Full mode moves the data: the tool checks the destination after the run
# (every sender's source is 0x5a), inline through the proxy included; the
# second run round-robins over 2 queues (-q 2: qp-per-process 2 x 2), with
# an odd count, a post list and moderation, so each queue's last message
# must be signaled for the run to end.
for m in lockfree spinlock qp-per-process proxy; do
	SSQ_EMU_MODE=full "$bin/ssq_write_bw" --mode "$m" -P 2 -n 500 -s 256 -I 128 >"$tmp/full.out" 2>&1 ||
		{ cat "$tmp/full.out"; bad "full mode, --mode $m: failed"; }
	if SSQ_EMU_MODE=full "$bin/ssq_write_bw" --mode "$m" -P 2 -q 2 -n 501 -l 4 -Q 16 -s 100 -I 128 \
		--json "$tmp/q2.json" >"$tmp/full.out" 2>&1; then
		want=$([ "$m" = qp-per-process ] && echo 4 || echo 2)
		grep -q "mode $m[^,]*, $want QPs" "$tmp/full.out" || bad "-q 2 --mode $m: not $want QPs: $(head -n2 "$tmp/full.out")"
		grep -q '"qps": 2' "$tmp/q2.json" || bad "-q 2 --mode $m: no \"qps\": 2 in JSON"
		check_bw "-q 2 $m" "$tmp/full.out" "$tmp/q2.json" 100 1002
	else
		cat "$tmp/full.out"; bad "full mode, inline, -q 2, --mode $m: failed"
	fi
done

# Post lists, CQ moderation, inline, --report_gbits, -D, and two sizes of -a
# are not all worth a run each: one run with most of them.
if "$bin/ssq_write_bw" -P 2 -n 2000 -s 32 -l 4 -Q 16 -I 64 --report_gbits \
	--json "$tmp/opts.json" >"$tmp/opts.out" 2>&1; then
	grep -q 'BW peak\[Gb/sec\]' "$tmp/opts.out" || bad "--report_gbits: no Gb/sec header"
	check_bw opts "$tmp/opts.out" "$tmp/opts.json" 32 4000
else
	cat "$tmp/opts.out"; bad "ssq_write_bw -l 4 -Q 16 -I 64 failed"
fi
if "$bin/ssq_write_bw" -D 1 -s 64 >"$tmp/dur.out" 2>&1; then
	grep -A1 '#bytes' "$tmp/dur.out" | tail -n1 | grep -q '^ 64 ' || bad "-D 1: no row"
else
	cat "$tmp/dur.out"; bad "ssq_write_bw -D 1 failed"
fi

grep -q 'last byte of its destination' <<<"$("$bin/ssq_write_lat" -h)" ||
	bad "write_lat -h: does not say what it measures"
if SSQ_EMU_MODE=full "$bin/ssq_write_lat" -P 2 -n 500 --json "$tmp/lat.json" >"$tmp/lat.out" 2>&1; then
	cat "$tmp/lat.out"
	grep -q 't_typical\[usec\].*99.9% percentile' "$tmp/lat.out" || bad "lat: no header"
	read -r b it tmin tmax ttyp _ <<<"$(grep -A1 '#bytes' "$tmp/lat.out" | tail -n1)"
	if [ "$b" != 2 ] || [ "$it" != 1000 ]; then bad "lat: row $b $it"; fi
	awk -v a="$tmin" -v b="$ttyp" -v c="$tmax" 'BEGIN { exit !(a > 0 && a <= b && b <= c) }' ||
		bad "lat: t_min $tmin t_typical $ttyp t_max $tmax"
	grep -q '"p999_us": [0-9]' "$tmp/lat.json" || bad "lat: no p999_us in JSON"
else
	cat "$tmp/lat.out"; bad "ssq_write_lat failed"
fi
if "$bin/ssq_write_lat" -n 10 >"$tmp/lat.out" 2>&1; then
	bad "ssq_write_lat in sink mode succeeded"
fi
grep -q 'sink moves no data' "$tmp/lat.out" || bad "write_lat, sink: $(cat "$tmp/lat.out")"

# Over the emulated wire: two ssqd, the data in the listening one's arena
# (write_bw checks it there; write_lat polls it there).
if SSQ_EMU_MODE=full "$bin/ssq_write_bw" --wire -P 2 -n 1000 -s 64 -q 2 \
	--json "$tmp/wire.json" >"$tmp/wire.out" 2>&1; then
	cat "$tmp/wire.out"
	grep -q 'over the emulated wire' "$tmp/wire.out" || bad "--wire: does not say so"
	check_bw wire "$tmp/wire.out" "$tmp/wire.json" 64 2000
	grep -q '"transport": "wire"' "$tmp/wire.json" || bad "--wire: no \"transport\": \"wire\""
else
	cat "$tmp/wire.out"; bad "ssq_write_bw --wire failed"
fi
grep -q '"transport": "local"' "$tmp/lockfree.json" || bad "no \"transport\": \"local\" in JSON"
if SSQ_EMU_MODE=full "$bin/ssq_write_lat" --wire -n 100 >"$tmp/wlat.out" 2>&1; then
	read -r b it tmin _ <<<"$(grep -A1 '#bytes' "$tmp/wlat.out" | tail -n1)"
	[ "$it" = 100 ] && awk -v a="$tmin" 'BEGIN { exit !(a > 0) }' || bad "write_lat --wire: row $b $it $tmin"
else
	cat "$tmp/wlat.out"; bad "ssq_write_lat --wire failed"
fi
for t in read_bw atomic_bw; do
	SSQ_EMU_MODE=full "$bin/ssq_$t" --wire -n 500 -s 64 --mode proxy --json "$tmp/w$t.json" \
		>"$tmp/w$t.out" 2>&1 || { cat "$tmp/w$t.out"; bad "ssq_$t --wire failed"; continue; }
	check_bw "$t --wire" "$tmp/w$t.out" "$tmp/w$t.json" "$([ $t = atomic_bw ] && echo 8 || echo 64)" 500
done
for t in read_bw atomic_bw; do
	"$bin/ssq_$t" -P 2 -n 2000 --mode proxy --json "$tmp/$t.json" >"$tmp/$t.out" 2>&1 ||
		{ cat "$tmp/$t.out"; bad "ssq_$t failed"; continue; }
	check_bw "$t" "$tmp/$t.out" "$tmp/$t.json" "$([ $t = atomic_bw ] && echo 8 || echo 65536)" 4000
done

# SEND into the receive pool: the tool sizes it (--recv-depth, --recv-size)
# and, in full mode, checks the payloads in the pool's log.
for m in lockfree proxy qp-per-process; do
	if SSQ_EMU_MODE=full "$bin/ssq_send_bw" --mode "$m" -P 2 -q 2 -n 301 -l 4 -Q 16 -s 100 -I 128 \
		--json "$tmp/send.json" >"$tmp/send.out" 2>&1; then
		grep -q 'ssq_send_bw: SEND' "$tmp/send.out" || bad "send_bw: does not say SEND"
		check_bw "send_bw $m" "$tmp/send.out" "$tmp/send.json" 100 602
	else
		cat "$tmp/send.out"; bad "ssq_send_bw --mode $m failed"
	fi
done
"$bin/ssq_send_bw" -P 2 -n 500 -s 64 >"$tmp/send.out" 2>&1 ||
	{ cat "$tmp/send.out"; bad "ssq_send_bw in sink mode failed"; }
if SSQ_EMU_MODE=full "$bin/ssq_send_bw" --wire -n 300 -s 64 --json "$tmp/wsend.json" >"$tmp/wsend.out" 2>&1; then
	check_bw "send_bw --wire" "$tmp/wsend.out" "$tmp/wsend.json" 64 300
else
	cat "$tmp/wsend.out"; bad "ssq_send_bw --wire failed"
fi
grep -q 'receive pool' <<<"$("$bin/ssq_send_lat" -h)" || bad "send_lat -h: does not say what it measures"
for w in "" --wire -e "-e --wire"; do
	if SSQ_EMU_MODE=full "$bin/ssq_send_lat" -P 2 -n 100 $w >"$tmp/slat.out" 2>&1; then
		read -r b it tmin _ <<<"$(grep -A1 '#bytes' "$tmp/slat.out" | tail -n1)"
		[ "$it" = 200 ] && awk -v a="$tmin" 'BEGIN { exit !(a > 0) }' || bad "send_lat $w: row $b $it $tmin"
	else
		cat "$tmp/slat.out"; bad "ssq_send_lat -P 2 $w failed"
	fi
done
"$bin/ssq_send_lat" -n 10 >"$tmp/slat.out" 2>&1 && bad "ssq_send_lat in sink mode succeeded"
grep -q 'sink moves no data' "$tmp/slat.out" || bad "send_lat, sink: $(cat "$tmp/slat.out")"
out=$("$bin/ssq_send_lat" -P 2 -s 1 2>&1) && bad "send_lat -P 2 -s 1: exit 0"
grep -q -- "-s 1 with -P > 1" <<<"$out" || bad "send_lat -P 2 -s 1: $out"
out=$("$bin/ssq_write_lat" -e 2>&1) && bad "write_lat -e: exit 0"
grep -q -- "-e: a latency test times one message at a time" <<<"$out" || bad "write_lat -e: $out"
for m in lockfree qp-per-process; do
	if SSQ_EMU_MODE=full "$bin/ssq_write_bw" -e --mode "$m" -P 2 -q 2 -n 3001 -t 64 -Q 16 -s 64 \
		--json "$tmp/ev-$m.json" >"$tmp/ev.out" 2>&1; then
		check_bw "write_bw -e $m" "$tmp/ev.out" "$tmp/ev-$m.json" 64 6002
		grep -q '"events": true' "$tmp/ev-$m.json" || bad "write_bw -e $m: the record does not say events"
	else
		cat "$tmp/ev.out"; bad "ssq_write_bw -e --mode $m failed"
	fi
done
grep -q '"events": false' "$tmp/lockfree.json" || bad "write_bw: the record does not say events false"
out=$("$bin/ssq_write_bw" -e --mode spinlock 2>&1) && bad "write_bw -e spinlock: exit 0"
grep -q -- "-e: only lockfree and qp-per-process senders sleep" <<<"$out" || bad "write_bw -e spinlock: $out"
# An ssqd without a receive pool: SEND is refused, saying why.
"$SSQD" --device emu --socket "$tmp/nopool.sock" --hugepages=off --data-mib 4 --recv-depth 0 \
	>"$tmp/nopool.log" 2>&1 &
nopool=$!
for _ in $(seq 200); do [ -S "$tmp/nopool.sock" ] && break; sleep 0.05; done
"$bin/ssq_send_bw" --ssq_socket="$tmp/nopool.sock" -n 10 >"$tmp/nopool.out" 2>&1 && bad "send_bw without a pool: exit 0"
grep -q 'no receive pool' "$tmp/nopool.out" || bad "send_bw without a pool: $(cat "$tmp/nopool.out" "$tmp/nopool.log")"
kill "$nopool"; wait "$nopool" || true

# Bad flags: non-zero exit, the flag named, usage text.
check_flag() { # expected-word args...
	local want=$1 out rc=0
	shift
	out=$("$bin/ssq_write_bw" "$@" 2>&1) || rc=$?
	[ $rc != 0 ] || bad "ssq_write_bw $*: exit 0"
	grep -q -- "$want" <<<"$out" || bad "ssq_write_bw $*: does not name $want: $out"
	grep -q 'Usage:' <<<"$out" || bad "ssq_write_bw $*: no usage text"
}
check_flag "-s '0'" -s 0
check_flag "--mode 'bogus'" --mode bogus
check_flag "-P '0'" -P 0
check_flag "-P x -q = 68 queues" -P 17 -q 4 --mode qp-per-process
check_flag "-Q 1000" -Q 1000
check_flag "-Q '2000'" -Q 2000 -t 1024
check_flag "-x" -x
check_flag "--frob" --frob
check_flag "-n" -n
check_flag "-s 'abc'" -s abc
check_flag "-q '0'" -q 0
check_flag "-q '65'" -q 65
check_flag "= 68 queues with --mode qp-per-process" -P 4 -q 17 --mode qp-per-process
check_flag "--ssq_socket: --wire starts its own" --wire --ssq_socket=/tmp/none.sock
check_flag "-d mlx5_0: --wire" --wire -d mlx5_0
check_flag "--wire" --wire=1
out=$("$bin/ssq_write_bw" --wire 2>&1) && bad "--wire in sink mode: exit 0"
grep -q 'sink device sends nothing' <<<"$out" || bad "--wire in sink mode: $out"

# perftest's conventions. -V: one line, as every ssq binary: the tool,
# ssq's version and git revision (the build's ssq_version.h).
ver=$(sed -n 's/^#define SSQ_VERSION_STRING "\(.*\)"$/\1/p' "$build/generated/ssq_version.h")
rev=$(sed -n 's/^#define SSQ_GIT_REVISION "\(.*\)"$/\1/p' "$build/generated/ssq_version.h")
[ -n "$ver" ] && [ -n "$rev" ] || bad "no version or revision in $build/generated/ssq_version.h"
for t in write_bw write_lat send_bw send_lat read_bw atomic_bw; do
	out=$("$bin/ssq_$t" -V) || bad "ssq_$t -V: exit $?"
	[ "$out" = "ssq_$t $ver (git $rev)" ] ||
		bad "ssq_$t -V: '$out', want 'ssq_$t $ver (git $rev)'"
done
[ "$("$bin/ssq_write_bw" --version)" = "$("$bin/ssq_write_bw" -V)" ] || bad "--version differs from -V"

# -S is perftest's service level: 0..15, and ssqd's QPs use 0 only; the
# socket it used to be is --ssq_socket, and -S PATH says so.
check_flag "-S '99': want 0..15" -S 99
check_flag "-S 3: ssqd sets up every QP with service level 0" -S 3
check_flag "the ssqd socket is --ssq_socket=PATH" -S /tmp/ssqd.sock
check_flag "-x '256': want 0..255" -x 256
check_flag "-i '3': want 1..2" -i 3
check_flag "-x: the ssqd at --ssq_socket" -x 1 --ssq_socket=/tmp/none.sock
check_flag "--run_infinitely: runs until interrupted" --run_infinitely -n 10
check_flag "--run_infinitely: one size at a time" --run_infinitely -a
out=$("$bin/ssq_write_lat" --run_infinitely 2>&1) && bad "write_lat --run_infinitely: exit 0"
grep -q -- '--run_infinitely: bandwidth tools only' <<<"$out" || bad "write_lat --run_infinitely: $out"

# --out_json_file: perftest's report (test_info, results with perftest's
# keys) plus where and when; --json's records carry the same. MiB = 2^20:
# BW average = size x iterations / seconds / 2^20, in the table, in
# perftest's file and in ssq's record. -S 0 -x 0 -i 1 are accepted and go
# to ssqd; the banner shows perftest's parameters and each queue's QPN.
if "$bin/ssq_write_bw" -P 2 -n 20000 -s 4096 -q 2 -S 0 -x 0 -i 1 --json "$tmp/mb.json" \
	--out_json_file="$tmp/perftest.json" >"$tmp/mb.out" 2>&1; then
	for f in mb.json perftest.json; do
		python3 -m json.tool "$tmp/$f" >/dev/null || bad "$f is not valid JSON: $(cat "$tmp/$f")"
	done
	python3 - "$tmp/mb.json" "$tmp/perftest.json" "$tmp/mb.out" "$ver" "$rev" <<'PY' || bad "JSON keys or MiB: see above"
import json, sys
rec = json.load(open(sys.argv[1]))[0]
pt = json.load(open(sys.argv[2]))
ver, rev = sys.argv[4], sys.argv[5]
ok = True
def need(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
info, res = pt.get("test_info", {}), pt.get("results", {})
for k in ("test", "Device", "Number_of_qps", "Transport_type", "Connection_type",
          "Using_SRQ", "TX_depth", "CQ_Moderation", "Mtu", "Link_type", "GID_index",
          "Max_inline_data", "rdma_cm_QPs", "Data_ex_method"):
    need(k in info, "--out_json test_info has no %s: %s" % (k, info))
for k in ("MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"):
    need(k in res, "--out_json results has no %s: %s" % (k, res))
need(info.get("test") == "RDMA_Write_BW_Test", "test %r" % info.get("test"))
need(info.get("Number_of_qps") == 2 and info.get("GID_index") == 0, "qps / GID index %s" % info)
need(res.get("MsgSize") == 4096 and res.get("n_iterations") == 40000, "results %s" % res)
for d, name in ((info, "--out_json"), (rec, "--json")):
    need(d.get("version") == ver and d.get("revision") == rev,
         "%s version/revision %r %r" % (name, d.get("version"), d.get("revision")))
    need(bool(d.get("host")), "%s host" % name)
    need(len(d.get("time", "")) == 20 and d["time"].endswith("Z") and d["time"][10] == "T",
         "%s time %r: want ISO 8601 UTC" % (name, d.get("time")))
    need(all(p.replace("-", "").isdigit() for p in d.get("cpus", "x").split(",")),
         "%s cpus %r: want a CPU list" % (name, d.get("cpus")))
mib = rec["size"] * rec["iterations"] / rec["seconds"] / 2**20
need(abs(rec["bw_avg_mib_s"] - mib) <= 0.001 * mib,
     "--json: bw_avg_mib_s %s, size x iterations / seconds / 2^20 = %.2f" % (rec["bw_avg_mib_s"], mib))
need(abs(res["BW_average"] - rec["bw_avg_mib_s"]) < 0.006, "BW_average %s != %s" % (res["BW_average"], rec["bw_avg_mib_s"]))
# MsgRate x size in MiB, not MB: 10^6 / 2^20 of MB/s.
need(abs(res["BW_average"] - res["MsgRate"] * 1e6 * 4096 / 2**20) <= 0.001 * res["BW_average"],
     "BW_average %s is not MsgRate x 4096 / 2^20" % res["BW_average"])
row = [l.split() for l in open(sys.argv[3]) if l.startswith(" 4096 ")]
need(row and abs(float(row[0][3]) - rec["bw_avg_mib_s"]) < 0.006, "table row %s" % row)
sys.exit(0 if ok else 1)
PY
	grep -q 'BW average\[MiB/sec\]' "$tmp/mb.out" || bad "no MiB/sec header"
	for l in 'RDMA_Write BW Test' 'Number of qps   : 2' 'Connection type : RC' 'TX depth        : 128' \
		'Mtu             : ' 'Link type       : ' 'GID index       : 0' 'Max inline data : 0\[B\]'; do
		grep -q "^ *$l" "$tmp/mb.out" || bad "banner: no '$l'"
	done
	# Each queue's QPN (ssqd's list); the peer's where a queue is open (q0).
	[ "$(grep -c '^ local address: LID .* QPN 0x[0-9a-f]* PSN ' "$tmp/mb.out")" = 2 ] &&
		[ "$(grep -c '^ remote address: .* PSN .*RKey 0x[0-9a-f]* VAddr 0x' "$tmp/mb.out")" = 2 ] &&
		grep -q '^ remote address: LID [a-z0-9]* QPN 0x[0-9a-f]* ' "$tmp/mb.out" ||
		bad "banner: not a local and a remote address line per queue: $(cat "$tmp/mb.out")"
else
	cat "$tmp/mb.out"; bad "ssq_write_bw --out_json_file failed"
fi
(cd "$tmp" && "$bin/ssq_atomic_bw" -n 100 --out_json >/dev/null 2>&1) || bad "ssq_atomic_bw --out_json failed"
python3 -m json.tool "$tmp/perftest_out.json" >/dev/null 2>&1 &&
	grep -q '"test": "Atomic_FETCH_AND_ADD_BW_Test"' "$tmp/perftest_out.json" ||
	bad "--out_json: no valid perftest_out.json in the working directory"

# --run_infinitely: a row every -D seconds until SIGINT (to the process
# group, as ^C and timeout send it), then the closing line and exit 0; the
# senders and ssqd stopped (no process of the run left).
rc=0
timeout --preserve-status -s INT 5 "$bin/ssq_write_bw" --run_infinitely -D 1 -P 2 -s 64 \
	--out_json_file="$tmp/inf.json" >"$tmp/inf.out" 2>&1 || rc=$?
n=$(grep -cE '^ 64 +[0-9]+ +0\.00 +[0-9.]+ +[0-9.]+$' "$tmp/inf.out" || true)
if [ "$rc" != 0 ] || [ "$n" -lt 2 ] || [ "$(tail -n1 "$tmp/inf.out" | tr -d -)" != "" ]; then
	cat "$tmp/inf.out"; bad "--run_infinitely: exit $rc, $n result lines (want 0, >= 2, then the closing line)"
fi
grep -q "WARNING: BW peak won't be measured" "$tmp/inf.out" || bad "--run_infinitely: no peak warning"
python3 -m json.tool "$tmp/inf.json" >/dev/null 2>&1 || bad "--run_infinitely: --out_json_file not valid JSON"
rc=0
SSQ_EMU_MODE=full timeout --preserve-status -s TERM 3 "$bin/ssq_send_bw" --run_infinitely -D 1 -s 64 \
	--mode proxy >"$tmp/inf.out" 2>&1 || rc=$?
n=$(grep -cE '^ 64 +[0-9]+ +0\.00 ' "$tmp/inf.out" || true)
[ "$rc" = 0 ] && [ "$n" -ge 1 ] || { cat "$tmp/inf.out"; bad "send_bw --run_infinitely, SIGTERM: exit $rc, $n lines"; }

# Installed tools find the installed ssqd: with $SSQD unset and no ssqd on
# $PATH, the one next to the tool (here a wrapper that says it ran); with
# none there, the failure names what it tried.
path=/usr/bin:/bin
if PATH=$path command -v ssqd >/dev/null; then
	echo "skip: an ssqd on $path"
else
	mkdir -p "$tmp/inst/bin" "$tmp/alone"
	cp "$bin/ssq_write_bw" "$tmp/inst/bin/"
	printf '#!/bin/sh\necho ran >"%s/inst/ran"\nexec "%s" "$@"\n' "$tmp" "$SSQD" >"$tmp/inst/bin/ssqd"
	chmod +x "$tmp/inst/bin/ssqd"
	env -u SSQD PATH=$path "$tmp/inst/bin/ssq_write_bw" -n 100 -s 64 >"$tmp/inst.out" 2>&1 ||
		{ cat "$tmp/inst.out"; bad "an installed tool without \$SSQD failed"; }
	[ -e "$tmp/inst/ran" ] || bad "an installed tool did not start the ssqd next to it"
	cp "$bin/ssq_write_bw" "$tmp/alone/"
	env -u SSQD PATH=$path "$tmp/alone/ssq_write_bw" -n 100 -s 64 >"$tmp/alone.out" 2>&1 &&
		bad "a tool with no ssqd anywhere ran"
	grep -q 'cannot run ssqd' "$tmp/alone.out" || bad "no ssqd: $(cat "$tmp/alone.out")"
	# From the build tree: the tree's own ssqd.
	env -u SSQD PATH=$path "$bin/ssq_write_bw" -n 100 -s 64 >"$tmp/tree.out" 2>&1 ||
		{ cat "$tmp/tree.out"; bad "a build-tree tool without \$SSQD failed"; }
fi

# ssq_line_ns: a figure, or a bad count named.
ln=$("$bin/../ssq_line_ns" 1000) && [[ $ln =~ ^[0-9]+\.[0-9]$ ]] || bad "ssq_line_ns 1000: '$ln'"
for a in x -5 0 100000001 ""; do
	out=$("$bin/../ssq_line_ns" "$a" 2>&1) && bad "ssq_line_ns '$a': exit 0"
	grep -q "round-trips '$a': want 1..100000000" <<<"$out" || bad "ssq_line_ns '$a': $out"
done

# bench.sh --cpus: a bad setting is named, and nothing runs.
for c in 0,1 :1 0: 0:1:2 x:1 0:99999; do
	out=$("$src/scripts/bench.sh" --quick --cpus "$c" --out "$tmp/nothing" 2>&1) &&
		bad "bench.sh --cpus '$c': exit 0"
	grep -q "^bench.sh: --cpus '$c': " <<<"$out" || bad "bench.sh --cpus '$c': $out"
done
[ -e "$tmp/nothing" ] && bad "bench.sh with a bad --cpus wrote $tmp/nothing"

# The matrix: a handful of seconds with --quick (about 10 s under ASan on
# an idle 2-core machine; 60 s was not enough beside ctest -j2's other
# tests on a loaded one, 150 s not beside ctest -j4 and two busy loops: its
# senders and ssqds spin, pinned), the senders pinned to the first CPU we
# may use and every ssqd to the second. The limit is for a hang, below the
# test's own 600 s (tests/CMakeLists.txt).
cpus=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' |
	awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -n2 | paste -sd:)
[[ $cpus == *:* ]] || cpus= # one CPU: not pinned
if (cd "$tmp" && timeout 400 "$src/scripts/bench.sh" --quick --out "$tmp/bench" ${cpus:+--cpus "$cpus"}) >"$tmp/bench.out" 2>&1; then
	cat "$tmp/bench.out"
	if [ -n "$cpus" ]; then
		n=$(grep -c "\"pin\": \"$cpus\"" "$tmp/bench/bench-results.json" || true)
		[ "$n" = 34 ] || bad "bench.sh --cpus $cpus: $n matrix records say so, want 34 (16 modes, 18 peers)"
		# Each tool's own record: the CPUs it was allowed (the senders').
		n=$(grep -c "\"cpus\": \"${cpus%:*}\"" "$tmp/bench/bench-results.json" || true)
		[ "$n" = 46 ] || bad "bench.sh --cpus $cpus: $n records with \"cpus\": \"${cpus%:*}\", want 46"
		grep -q "senders on CPUs ${cpus%:*}, ssqd on ${cpus#*:})" "$tmp/bench.out" ||
			bad "bench.sh --cpus $cpus: the table does not say where it ran"
	fi
	n=$(grep -c '"msg_rate_mpps"' "$tmp/bench/bench-results.json" || true)
	[ "$n" = 46 ] || bad "bench.sh --quick: $n records, want 46 (4 modes x P = 1, 2, 4, 8; 6 tools local and wire; 2 modes x P = 1, 2, 4 x 1, 2, 4 peers)"
	for k in mode procs size msg_rate_mpps ns_per_wqe device transport version revision host time cpus; do
		[ "$(grep -c "\"$k\": " "$tmp/bench/bench-results.json")" = 46 ] ||
			bad "bench.sh: not every record has $k"
	done
	# The matrix's 16 runs each keep the cross-core line cost measured before them.
	n=$(grep -cE '"line_ns": [0-9]+\.[0-9]' "$tmp/bench/bench-results.json" || true)
	[ "$n" = 16 ] || bad "bench.sh --quick: $n matrix records with line_ns, want 16"
	grep -qE "^cross-core cache-line transfer .*: [0-9]+ to [0-9]+ ns" "$tmp/bench.out" ||
		bad "bench.sh: no cross-core line figure"
	n=$(grep -c '"transport": "wire"' "$tmp/bench/bench-results.json" || true)
	[ "$n" = 6 ] || bad "bench.sh --quick: $n wire records, want 6"
	grep -q "^ssq_send_lat  *t_typical" "$tmp/bench.out" || bad "bench.sh: no wire table"
	# Processes x peers: the sending host's QPs, lockfree M against qp-per-process P x M.
	n=$(grep -c '"transport": "cluster"' "$tmp/bench/bench-results.json" || true)
	[ "$n" = 18 ] || bad "bench.sh --quick: $n cluster records, want 18"
	grep -qE '^4 +4 +4 +[0-9.]+ +16 +[0-9.]+ +[0-9.]+x$' "$tmp/bench.out" ||
		bad "bench.sh: no processes x peers row for P=4, 4 peers (4 QPs against 16)"
	if command -v gnuplot >/dev/null; then
		[ -s "$tmp/bench/bench-results.png" ] || bad "bench.sh: no PNG"
	fi
else
	cat "$tmp/bench.out"; bad "scripts/bench.sh --quick failed"
fi

[ $fail = 0 ] && echo "PASS" || echo "FAILED"
exit $fail
