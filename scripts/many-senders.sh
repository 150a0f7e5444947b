#!/usr/bin/env bash
# Many senders, one queue (issue 29): ssq_write_bw, 64-byte WRITEs, one post
# and one doorbell per WQE, the emulated device in sink mode (host side
# measured), for P = 1, 2, 4, 8 and cores - 1 sender processes x every
# --mode (lockfree, qp-per-process, spinlock, proxy, combine), two runs
# each, then the ratios of combine to the others (run means). Says how many
# cores it had. Runs from a build directory, copied anywhere: no install,
# no network (the tool starts its own ssqd from the build).
#
#   scripts/many-senders.sh [--build DIR] [--total SECONDS] [--procs "1 2"]
#                           [--modes "lockfree combine"] [--base MODE] [--cpu]
#
# A mode is a --mode, optionally with the queues: MODE/qK is `--mode MODE
# -q K` (each sender spreads its posts over K queues itself), MODE/qK+pick
# is `--mode MODE -q K --queue-pick` (ssqd gives each sender one of the K
# queues, ssq_queue_open "any"): e.g. --modes "lockfree lockfree/q2
# lockfree/q2+pick". --base: the mode the ratio columns compare with
# (default combine). --cpu: the senders' CPU ns per WQE (the tool's
# sender_cpu_ns_per_wqe) instead of Mpps: on a machine shared with other
# work the wall-clock rate swings with the time slices the senders wait for,
# their CPU time per WQE much less.
#
# --total: the whole run's budget (default 300): each of the
# P x modes x 2 runs gets -D total / runs seconds (at least 1), plus each
# run's start-up (ssqd, attach: about a second).
# --build: where ssq_write_bw is (DIR/bench/perftest/ssq_write_bw); default
# the directory this script is in if it holds one, else <source>/build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=
total=300
procs=
modes="lockfree qp-per-process spinlock proxy combine"
base=combine
cpu=0
while [ $# -gt 0 ]; do
	case $1 in
	--cpu) cpu=1; shift ;;
	--base) base=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--total) total=$2; shift 2 ;;
	--procs) procs=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	*) echo "many-senders: unknown option $1" >&2; exit 2 ;;
	esac
done
# MODE[/qK[+pick]] -> the tool's flags.
mode_flags() {
	local m=${1%%/*} q='' pick=''
	if [ "$m" != "$1" ]; then
		q=${1#*/}
		[ "${q%+pick}" != "$q" ] && pick=--queue-pick
		q=${q%+pick}
		[[ $q =~ ^q[0-9]+$ ]] || { echo "many-senders: mode '$1': want MODE/qK or MODE/qK+pick" >&2; exit 2; }
		q="-q ${q#q}"
	fi
	echo "--mode $m $q $pick"
}
for m in $modes; do mode_flags "$m" >/dev/null; done
if [ -z "$build" ]; then
	if [ -x "$here/bench/perftest/ssq_write_bw" ]; then build=$here; else build=$here/../build; fi
fi
build=$(cd "$build" && pwd)
tool=$build/bench/perftest/ssq_write_bw
[ -x "$tool" ] || { echo "many-senders: no $tool (build first)" >&2; exit 1; }
# The tool's own ssqd, from this build; its libraries wherever the build
# directory now is (a copied build's RPATH names the old place).
SSQD=$(find "$build" -name ssqd -type f -perm -u+x | head -n1)
export SSQD
LD_LIBRARY_PATH=$(find "$build" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export SSQ_EMU_MODE=sink
unset SSQ_SOCKET
cores=$(nproc)
if [ -z "$procs" ]; then
	procs="1 2 4 8 $((cores - 1))"
	procs=$(tr ' ' '\n' <<<"$procs" | awk -v c="$cores" '$1 >= 1 && ($1 < c || $1 == 1)' |
		sort -nu | paste -sd' ')
fi
nm=$(wc -w <<<"$modes")
np=$(wc -w <<<"$procs")
runs=$((nm * np * 2))
dur=$((total / runs))
[ "$dur" -ge 1 ] || dur=1
echo "many-senders: $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))," \
	"P = $procs, $nm modes x 2 runs, -D $dur s each; ssq_write_bw -s 64 -D $dur -P N --mode M [-q K [--queue-pick]], SSQ_EMU_MODE=sink"
declare -A r
logs=$(mktemp -d /tmp/many-senders.XXXXXX)
rate() { # P mode run -> Mpps (--cpu: CPU ns per WQE), or "fail" with the tool's output kept in $logs
	local out v
	rm -f "$logs/run.json"
	# shellcheck disable=SC2046 # the mode's flags, split on purpose
	# A run that hangs (a combine -q 2 run of about 16 stuck here, 2026-11-29) is a
	# failed cell with its output kept, not a stuck table.
	out=$(timeout -s KILL $((dur * 10 + 60)) "$tool" -s 64 -D "$dur" -P "$1" $(mode_flags "$2") \
		--json "$logs/run.json" 2>&1) || true
	if [ "$cpu" = 1 ]; then
		v=$(sed -n 's/.*"sender_cpu_ns_per_wqe": \([0-9.]*\).*/\1/p' "$logs/run.json" 2>/dev/null |
			awk 'NR == 1 && $1 > 0 {printf "%.0f", $1}')
	else
		v=$(awk '$1 == 64 && NF == 5 {v = $5} END {if (v != "") printf "%.2f", v}' <<<"$out")
	fi
	if [ -n "$v" ]; then echo "$v"; else
		printf '%s\n' "$out" >"$logs/fail-P$1-${2//\//_}-run$3.txt"
		echo fail
	fi
}
for run in 1 2; do
	# Round by round, so a noisy moment spreads over the modes.
	for p in $procs; do
		for m in $modes; do
			r[$p,$m,$run]=$(rate "$p" "$m" "$run")
		done
	done
done
printf '\n%-8s' senders
for m in $modes; do printf '| %-16s' "$m"; done
lab=$base
[ "$base" = combine ] && lab=comb
for m in $modes; do [ "$m" = "$base" ] || printf '| %-12s' "$lab/$m"; done
printf '\n'
for p in $procs; do
	printf '%-8s' "$p"
	for m in $modes; do printf '| %-16s' "${r[$p,$m,1]} / ${r[$p,$m,2]}"; done
	for m in $modes; do
		[ "$m" = "$base" ] && continue
		printf '| %-12s' "$(awk -v a="${r[$p,$base,1]:-x}" -v b="${r[$p,$base,2]:-x}" \
			-v c="${r[$p,$m,1]}" -v d="${r[$p,$m,2]}" -v cpu="$cpu" \
			'BEGIN { if (a+0 == 0 || c+0 == 0 || b+0 == 0 || d+0 == 0) print "-";
			         else if (cpu) printf "%.2f", (c + d) / (a + b);
			         else printf "%.2f", (a + b) / (c + d) }')"
	done
	printf '\n'
done
if [ "$cpu" = 1 ]; then
	echo "(senders' CPU ns per WQE, run 1 / run 2; ratios: the mode's mean over $base's: above 1, $base costs less CPU)"
else
	echo "(Mpps, run 1 / run 2; ratios: $base's mean over the mode's mean)"
fi
if ls "$logs"/fail-* >/dev/null 2>&1; then
	echo "failed runs' output: $logs"
else
	rm -f "$logs/run.json"
	rmdir "$logs"
fi
