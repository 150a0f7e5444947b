#!/usr/bin/env bash
# The perftest-style tools' several-peers mode (--peers): the tool starts a
# cluster on the emulated wire, this host's ssqd ("here") and one per peer,
# and every sender spreads its batches over the peers' queues PEER/q<k>.
# ssq_write_bw in every --mode lands every sender's data in every peer's
# arena (the tool checks each destination and fails naming the peer);
# --json says "transport": "cluster", the peers and the QPs the sending host
# used (lockfree: -q x peers; qp-per-process: -P x -q x peers); ssq_read_bw
# and ssq_atomic_bw run over peers; a count names peers peer1..peerN, a
# peers file (ssqd's format) by its names.
# Against a running cluster (three ssqd started here: alice, bob, carol):
# the client on alice with --ssq_socket and --peers bob@HOST:PORT,carol@...
# talks to a --server on each of bob and carol, which finds its queue to
# alice by QPN and checks its share (write_bw: the data; atomic_bw: its
# counter equals the messages sent to that peer, so the shares add up to
# the run); the cluster's peers file works as the list, this host's own
# line left out; a server on the wrong peer refuses, saying so. Bad --peers
# values and combinations are refused naming what was wrong, and start
# nothing.
. "$(dirname "$0")/bench_common.sh"
export SSQD=${SSQD:-$build/ssqd}

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

# A peers file names the tool's own cluster too (their addresses unused).
printf 'nodeB 10.0.0.2:24601\n\n# nodeX 10.0.0.9:1\nnodeC 10.0.0.3:24601 # c\n' >"$tmp/peers"
if "$bin/ssq_write_bw" --peers "$tmp/peers" -n 200 -s 64 --json "$tmp/file.json" \
	>"$tmp/file.out" 2>&1; then
	grep -q 'here) and nodeB nodeC$' "$tmp/file.out" || bad "--peers FILE: not nodeB and nodeC"
	[ "$(field "$tmp/file.json" host_qps)" = 2 ] || bad "--peers FILE: host_qps, want 2"
else
	cat "$tmp/file.out"; bad "ssq_write_bw --peers FILE failed"
fi

# READ and fetch-and-add against each peer's arena; a count of peers.
for t in read_bw atomic_bw; do
	"$bin/ssq_$t" --peers 2 -P 2 -n 300 --json "$tmp/$t.json" >"$tmp/$t.out" 2>&1 ||
		{ cat "$tmp/$t.out"; bad "ssq_$t --peers 2 failed"; continue; }
	grep -q 'here) and peer1 peer2' "$tmp/$t.out" || bad "$t: peers not named peer1 peer2"
	[ "$(field "$tmp/$t.json" host_qps)" = 2 ] || bad "$t: host_qps, want 2"
done

# A running cluster of three, linked on demand; a server on bob and carol.
declare -A lp
for n in alice bob carol; do lp[$n]=$(port); done
for n in alice bob carol; do
	args=()
	for m in alice bob carol; do
		[ $m = $n ] || args+=(--peer "$m=127.0.0.1:${lp[$m]}")
	done
	"$SSQD" --device emu --hugepages=off --queues 2 --data-mib 16 --name $n \
		--listen "${lp[$n]}" --socket "$tmp/$n.sock" "${args[@]}" >"$tmp/$n.log" 2>&1 &
	pids+=($!)
done
# And a loopback one, which has no peers at all.
"$SSQD" --device emu --hugepages=off --queues 1 --data-mib 16 --socket "$tmp/loop.sock" \
	>"$tmp/loop.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
	[ -S "$tmp/loop.sock" ] && [ -S "$tmp/alice.sock" ] && [ -S "$tmp/bob.sock" ] && [ -S "$tmp/carol.sock" ] && break
	sleep 0.05
done
# Run tool $1 (flags: the rest) with a server on bob and on carol.
cluster_run() {
	local t=$1 sb sc
	shift
	sb=$(port) sc=$(port)
	"$bin/ssq_$t" --ssq_socket="$tmp/bob.sock" --server -p "$sb" --timeout 30 -s 64 \
		>"$tmp/srv-bob.out" 2>&1 &
	pids+=($!)
	srv=($!)
	"$bin/ssq_$t" --ssq_socket="$tmp/carol.sock" --server -p "$sc" --timeout 30 -s 64 \
		>"$tmp/srv-carol.out" 2>&1 &
	pids+=($!)
	srv+=($!)
	"$bin/ssq_$t" --ssq_socket="$tmp/alice.sock" \
		--peers "bob@127.0.0.1:$sb,carol@127.0.0.1:$sc" "$@" >"$tmp/cli.out" 2>&1
}
if cluster_run write_bw -P 2 -q 2 -n 400 -s 64; then
	grep -q '^ssq_write_bw: server: 64 bytes: .* (bob)$' "$tmp/cli.out" &&
		grep -q '^ssq_write_bw: server: 64 bytes: .* (carol)$' "$tmp/cli.out" ||
		{ cat "$tmp/cli.out"; bad "running cluster: no verdict from both servers"; }
	grep -q 'found by its QPN' "$tmp/srv-bob.out" || bad "bob's server did not look its queue up by QPN"
	grep -qE "^ 64 +800 " <(grep -A1 '#bytes' "$tmp/cli.out") || bad "running cluster: not 800 messages"
