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
# times each SEND until the log shows it, refuses sink mode and -s 1 with
# -P 2; an ssqd without a pool is refused by name; bad flags fail with
# usage text naming the flag; scripts/bench.sh --quick writes one record
# per run of the matrix and of the wire table, pinned with --cpus (a bad
# --cpus is named and runs nothing).
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
	awk -v r="$pk" -v a="$av" 'BEGIN { exit !(r > 0 && a > 0) }' || bad "$1: BW '$pk' '$av'"
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

"$bin/ssq_write_lat" -h | grep -q 'last byte of its destination' || bad "write_lat -h: does not say what it measures"
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
"$bin/ssq_send_lat" -h | grep -q 'receive pool' || bad "send_lat -h: does not say what it measures"
for w in "" --wire; do
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
# An ssqd without a receive pool: SEND is refused, saying why.
"$SSQD" --device emu --socket "$tmp/nopool.sock" --hugepages=off --data-mib 4 --recv-depth 0 \
	>"$tmp/nopool.log" 2>&1 &
nopool=$!
for _ in $(seq 200); do [ -S "$tmp/nopool.sock" ] && break; sleep 0.05; done
"$bin/ssq_send_bw" -S "$tmp/nopool.sock" -n 10 >"$tmp/nopool.out" 2>&1 && bad "send_bw without a pool: exit 0"
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
check_flag "-P" -P 17 --mode qp-per-process
check_flag "-Q 1000" -Q 1000
check_flag "-Q '2000'" -Q 2000 -t 1024
check_flag "-x" -x
check_flag "--frob" --frob
check_flag "-n" -n
check_flag "-s 'abc'" -s abc
check_flag "-q '0'" -q 0
check_flag "-q '17'" -q 17
check_flag "= 20 queues with --mode qp-per-process" -P 4 -q 5 --mode qp-per-process
check_flag "-S: --wire starts its own" --wire -S /tmp/none.sock
check_flag "-d mlx5_0: --wire" --wire -d mlx5_0
check_flag "--wire" --wire=1
out=$("$bin/ssq_write_bw" --wire 2>&1) && bad "--wire in sink mode: exit 0"
grep -q 'sink device sends nothing' <<<"$out" || bad "--wire in sink mode: $out"

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

# The matrix: a handful of seconds with --quick (well under 30 s), the
# senders pinned to the first CPU we may use and every ssqd to the second.
cpus=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' |
	awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -n2 | paste -sd:)
[[ $cpus == *:* ]] || cpus= # one CPU: not pinned
if (cd "$tmp" && timeout 60 "$src/scripts/bench.sh" --quick --out "$tmp/bench" ${cpus:+--cpus "$cpus"}) >"$tmp/bench.out" 2>&1; then
	cat "$tmp/bench.out"
	if [ -n "$cpus" ]; then
		n=$(grep -c "\"cpus\": \"$cpus\"" "$tmp/bench/bench-results.json" || true)
		[ "$n" = 16 ] || bad "bench.sh --cpus $cpus: $n matrix records say so, want 16"
		grep -q "senders on CPUs ${cpus%:*}, ssqd on ${cpus#*:})" "$tmp/bench.out" ||
			bad "bench.sh --cpus $cpus: the table does not say where it ran"
	fi
	n=$(grep -c '"msg_rate_mpps"' "$tmp/bench/bench-results.json" || true)
	[ "$n" = 28 ] || bad "bench.sh --quick: $n records, want 28 (4 modes x P = 1, 2, 4, 8; 6 tools local and wire)"
	for k in mode procs size msg_rate_mpps ns_per_wqe device transport; do
		[ "$(grep -c "\"$k\": " "$tmp/bench/bench-results.json")" = 28 ] ||
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
	if command -v gnuplot >/dev/null; then
		[ -s "$tmp/bench/bench-results.png" ] || bad "bench.sh: no PNG"
	fi
else
	cat "$tmp/bench.out"; bad "scripts/bench.sh --quick failed"
fi

[ $fail = 0 ] && echo "PASS" || echo "FAILED"
exit $fail
