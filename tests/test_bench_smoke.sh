#!/usr/bin/env bash
# The benchmarks run and report: ssq_micro prints BM_build_write_1sge with an
# items_per_second counter, and scripts/wqe-insns.sh ends with a bare
# instruction count, which must stay at or under 40 (a repeatable count from
# callgrind, not a timing; wqe_insns is built -O2 and unsanitized in every
# build).
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}

out=$("$build/bench/ssq_micro" --benchmark_filter='BM_build_write_1sge$' \
	--benchmark_min_time=0.01 2>&1)
echo "$out" | grep -E '^BM_build_write_1sge .*items_per_second=' ||
	{ echo "FAIL: ssq_micro did not report BM_build_write_1sge"; echo "$out"; exit 1; }

count=$("$src/scripts/wqe-insns.sh" "$build" | tail -n1)
[[ $count =~ ^[0-9]+$ ]] || { echo "FAIL: wqe-insns.sh last line '$count'"; exit 1; }
echo "instructions per 1-SGE RDMA WRITE WQE: $count"
[ "$count" -le 40 ] || { echo "FAIL: $count instructions, budget 40"; exit 1; }