else
	cat "$tmp/cli.out" "$tmp/srv-bob.out" "$tmp/srv-carol.out"; bad "write_bw against a running cluster failed"
fi
wait "${srv[@]}" || true
# 2 senders x 501 over 2 peers x 2 queues: lanes 126+125 | 125+125 each.
if cluster_run atomic_bw -P 2 -q 2 -n 501; then
	grep -q 'counter is 502, 502 completed (bob)$' "$tmp/cli.out" &&
		grep -q 'counter is 500, 500 completed (carol)$' "$tmp/cli.out" ||
		{ cat "$tmp/cli.out"; bad "atomic_bw: each server's counter is not its share (502, 500)"; }
else
	cat "$tmp/cli.out" "$tmp/srv-bob.out" "$tmp/srv-carol.out"; bad "atomic_bw against a running cluster failed"
fi
wait "${srv[@]}" || true
# The cluster's peers file, as ssqd reads it: this host's own line left
# out, each peer's server at its HOST (-p: its port).
sb=$(port)
printf 'alice 127.0.0.1:%s\n# a comment\nbob 127.0.0.1:%s  # bob\n' "${lp[alice]}" "${lp[bob]}" \
	>"$tmp/cluster.peers"
"$bin/ssq_write_bw" --ssq_socket="$tmp/bob.sock" --server -p "$sb" --timeout 30 -s 64 \
	>"$tmp/srv-file.out" 2>&1 &
pids+=($!)
srv=($!)
if "$bin/ssq_write_bw" --ssq_socket="$tmp/alice.sock" --peers "$tmp/cluster.peers" -p "$sb" \
	-n 200 -s 64 >"$tmp/cli.out" 2>&1; then
	grep -q "alice is not a peer of the ssqd at .* left out" "$tmp/cli.out" ||
		bad "--peers FILE: alice's own line not left out, saying so"
	grep -q '^ssq_write_bw: server: 64 bytes: .* (bob)$' "$tmp/cli.out" ||
		{ cat "$tmp/cli.out"; bad "--peers FILE: no verdict from bob's server"; }
else
	cat "$tmp/cli.out" "$tmp/srv-file.out"; bad "write_bw --peers FILE against the cluster failed"
fi
wait "${srv[@]}" || true

# carol's server where the client expects bob's: refused by the server.
sb=$(port)
"$bin/ssq_write_bw" --ssq_socket="$tmp/carol.sock" --server -p "$sb" --timeout 30 -s 64 \
	>"$tmp/srv-wrong.out" 2>&1 &
pids+=($!)
srv=($!)
if "$bin/ssq_write_bw" --ssq_socket="$tmp/alice.sock" --peers "bob@127.0.0.1:$sb" -n 10 -s 64 \
	>"$tmp/cli.out" 2>&1; then
	bad "a server on the wrong peer (carol for bob) was accepted"
fi
grep -q "the client's ssqd is not this one's peer" "$tmp/cli.out" ||
	{ cat "$tmp/cli.out"; bad "the wrong peer's server does not say why"; }
wait "${srv[@]}" || true

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
refuse "want 1..64 peers" "$w" --peers 0
refuse "want 1..64 peers" "$w" --peers 65
refuse "nodeB named twice" "$w" --peers nodeB,nodeC,nodeB
refuse "'here' is the sending ssqd's own name" "$w" --peers here
refuse "'no:de': want A-Z a-z 0-9 . _ -" "$w" --peers no:de
refuse "a trailing comma" "$w" --peers nodeB,
refuse "a name of 0 characters" "$w" --peers nodeB,,nodeC
refuse "a name of 24 characters" "$w" --peers abcdefghijklmnopqrstuvwx
refuse "more than 64 peers" "$w" --peers "$(seq -s, -f p%g 65)"
refuse "queues 32 x 3 peers = 96, more than ssqd's 64" "$w" --peers 3 -P 8 -q 4 --mode qp-per-process
refuse "--peers with --wire" "$w" --peers 2 --wire
refuse "--peers N with --ssq_socket" "$w" --peers 2 --ssq_socket=/tmp/nowhere
refuse "--peers '/nonexistent/peers': No such file" "$w" --peers /nonexistent/peers
printf 'nodeB\n' >"$tmp/bad.peers"
refuse "line 1: want NAME HOST:PORT" "$w" --peers "$tmp/bad.peers"
refuse "where a peer's server runs is for a running cluster" "$w" --peers bob@h:1
refuse "want NAME@HOST or NAME@HOST:PORT" "$w" --peers bob@h:0 --ssq_socket=/tmp/x
refuse "want NAME@HOST or NAME@HOST:PORT" "$w" --peers bob@ --ssq_socket=/tmp/x
refuse "--peers with --server" "$w" --peers bob --server --ssq_socket=/tmp/x
refuse "has no peer ssqd" env SSQ_EMU_MODE=sink "$w" --peers bob --ssq_socket="$tmp/loop.sock"
refuse "--peers with ssq_write_lat" "$bin/ssq_write_lat" --peers 2
refuse "--peers with ssq_send_bw" "$bin/ssq_send_bw" --peers 2
refuse "the sink device sends nothing" env SSQ_EMU_MODE=sink "$w" --peers 2 -n 10
exit $fail
