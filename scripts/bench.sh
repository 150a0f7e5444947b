#!/usr/bin/env bash
# The mode x processes matrix of ssq_write_bw (64-byte RDMA WRITEs): every
# --mode (lockfree, spinlock, qp-per-process, proxy) with P = 1, 2, 4, 8
# sender processes, each run on its own ssqd (the tool starts it; on the
# emulated mlx5 device in sink mode when no ConnectX is present, so the
# host-side cost is what is measured). Writes, in --out DIR (default .):
#   bench-results.json  one record per run: mode, procs, size, msg_rate_mpps,
#                       ns_per_wqe, device, version, revision, host, time,
#                       cpus, ... (ssq_write_bw --json)
#   bench-results.png   messages per second against processes, a line per
#                       mode (gnuplot; skipped, saying so, without it)
# and prints the matrix and the lockfree ratios at P = 4. Before each run
# ssq_line_ns measures what one cache line costs to move between two cores
# (the run's record keeps it as "line_ns"): on a shared virtual machine it
# moves several fold with the host's placement of the vCPUs, and
# single-message posting moves with it, so the matrix says the range it ran
# in. Then what the
# emulated wire costs: ssq_write_bw, ssq_read_bw, ssq_atomic_bw,
# ssq_send_bw (64 bytes), ssq_write_lat and ssq_send_lat, one lockfree
# sender, in full mode, in-device loopback against --wire (two ssqd, RC over
# UDP on 127.0.0.1): a small table, and their records in the same JSON
# ("transport": "local" or "wire").
# Then processes x peers (issue: one shared queue per peer instead of one
# per process and peer): ssq_write_bw --peers M (the tool starts a cluster
# of M + 1 ssqd on the emulated wire, full mode) with P = 1, 2, 4 senders
# and M = 1, 2, 4 peers, lockfree (M shared queues on the sending host)
# against qp-per-process (P x M), the QPs the sending host used next to
# each message rate ("transport": "cluster", "peers", "host_qps").
#
#   scripts/bench.sh [--quick] [--out DIR] [-s size] [-D seconds] [--reps N]
#                    [--cpus SENDERS:DEVICE]
#
# Each point is the median of --reps runs (default 3; 1 with --quick); the
# reps go round the whole matrix in turn, so a noisy moment of a shared
# machine spreads over the modes instead of landing on one.
# --quick: a fixed count per run (-n 200000 per process) instead of -D 3
# seconds each: the matrix in seconds rather than a minute.
# --cpus SENDERS:DEVICE (CPU lists as taskset -c takes them, e.g. 0,1:2):
# every tool and its sender processes run on SENDERS, every ssqd (and so
# the emulated device's thread) on DEVICE. Without it the device competes
# with the senders for the same cores; with a DEVICE core of its own the
# matrix measures what "P senders on these cores" costs the host alone, as
# on a ConnectX. Each record keeps the setting ("pin"; "any" without it),
# beside the tool's own "cpus", the CPUs it was allowed (sched_getaffinity).
# Uses $SSQ_BINARY_DIR's tools when set (ctest), else builds build/ with
# scripts/build.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=.
size=64
quick=0
duration=3
reps=
cpus=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--out) out=${2:?--out needs a directory}; shift ;;
	-s) size=${2:?-s needs a size}; shift ;;
	-D) duration=${2:?-D needs seconds}; shift ;;
	--reps) reps=${2:?--reps needs a count}; shift ;;
	--cpus) cpus=${2:?--cpus needs SENDERS:DEVICE}; shift ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2
	   echo "usage: scripts/bench.sh [--quick] [--out DIR] [-s size] [-D seconds] [--reps N] [--cpus SENDERS:DEVICE]" >&2
	   exit 1 ;;
	esac
	shift
done

if [ -n "${SSQ_BINARY_DIR:-}" ] && [ -x "$SSQ_BINARY_DIR/bench/perftest/ssq_write_bw" ]; then
	build=$SSQ_BINARY_DIR
else
	build=$here/build
	"$here/scripts/build.sh" "$build" >/dev/null
fi
tool=$build/bench/perftest/ssq_write_bw
line_ns=$build/bench/ssq_line_ns
export SSQD=${SSQD:-$build/ssqd}
export SSQ_EMU_MODE=${SSQ_EMU_MODE:-sink}
unset SSQ_SOCKET # each run starts its own ssqd, with the queues its mode needs

modes="lockfree spinlock qp-per-process proxy"
procs="1 2 4 8"
if [ $quick = 1 ]; then
	runlen=(-n 200000)
	reps=${reps:-1}
else
	runlen=(-D "$duration")
	reps=${reps:-3}
