#!/usr/bin/env bash
# Count, with callgrind, the instructions ssq spends building one 1-SGE RDMA
# WRITE WQE in a send queue ring: taking the producer index, writing the
# ctrl, raddr and data segments, advancing the index (no doorbell). Builds
# what it needs; prints the count per WQE alone on its last line.
#
#   scripts/wqe-insns.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
calls=1000

command -v valgrind >/dev/null || "$here/scripts/install-deps.sh"
if [ ! -x "$build/bench/wqe_insns" ]; then
	cmake -S "$here" -B "$build" >/dev/null
	cmake --build "$build" --target wqe_insns -j"$(nproc)" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --toggle-collect=bench_build_write_1sge \
	--callgrind-out-file="$out/cg.out" "$build/bench/wqe_insns" "$calls" >/dev/null 2>"$out/log" || {
	cat "$out/log" >&2
	exit 1
}
total=$(awk '/^summary:/ {print $2}' "$out/cg.out")
[ -n "$total" ] || { echo "wqe-insns: no callgrind summary in $out/cg.out" >&2; exit 1; }
echo "callgrind: $total instructions in $calls calls of bench_build_write_1sge"
echo "instructions per 1-SGE RDMA WRITE WQE (index, ctrl + raddr + data segments):"
echo $((total / calls))
