#!/usr/bin/env bash
# ssqd keeps the CPU affinity it was started with: DPDK's EAL (hugepage
# arenas only) must not pin its threads to the lcore it names. ssqd runs
# under taskset on the last CPU this test may use, with a hugepage arena,
# and every one of its threads must report exactly that CPU.
set -euo pipefail
ssqd=${SSQD:?}
work=$(mktemp -d)
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

allowed=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}')
cpus=$(python3 -c "import os; print(' '.join(map(str, sorted(os.sched_getaffinity(0)))))")
set -- $cpus
if [ $# -lt 2 ]; then
	echo "skip: only CPU $allowed allowed here; the check needs two CPUs"
	exit 77
fi
last=${!#}

# 8 MiB of data: an arena of a few dozen 2 MiB pages.
want=64
have=$(cat /proc/sys/vm/nr_hugepages)
if [ "$have" -lt "$want" ]; then
	echo "$want" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
fi
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -lt 24 ]; then
	echo "skip: $free free 2 MiB hugepages and not root to reserve more (echo $want > /proc/sys/vm/nr_hugepages)"
	exit 77
fi

taskset -c "$last" "$ssqd" --device emu --hugepages=required --data-mib 8 \
	--socket "$work/s" >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q "serving" "$work/log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
grep -q "2 MiB huge pages; serving" "$work/log" || {
	echo "FAIL: ssqd did not come up on hugepages:"
	sed 's/^/     /' "$work/log"
	exit 1
}
fail=0
n=0
for t in /proc/"$pid"/task/*; do
	got=$(awk '/Cpus_allowed_list/ {print $2}' "$t/status")
	name=$(cat "$t/comm")
	n=$((n + 1))
	if [ "$got" != "$last" ]; then
		echo "FAIL thread ${t##*/} ($name): Cpus_allowed_list $got, started with $last"
		fail=1
	fi
done
[ "$n" -ge 2 ] || { echo "FAIL: only $n thread(s) seen"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok   all $n ssqd threads on CPU $last, as taskset started it"
exit "$fail"