fi
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: --reps '$reps': want 1 or more" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pin=()
if [ -n "$cpus" ]; then
	senders=${cpus%%:*}
	device=${cpus#*:}
	if [[ $cpus != *:* || -z $senders || -z $device || $device == *:* ]]; then
		echo "bench.sh: --cpus '$cpus': want SENDERS:DEVICE, CPU lists as taskset -c takes them (e.g. 0,1:2)" >&2
		exit 1
	fi
	command -v taskset >/dev/null || { echo "bench.sh: --cpus needs taskset (util-linux)" >&2; exit 1; }
	for l in "$senders" "$device"; do
		taskset -c "$l" true 2>/dev/null ||
			{ echo "bench.sh: --cpus '$cpus': '$l' is not a CPU list this machine lets us run on" >&2; exit 1; }
	done
	pin=(taskset -c "$senders")
	# Each tool starts its ssqd through $SSQD: pin it (exec keeps the pid;
	# bash, as %q quotes for bash).
	printf '#!/usr/bin/env bash\nexec taskset -c %q %q "$@"\n' "$device" "$SSQD" >"$tmp/ssqd-pinned"
	chmod +x "$tmp/ssqd-pinned"
	export SSQD=$tmp/ssqd-pinned
fi
mkdir -p "$out"

first=1
for r in $(seq "$reps"); do
	for m in $modes; do
		for p in $procs; do
			run=$tmp/$m-$p-$r
			# (one CPU: no figure, "line_ns": null)
			if ln=$("$line_ns" 20000); then echo "$ln" >>"$tmp/line_ns"; else ln=null; fi
			if ! "${pin[@]}" "$tool" --mode "$m" -P "$p" -s "$size" "${runlen[@]}" \
				--json "$run.json" >"$run.out" 2>&1; then
				echo "bench.sh: ssq_write_bw --mode $m -P $p failed:" >&2
				cat "$run.out" >&2
				exit 1
			fi
			[ $first = 1 ] && head -n1 "$run.out" && first=0
			sed -i "s/}\$/, \"rep\": $r, \"line_ns\": $ln, \"pin\": \"${cpus:-any}\"}/" "$run.json"
			sed -n 's/.*"msg_rate_mpps": \([0-9.]*\).*/\1/p' "$run.json" >>"$tmp/$m-$p.rates"
		done
	done
done
# The median of each point, "procs rate" per line for the plot.
# The median of the numbers in file $1, one per line.
median() {
	sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for m in $modes; do
	for p in $procs; do
		printf '%s\t%s\n' "$p" "$(median "$tmp/$m-$p.rates")"
	done >"$tmp/$m.dat"
done

# The wire's cost: each tool once in-device (local) and once over the wire,
# full mode (sink sends nothing), one sender. A run's value: MsgRate, or
# write_lat's t_typical.
wtools="write_bw read_bw atomic_bw send_bw write_lat send_lat"
for t in $wtools; do
	for tr in local wire; do
		run=$tmp/w-$t-$tr
		if [ "${t#*_}" = lat ]; then
			len=(-n "$([ $quick = 1 ] && echo 500 || echo 5000)")
			key=t_typical_us
		else
			len=("${runlen[@]}")
			# --quick: counts that take tens of ms each way (wire ~0.1 Mpps).
			[ $quick = 1 ] && len=(-n "$([ $tr = wire ] && echo 5000 || echo 100000)")
			key=msg_rate_mpps
		fi
		if ! SSQ_EMU_MODE=full "${pin[@]}" "$build/bench/perftest/ssq_$t" -s 64 "${len[@]}" \
			$([ $tr = wire ] && echo --wire) --json "$run.json" >"$run.out" 2>&1; then
			echo "bench.sh: ssq_$t ($tr) failed:" >&2
			cat "$run.out" >&2
			exit 1
		fi
		sed -n "s/.*\"$key\": \([0-9.]*\).*/\1/p" "$run.json" >"$run.val"
	done
done

# Processes x peers over the emulated wire (see the top). --quick: 2000
# messages a sender.
pmodes="lockfree qp-per-process"
pprocs="1 2 4"
ppeers="1 2 4"
plen=("${runlen[@]}")
[ $quick = 1 ] && plen=(-n 2000)
for r in $(seq "$reps"); do
	for m in $pmodes; do
		for p in $pprocs; do
			for n in $ppeers; do
				run=$tmp/pm-$m-$p-$n-$r
				if ! SSQ_EMU_MODE=full "${pin[@]}" "$tool" --peers "$n" --mode "$m" -P "$p" \
					-s "$size" "${plen[@]}" --json "$run.json" >"$run.out" 2>&1; then
					echo "bench.sh: ssq_write_bw --peers $n --mode $m -P $p failed:" >&2
					cat "$run.out" >&2
					exit 1
				fi
				sed -i "s/}\$/, \"rep\": $r, \"pin\": \"${cpus:-any}\"}/" "$run.json"
				sed -n 's/.*"msg_rate_mpps": \([0-9.]*\).*/\1/p' "$run.json" >>"$tmp/pm-$m-$p-$n.rates"
				sed -n 's/.*"host_qps": \([0-9]*\).*/\1/p' "$run.json" >"$tmp/pm-$m-$p-$n.qps"
			done
		done
	done
done

# One JSON array of every run's record (each --json file holds one).
cat "$tmp"/*-*-*.json | awk '/^  \{/ { rec[n++] = $0 }
	END { print "["; for (i = 0; i < n; i++) print rec[i] (i + 1 < n ? "," : ""); print "]" }' \
	>"$out/bench-results.json"

dev=$(sed -n 's/.*"device": "\([^"]*\)".*/\1/p' "$tmp/lockfree-1-1.json")
if [ "$dev" = emu ]; then
	dev_label="emulated mlx5 device, $SSQ_EMU_MODE mode"
else
	dev_label="device $dev"
fi
[ -n "$cpus" ] && dev_label="$dev_label; senders on CPUs $senders, ssqd on $device"
echo "ssq_write_bw -s $size ${runlen[*]}: MsgRate [Mpps], median of $reps ($dev_label)"
printf '%-16s' mode
for p in $procs; do printf '%10s' "P=$p"; done
echo
for m in $modes; do
	printf '%-16s' "$m"
	while read -r _ r; do printf '%10.3f' "$r"; done <"$tmp/$m.dat"
	echo
done
at4() { awk '$1 == 4 { print $2 }' "$tmp/$1.dat"; }
awk -v lf="$(at4 lockfree)" -v sl="$(at4 spinlock)" -v qp="$(at4 qp-per-process)" \
	-v px="$(at4 proxy)" 'BEGIN {
	printf "P=4: lockfree / spinlock %.2fx, / proxy %.2fx, / qp-per-process %.2fx (1 QP vs 4)\n",
		lf / sl, lf / px, lf / qp }'
# The same ratios rep by rep (one rep's P = 4 runs are close in time).
if [ "$reps" -gt 1 ]; then
	paste "$tmp/lockfree-4.rates" "$tmp/spinlock-4.rates" "$tmp/proxy-4.rates" \
		"$tmp/qp-per-process-4.rates" | awk '{ printf "%s %.2fx / %.2fx / %.2fx", (NR == 1 ? "P=4, each rep: spinlock / proxy / qp-per-process" : ";"),
		$1 / $2, $1 / $3, $1 / $4 } END { print "" }'
