#!/usr/bin/env bash
# The perftest-style tools' several-peers mode (--peers): the tool starts a
# cluster on the emulated wire, this host's ssqd ("here") and one per peer,
# and every sender spreads its batches over the peers' queues PEER/q<k>.
# ssq_write_bw in every --mode lands every sender's data in every peer's
# arena (the tool checks each destination and fails naming the peer);
# --json says "transport": "cluster", the peers and the QPs the sending host
# used (lockfree: -q x peers; qp-per-process: -P x -q x peers); ssq_read_bw
# and ssq_atomic_bw run over peers; a count names peers peer1..peerN; bad
# --peers values and combinations are refused naming what was wrong, and
# start nothing.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
export SSQD=${SSQD:-$build/ssqd}
export SSQ_EMU_MODE=full
unset SSQ_SOCKET
bin=$build/bench/perftest
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# A record's numeric field.
field() { # file key
	sed -n "s/.*\"$2\": \\([0-9.]*\\).*/\\1/p" "$1" | head -n1
}

for mode in lockfree spinlock qp-per-process proxy; do
	out=$tmp/$mode.out json=$tmp/$mode.json
	if ! "$bin/ssq_write_bw" --peers nodeB,nodeC,nodeD -P 2 -q 2 -n 600 -s 64 \
		--mode "$mode" --json "$json" >"$out" 2>&1; then
		cat "$out"; bad "write_bw --peers --mode $mode failed"; continue
	fi
	row=$(grep -A1 '#bytes' "$out" | tail -n1)
	read -r b it _ _ rate <<<"$row" || true
	[ "$b" = 64 ] && [ "$it" = 1200 ] || bad "$mode: row '$row', want 64 bytes, 1200 iterations"
	awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || bad "$mode: MsgRate '$rate'"
	grep -q '"transport": "cluster"' "$json" || bad "$mode: no \"transport\": \"cluster\""
	want=6
	[ "$mode" = qp-per-process ] && want=12
	[ "$(field "$json" peers)" = 3 ] || bad "$mode: peers $(field "$json" peers), want 3"
	[ "$(field "$json" host_qps)" = $want ] || bad "$mode: host_qps $(field "$json" host_qps), want $want"
	grep -q "Number of qps   : $want" "$out" || bad "$mode: banner's Number of qps is not $want"
	grep -q 'this host.s (here) and nodeB nodeC nodeD' "$out" || bad "$mode: the cluster is not named"
done

# READ and fetch-and-add against each peer's arena; a count of peers.
for t in read_bw atomic_bw; do
	"$bin/ssq_$t" --peers 2 -P 2 -n 300 --json "$tmp/$t.json" >"$tmp/$t.out" 2>&1 ||
		{ cat "$tmp/$t.out"; bad "ssq_$t --peers 2 failed"; continue; }
	grep -q 'here) and peer1 peer2' "$tmp/$t.out" || bad "$t: peers not named peer1 peer2"
	[ "$(field "$tmp/$t.json" host_qps)" = 2 ] || bad "$t: host_qps, want 2"
done

# Refused, naming what was wrong, before any ssqd starts.
refuse() { # want-in-stderr args...
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		bad "accepted: $*"
	elif ! grep -qF -- "$want" <<<"$out"; then
		echo "$out" | head -n 3; bad "'$*' does not say '$want'"
	fi
}
w=$bin/ssq_write_bw
refuse "want 1..15 peers" "$w" --peers 0
refuse "want 1..15 peers" "$w" --peers 16
refuse "nodeB named twice" "$w" --peers nodeB,nodeC,nodeB
refuse "'here' is the sending ssqd's own name" "$w" --peers here
refuse "'no/de': want A-Z a-z 0-9 . _ -" "$w" --peers no/de
refuse "a trailing comma" "$w" --peers nodeB,
refuse "a name of 0 characters" "$w" --peers nodeB,,nodeC
refuse "a name of 24 characters" "$w" --peers abcdefghijklmnopqrstuvwx
refuse "more than 15 peers" "$w" --peers a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p
refuse "queues 8 x 3 peers = more than ssqd's 16" "$w" --peers 3 -P 4 -q 2 --mode qp-per-process
refuse "--peers with --wire" "$w" --peers 2 --wire
refuse "--peers with --ssq_socket" "$w" --peers 2 --ssq_socket=/tmp/nowhere
refuse "--peers with ssq_write_lat" "$bin/ssq_write_lat" --peers 2
refuse "--peers with ssq_send_bw" "$bin/ssq_send_bw" --peers 2
refuse "the sink device sends nothing" env SSQ_EMU_MODE=sink "$w" --peers 2 -n 10
exit $fail
