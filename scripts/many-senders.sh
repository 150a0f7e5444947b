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
#                           [--modes "lockfree combine"]
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
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--total) total=$2; shift 2 ;;
	--procs) procs=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	*) echo "many-senders: unknown option $1" >&2; exit 2 ;;
	esac
done
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
	"P = $procs, $nm modes x 2 runs, -D $dur s each; ssq_write_bw -s 64 -D $dur -P N --mode M, SSQ_EMU_MODE=sink"
declare -A r
logs=$(mktemp -d /tmp/many-senders.XXXXXX)
rate() { # P mode run -> Mpps, or "fail" with the tool's output kept in $logs
	local out v
	out=$("$tool" -s 64 -D "$dur" -P "$1" --mode "$2" 2>&1) || true
	v=$(awk '$1 == 64 && NF == 5 {v = $5} END {if (v != "") printf "%.2f", v}' <<<"$out")
	if [ -n "$v" ]; then echo "$v"; else
		printf '%s\n' "$out" >"$logs/fail-P$1-$2-run$3.txt"
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
for m in $modes; do [ "$m" = combine ] || printf '| %-12s' "comb/$m"; done
printf '\n'
for p in $procs; do
	printf '%-8s' "$p"
	for m in $modes; do printf '| %-16s' "${r[$p,$m,1]} / ${r[$p,$m,2]}"; done
	for m in $modes; do
		[ "$m" = combine ] && continue
		printf '| %-12s' "$(awk -v a="${r[$p,combine,1]:-x}" -v b="${r[$p,combine,2]:-x}" \
			-v c="${r[$p,$m,1]}" -v d="${r[$p,$m,2]}" \
			'BEGIN { if (a+0 == 0 || c+0 == 0 || b+0 == 0 || d+0 == 0) print "-";
			         else printf "%.2f", (a + b) / (c + d) }')"
	done
	printf '\n'
done
echo "(Mpps, run 1 / run 2; ratios: combine's mean over the mode's mean)"
if ls "$logs"/fail-* >/dev/null 2>&1; then
	echo "failed runs' output: $logs"
else
	rmdir "$logs"
fi
