#!/usr/bin/env bash
# Count, with callgrind, the instructions ssq spends per WQE (repeatable,
# unlike timings on a shared machine). Builds what it needs; prints the
# count per WQE alone on its last line.
#
#   scripts/wqe-insns.sh [BUILD_DIR]          building one 1-SGE RDMA WRITE
#       WQE in a send queue ring: the producer index, the ctrl, raddr and
#       data segments, advancing the index (no doorbell; bench/wqe_insns.c)
#   scripts/wqe-insns.sh --post [BUILD_DIR]   the whole host side of a
#       shared-queue post, per WQE, in batches of 32 64-byte WRITEs with one
#       signaled: reserve, build, publish, submit (fence, scan, CAS, lease,
#       DBR, doorbell), and reaping: CQ lease, routing, completion ring
#       (bench/post_insns.c; the device's work is not counted)
#   scripts/wqe-insns.sh --post-wr [BUILD_DIR]   the same 32 WRITEs as a
#       verbs ibv_send_wr list through ssq_post_wr, and reaping
#   scripts/wqe-insns.sh --post-combined [BUILD_DIR]   the same 32 WRITEs
#       one by one through ssq_post_write_combined by one producer, each
#       batch ending in ssq_combine_flush, and reaping
#   scripts/wqe-insns.sh --post-single [BUILD_DIR]   the same 32 WRITEs one
#       by one through ssq_post_write (a reservation and a doorbell each),
#       and reaping: what --post-combined is measured against
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
what=build
if [ "${1:-}" = --post ]; then
	what=post
	shift
elif [ "${1:-}" = --post-wr ]; then
	what=post_wr
	shift
elif [ "${1:-}" = --post-combined ]; then
	what=post_combined
	shift
elif [ "${1:-}" = --post-single ]; then
	what=post_single
	shift
fi
build=${1:-$here/build}

case $what in
build) prog=wqe_insns calls=1000 per=1
	toggles=(--toggle-collect=bench_build_write_1sge) ;;
post) prog=post_insns calls=1000 per=32
	toggles=(--toggle-collect=bench_post_batch32 --toggle-collect=bench_reap) ;;
post_wr) prog=post_insns calls=1000 per=32 extra=wr
	toggles=(--toggle-collect=bench_post_wr32 --toggle-collect=bench_reap) ;;
post_combined) prog=post_insns calls=1000 per=32 extra=combined
	toggles=(--toggle-collect=bench_post_combined32 --toggle-collect=bench_reap) ;;
post_single) prog=post_insns calls=1000 per=32 extra=single
	toggles=(--toggle-collect=bench_post_single32 --toggle-collect=bench_reap) ;;
esac

command -v valgrind >/dev/null || "$here/scripts/install-deps.sh"
if [ ! -x "$build/bench/$prog" ]; then
	cmake -S "$here" -B "$build" >/dev/null
	cmake --build "$build" --target "$prog" -j"$(nproc)" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind "${toggles[@]}" \
	--callgrind-out-file="$out/cg.out" "$build/bench/$prog" "$calls" ${extra:+"$extra"} \
	>/dev/null 2>"$out/log" || {
	cat "$out/log" >&2
	exit 1
}
total=$(awk '/^summary:/ {print $2}' "$out/cg.out")
[ -n "$total" ] || { echo "wqe-insns: no callgrind summary in $out/cg.out" >&2; exit 1; }
wqes=$((calls * per))
case $what in
build)
	echo "callgrind: $total instructions in $calls calls of bench_build_write_1sge"
	echo "instructions per 1-SGE RDMA WRITE WQE (index, ctrl + raddr + data segments):" ;;
post)
	echo "callgrind: $total instructions posting and reaping $wqes WQEs ($calls batches of $per)"
	echo "host instructions per WQE (reserve, build, publish, submit, route, poll):" ;;
post_wr)
	echo "callgrind: $total instructions posting and reaping $wqes WQEs ($calls verbs lists of $per)"
	echo "host instructions per WQE (ibv_send_wr translated and checked, then as --post):" ;;
post_combined)
	echo "callgrind: $total instructions posting and reaping $wqes WQEs ($calls batches of $per combined posts)"
	echo "host instructions per WQE (one producer's combined posts, settled, and reaping):" ;;
post_single)
	echo "callgrind: $total instructions posting and reaping $wqes WQEs ($calls batches of $per single posts)"
	echo "host instructions per WQE (ssq_post_write: reserve, build, publish, submit each; reaping):" ;;
esac
echo $((total / wqes))
