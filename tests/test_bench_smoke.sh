#!/usr/bin/env bash
# The benchmarks run and report: ssq_micro prints BM_build_write_1sge with an
# items_per_second counter, BM_post_write64_batch32 and both
# BM_post_write64_single_host (with and without the spinlock) ns_per_wqe;
# scripts/wqe-insns.sh ends with a bare instruction count, which must stay at
# or under 40 per WQE built, with --post at or under 150 per WQE posted
# and reaped on a shared queue, with --post-wr (the same as verbs lists
# through ssq_post_wr) at or under 320, with --post-single (one by one
# through ssq_post_write) at or under 330, and with --post-combined (one by
# one through ssq_post_write_combined by a lone producer: the lone fast
# path of <ssq/combine.h>, 392 where handing over to itself cost 579) at
# or under 430 (repeatable counts from callgrind, not timings; wqe_insns
# and post_insns are built -O2 and unsanitized in every build).
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}

out=$("$build/bench/ssq_micro" --benchmark_filter='BM_build_write_1sge$' \
	--benchmark_min_time=0.01 2>&1)
echo "$out" | grep -E '^BM_build_write_1sge .*items_per_second=' ||
	{ echo "FAIL: ssq_micro did not report BM_build_write_1sge"; echo "$out"; exit 1; }

out=$("$build/bench/ssq_micro" --benchmark_filter='BM_post_write64_batch32/' \
	--benchmark_min_time=0.01 2>&1)
echo "$out" | grep -E '^BM_post_write64_batch32/manual_time .*ns_per_wqe=' ||
	{ echo "FAIL: ssq_micro did not report BM_post_write64_batch32"; echo "$out"; exit 1; }

# The single-post pair, without and with the spinlock: both report, and
# their signaled WQEs came back (a SkipWithError line has no counters).
out=$("$build/bench/ssq_micro" --benchmark_filter='BM_post_write64_single_host' \
	--benchmark_min_time=0.01 2>&1)
for l in 0 1; do
	echo "$out" | grep -E "^BM_post_write64_single_host/spinlock:$l/manual_time .*completions=[1-9].*ns_per_wqe=" ||
		{ echo "FAIL: ssq_micro did not report BM_post_write64_single_host/spinlock:$l"; echo "$out"; exit 1; }
done

# Two threads posting single WQEs on one queue, plain and combined: both
# report (neither waits for the other for ever: no device thread; whoever
# finds the ring full runs the device).
out=$("$build/bench/ssq_micro" --benchmark_filter='BM_reserve_publish(_combined)?/real_time/threads:2$' \
	--benchmark_min_time=0.01 2>&1)
for b in BM_reserve_publish BM_reserve_publish_combined; do
	echo "$out" | grep -E "^$b/real_time/threads:2 .*items_per_second=" ||
		{ echo "FAIL: ssq_micro did not report $b/real_time/threads:2"; echo "$out"; exit 1; }
done

budget() { # what, count, limit
	[[ $2 =~ ^[0-9]+$ ]] || { echo "FAIL: wqe-insns.sh $1: last line '$2'"; exit 1; }
	echo "instructions per WQE, $1: $2 (budget $3)"
	[ "$2" -le "$3" ] || { echo "FAIL: $1: $2 instructions, budget $3"; exit 1; }
}
budget "1-SGE RDMA WRITE built" "$("$src/scripts/wqe-insns.sh" "$build" | tail -n1)" 40
budget "posted and reaped on a shared queue" \
	"$("$src/scripts/wqe-insns.sh" --post "$build" | tail -n1)" 150
budget "posted as verbs lists (ssq_post_wr) and reaped" \
	"$("$src/scripts/wqe-insns.sh" --post-wr "$build" | tail -n1)" 320
budget "posted one by one (ssq_post_write) and reaped" \
	"$("$src/scripts/wqe-insns.sh" --post-single "$build" | tail -n1)" 330
budget "posted one by one through combining, alone, and reaped" \
	"$("$src/scripts/wqe-insns.sh" --post-combined "$build" | tail -n1)" 430