fi
[ -s "$tmp/line_ns" ] && sort -g "$tmp/line_ns" | awk -v med="$(median "$tmp/line_ns")" '{ v[NR] = $1 } END {
	printf "cross-core cache-line transfer before the runs (ssq_line_ns): %.0f to %.0f ns, median %.0f\n",
		v[1], v[NR], med }'
echo
echo "The emulated wire's cost: -s 64, 1 sender, lockfree, full mode"
printf '%-16s%-16s%12s%12s%12s\n' tool value local wire wire/local
for t in $wtools; do
	l=$(cat "$tmp/w-$t-local.val")
	w=$(cat "$tmp/w-$t-wire.val")
	awk -v t="ssq_$t" -v l="$l" -v w="$w" -v u="$([ "${t#*_}" = lat ] && echo 't_typical[us]' || echo 'MsgRate[Mpps]')" \
		'BEGIN { printf "%-16s%-16s%12.3f%12.3f%11.3fx\n", t, u, l, w, (l > 0 ? w / l : 0) }'
done
echo
echo "Processes x peers: ssq_write_bw --peers M -s $size ${plen[*]}, full mode over the emulated wire, median of $reps"
printf '%-4s%-7s%16s%12s%20s%12s%16s\n' P peers "lockfree QPs" Mpps "qp-per-process QPs" Mpps lockfree/qpp
for p in $pprocs; do
	for n in $ppeers; do
		lq=$(cat "$tmp/pm-lockfree-$p-$n.qps")
		lr=$(median "$tmp/pm-lockfree-$p-$n.rates")
		qq=$(cat "$tmp/pm-qp-per-process-$p-$n.qps")
		qr=$(median "$tmp/pm-qp-per-process-$p-$n.rates")
		awk -v p="$p" -v n="$n" -v lq="$lq" -v lr="$lr" -v qq="$qq" -v qr="$qr" \
			'BEGIN { printf "%-4s%-7s%16s%12.3f%20s%12.3f%15.2fx\n", p, n, lq, lr, qq, qr, (qr > 0 ? lr / qr : 0) }'
	done
done
echo "wrote $out/bench-results.json"

if command -v gnuplot >/dev/null; then
	plot="plot"
	sep=""
	for m in $modes; do
		plot="$plot$sep '$tmp/$m.dat' using 1:(\$2*1e6) with linespoints title '$m'"
		sep=","
	done
	gnuplot <<GP
set terminal pngcairo size 900,500 noenhanced
set output '$out/bench-results.png'
set title "ssq_write_bw: $size-byte RDMA WRITEs, messages/s against sender processes\\n($dev_label, median of $reps)"
set xlabel 'sender processes (P)'
set ylabel 'messages per second'
set xtics (1, 2, 4, 8)
set logscale x 2
set xrange [0.9:9]
set yrange [0:*]
set format y '%.1s%c'
set key outside right top
set grid
$plot
GP
	echo "wrote $out/bench-results.png"
else
	echo "bench.sh: gnuplot not found: no bench-results.png (apt-get install gnuplot-nox)"
fi
