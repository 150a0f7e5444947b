#!/usr/bin/env bash
# CPU an idle ssqd uses (emulated device, loopback, no client attached):
# each thread's run time from /proc/PID/task/TID/schedstat over SECONDS,
# after SETTLE seconds of idling, summed over N daemons started at once.
#   bench/idle_cpu.sh SSQD [SECONDS [N]]      e.g. bench/idle_cpu.sh build/ssqd 10 8
set -euo pipefail
ssqd=${1:?usage: idle_cpu.sh SSQD [SECONDS [N]]}
secs=${2:-10}
n=${3:-1}
settle=3
dir=$(mktemp -d /tmp/ssq-idle-cpu.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for i in $(seq 1 "$n"); do
	"$ssqd" --device emu --socket "$dir/$i.sock" --hugepages=off --data-mib 8 \
		--sq-size 256 2>"$dir/$i.log" &
	pids+=($!)
done
for i in $(seq 1 "$n"); do
	for _ in $(seq 200); do [ -S "$dir/$i.sock" ] && break; sleep 0.05; done
	[ -S "$dir/$i.sock" ] || { echo "ssqd $i did not start:"; cat "$dir/$i.log"; exit 1; }
done
sleep "$settle"
declare -A before
for p in "${pids[@]}"; do
	for t in /proc/"$p"/task/*; do before[$t]=$(cut -d' ' -f1 "$t/schedstat"); done
done
sleep "$secs"
declare -A by_name
total=0
for p in "${pids[@]}"; do
	for t in /proc/"$p"/task/*; do
		d=$(( $(cut -d' ' -f1 "$t/schedstat") - ${before[$t]:-0} ))
		name=$(cat "$t/comm")
		# The emulated device's thread keeps the process's name.
		[ "$name" = ssqd-recv ] || name="emu device"
		[ "$t" = /proc/"$p"/task/"$p" ] && name="serve loop"
		by_name[$name]=$(( ${by_name[$name]:-0} + d ))
		total=$((total + d))
	done
done
for k in "${!by_name[@]}"; do
	awk -v k="$k" -v d="${by_name[$k]}" -v s="$secs" -v n="$n" \
		'BEGIN { printf "  %-12s %.3f %% of a core (%d ssqd)\n", k, d / 1e7 / s, n }'
done | sort
awk -v d="$total" -v s="$secs" -v n="$n" \
	'BEGIN { printf "  %-12s %.3f %% of a core (%d ssqd), %.3f %% each\n", "total", d / 1e7 / s, n, d / 1e7 / s / n }'
