#!/usr/bin/env bash
# ssq_write_bw --queue-pick (issue 29): each sender opens "any" once and
# ssqd gives it one of the -q queues. With -P 2 -q 2 the two senders land on
# distinct queues (said after the table), the data arrives (full mode: the
# tool checks the destination) in lockfree, spinlock (the picked queue's
# own lock) and combine, and over the emulated wire (the grant of the
# picked queue); the banner and the record say so; the modes and tools it
# does not fit are refused naming --queue-pick; scripts/many-senders.sh
# runs MODE/qK+pick beside MODE/qK and prints its ratio column, and with
# --cpu the senders' CPU ns per WQE the records carry.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
src=${SSQ_SOURCE_DIR:?}
export SSQD=${SSQD:-$build/ssqd}
unset SSQ_SOCKET
bin=$build/bench/perftest
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Two senders, two queues: distinct picks, named on stderr.
distinct() { # name file
	local line
	line=$(grep -m1 -- '^ Queue pick      : senders on' "$2" || true)
	[[ $line =~ senders\ on\ q([01])\ q([01])$ ]] && [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ] ||
		bad "$1: not one sender per queue: '$line'"
}

for m in lockfree spinlock combine; do
	if SSQ_EMU_MODE=full "$bin/ssq_write_bw" --mode "$m" -P 2 -q 2 --queue-pick -n 501 -s 64 \
		--json "$tmp/$m.json" >"$tmp/$m.out" 2>&1; then
		distinct "$m" "$tmp/$m.out"
		grep -q '^ Queue pick      : ssqd.s, one of the 2 per sender' "$tmp/$m.out" ||
			bad "$m: the banner does not say Queue pick"
		grep -q '"queue_pick": true' "$tmp/$m.json" || bad "$m: the record does not say queue_pick"
		grep -A1 '#bytes' "$tmp/$m.out" | tail -n1 | grep -q '^ 64 *1002 ' ||
			bad "$m: row $(grep -A1 '#bytes' "$tmp/$m.out" | tail -n1)"
	else
		cat "$tmp/$m.out"
		bad "ssq_write_bw --mode $m -q 2 --queue-pick failed"
	fi
done
SSQ_EMU_MODE=sink "$bin/ssq_write_bw" -P 1 -n 100 -s 64 --json "$tmp/plain.json" >/dev/null 2>&1 &&
	grep -q '"queue_pick": false' "$tmp/plain.json" ||
	bad "without --queue-pick the record does not say queue_pick false"

# Over the wire each queue has its own grant: the picked one's must be used.
if SSQ_EMU_MODE=full "$bin/ssq_write_bw" --wire -P 2 -q 2 --queue-pick -n 300 -s 64 \
	>"$tmp/wire.out" 2>&1; then
	distinct wire "$tmp/wire.out"
else
	cat "$tmp/wire.out"
	bad "ssq_write_bw --wire -q 2 --queue-pick failed"
fi

refused() { # what, then the command
	local what=$1 out
	shift
	if out=$("$@" 2>&1); then
		bad "$*: exit 0"
	elif ! grep -q -- "$what" <<<"$out"; then
		bad "$*: does not say '$what': $(head -n2 <<<"$out")"
	fi
}
refused "--queue-pick with --mode proxy" "$bin/ssq_write_bw" --mode proxy -q 2 --queue-pick -n 10
refused "--queue-pick with --mode qp-per-process" "$bin/ssq_write_bw" --mode qp-per-process --queue-pick -n 10
refused "--queue-pick with --peers" "$bin/ssq_write_bw" --peers 2 --queue-pick -n 10
refused "--queue-pick: the bandwidth tools only" "$bin/ssq_write_lat" --queue-pick -n 10
grep -q -- '--queue-pick' <("$bin/ssq_write_bw" -h) || bad "-h does not list --queue-pick"

# The many-senders script runs it beside the tool's own spreading.
if SSQ_EMU_MODE=sink bash "$src/scripts/many-senders.sh" --build "$build" --total 4 --procs 1 \
	--modes "lockfree/q2 lockfree/q2+pick" --base lockfree/q2+pick >"$tmp/ms.out" 2>&1; then
	cat "$tmp/ms.out"
	grep -q 'lockfree/q2+pick/lockfree/q2' "$tmp/ms.out" || bad "many-senders: no ratio column"
	# A rate, not a speed: on a loaded machine a 1 s run may print 0.00,
	# and its ratio "-".
	grep -qE '^1 +\| [0-9.]+ / [0-9.]+ +\| [0-9.]+ / [0-9.]+ +\| ([0-9.]+|-) ' "$tmp/ms.out" ||
		bad "many-senders: no row of rates for P = 1"
else
	cat "$tmp/ms.out"
	bad "many-senders.sh --modes 'lockfree/q2 lockfree/q2+pick' failed"
fi
# --cpu: the senders' CPU ns per WQE from the records, a whole number each.
if SSQ_EMU_MODE=sink bash "$src/scripts/many-senders.sh" --build "$build" --total 2 --procs 1 \
	--modes "lockfree/q2+pick" --base lockfree/q2+pick --cpu >"$tmp/msc.out" 2>&1; then
	grep -qE '^1 +\| [0-9]+ / [0-9]+ ' "$tmp/msc.out" || { cat "$tmp/msc.out"; bad "many-senders --cpu: no row of ns"; }
	grep -q "CPU ns per WQE" "$tmp/msc.out" || bad "many-senders --cpu: does not say CPU ns"
else
	cat "$tmp/msc.out"
	bad "many-senders.sh --cpu failed"
fi
grep -qE '"sender_cpu_ns_per_wqe": [0-9]*[1-9]' "$tmp/lockfree.json" ||
	bad "the record has no sender_cpu_ns_per_wqe above 0"
refused "want MODE/qK" bash "$src/scripts/many-senders.sh" --build "$build" --modes lockfree/x2

exit "$fail"
