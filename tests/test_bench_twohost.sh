#!/usr/bin/env bash
# The perftest-style tools across two hosts, on one machine: two ssqd on the
# emulated device, B --listen and A --connect (RC over the emulated wire),
# the tool's server on B's socket (--server) and its client on A's (server
# name 127.0.0.1), talking over the TCP side channel (-p). Both exit 0, the
# client prints perftest's table and the server's verdict, the server says
# what it checked: write_bw's data landed in B's arena (qp-per-process with
# -q 2 too), every SEND of send_bw is in B's receive pool log, atomic_bw's
# counter equals the messages completed, read_bw runs (proxy mode),
# write_lat and send_lat ping-pong (the server echoes every WRITE back into
# the client's arena, every SEND into the client's ssqd's receive log; the
# client's latency table, RTT/2). Refused, by name, non-zero: --ssq_socket
# to a peer-mode ssqd with no role; a different -s or a different tool on
# the two sides (both sides fail); a frame without the magic; a role against a
# loopback ssqd; a server with --timeout and no client.
. "$(dirname "$0")/bench_common.sh"
ssqd=${SSQD:-$build/ssqd}

# B (--listen) and A (--connect), each at a socket of its own.
emu=("$ssqd" --device emu --hugepages=off --queues 4 --data-mib 16)
pair_b=("${emu[@]}" --socket "$tmp/b.sock")
pair_a=("${emu[@]}" --socket "$tmp/a.sock")
start_pair

# A bandwidth table's row right after the header: #bytes #iterations ...
row_ok() { # name size iterations
	local row b it pk av rate
	row=$(grep -A1 '#bytes' "$tmp/cli.out" | tail -n1)
	read -r b it pk av rate <<<"$row" || true
	[ "$b" = "$2" ] && [ "$it" = "$3" ] || bad "$1: row '$row', want $2 bytes, $3 iterations"
	# MsgRate has 6 decimals; BW's 2 may show 0.00 for a slow run under load.
	awk -v r="$rate" -v p="$pk" -v a="$av" 'BEGIN { exit !(r > 0 && p >= a) }' ||
		bad "$1: row '$row': rate > 0, peak >= average"
}

# A latency table's row: #bytes #iterations t_min t_max t_typical ...
lat_row() { # name size iterations
	local row b it tmin tmax ttyp rest
	row=$(grep -A1 '#bytes' "$tmp/cli.out" | tail -n1)
	read -r b it tmin tmax ttyp rest <<<"$row" || true
	[ "$b" = "$2" ] && [ "$it" = "$3" ] || bad "$1: row '$row', want $2 bytes, $3 iterations"
	awk -v a="$tmin" -v t="$ttyp" -v m="$tmax" 'BEGIN { exit !(a > 0 && a <= t && t <= m) }' ||
		bad "$1: row '$row': 0 < t_min <= t_typical <= t_max"
}

both_ok() { # name
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		echo "--- client"; cat "$tmp/cli.out"; echo "--- server"; cat "$tmp/srv.out"
		bad "$1: client exit $crc, server exit $src"
		return 1
	fi
	grep -q 'every check passed' "$tmp/srv.out" || bad "$1: the server did not say its checks passed"
	cat "$tmp/cli.out"
}

# --ssq_socket to a peer-mode ssqd with no role: refused, saying how to run two hosts.
if "$bin/ssq_write_bw" --ssq_socket="$tmp/a.sock" -n 100 >"$tmp/norole.out" 2>&1; then
	bad "--ssq_socket to a peer-mode ssqd without a role ran"
fi
grep -q 'has a peer ssqd' "$tmp/norole.out" && grep -q -- '--server' "$tmp/norole.out" ||
	{ cat "$tmp/norole.out"; bad "no-role refusal does not say why and how"; }

pair ssq_write_bw "-s 256" -s 256 -P 2 -n 3000 --json "$tmp/w.json"
if both_ok "write_bw"; then
	row_ok write_bw 256 6000
	grep -q 'server: 256 bytes: the data landed in the server' "$tmp/cli.out" ||
		bad "write_bw: the client does not print the server's verdict"
	grep -q 'the data landed' "$tmp/srv.out" || bad "write_bw: the server did not check the data"
	grep -q '"transport": "two-host"' "$tmp/w.json" || bad "write_bw: JSON transport"
	grep -q '^ Data ex. method : Ethernet' "$tmp/cli.out" || bad "write_bw: banner's data exchange"
fi

pair ssq_write_bw "-s 100" -s 100 -P 2 -q 2 --mode qp-per-process -n 1001 -l 4 -Q 16 -I 128
if both_ok "write_bw qp-per-process -q 2"; then
	row_ok "write_bw qp-per-process" 100 2002
	grep -q 'the data landed' "$tmp/srv.out" || bad "write_bw qp-per-process: data not checked"
fi

pair ssq_send_bw "-s 64" -s 64 -P 2 -q 2 -n 2000
if both_ok "send_bw"; then
	row_ok send_bw 64 4000
	grep -q '4000 SENDs in the receive pool' "$tmp/srv.out" || bad "send_bw: the server's log check"
fi

pair ssq_atomic_bw "" -n 2000
if both_ok "atomic_bw"; then
	row_ok atomic_bw 8 2000
	grep -q 'counter is 2000, 2000 completed' "$tmp/srv.out" || bad "atomic_bw: the counter check"
fi

pair ssq_read_bw "-s 64" -s 64 -P 2 --mode proxy -n 1000
both_ok "read_bw proxy" && row_ok "read_bw proxy" 64 2000

# Mismatches: both sides refuse, naming what differs.
pair ssq_write_bw "-s 64" -s 128 -n 100
[ "$crc" != 0 ] && [ "$src" != 0 ] || bad "a different -s ran (client $crc, server $src)"
grep -q -- '-s differs' "$tmp/cli.out" && grep -q -- '-s differs' "$tmp/srv.out" ||
	{ cat "$tmp/cli.out" "$tmp/srv.out"; bad "-s mismatch not named on both sides"; }
# A send_bw server, a write_bw client.
sp=$(port)
"$bin/ssq_send_bw" --ssq_socket="$tmp/b.sock" --server -p "$sp" --timeout 60 -s 64 >"$tmp/srv.out" 2>&1 &
spid=$!
pids+=($spid)
crc=0
"$bin/ssq_write_bw" --ssq_socket="$tmp/a.sock" -p "$sp" -s 64 -n 100 127.0.0.1 >"$tmp/cli.out" 2>&1 || crc=$?
src=0
wait "$spid" || src=$?
[ "$crc" != 0 ] && [ "$src" != 0 ] || bad "a different tool ran (client $crc, server $src)"
grep -q 'run the same tool' "$tmp/cli.out" || { cat "$tmp/cli.out"; bad "tool mismatch not named"; }

# write_lat: perftest's ping-pong, the server WRITEs each slot back.
pair ssq_write_lat "-s 64" -s 64 -P 2 -n 300
if both_ok "write_lat"; then
	lat_row write_lat 64 600
	grep -q '600 WRITEs echoed back (600 completed), 600 sent' "$tmp/srv.out" ||
		bad "write_lat: the server's echo count"
	grep -q 'RTT/2' "$tmp/cli.out" || bad "write_lat: does not say it reports RTT/2"
fi

# send_lat: the server SENDs every message back through the same queue.
pair ssq_send_lat "-s 64" -s 64 -P 2 -q 2 -n 200
if both_ok "send_lat"; then
	lat_row send_lat 64 400
	grep -q '400 SENDs echoed back (400 completed), 400 sent' "$tmp/srv.out" ||
		bad "send_lat: the server's echo count"
fi

# Something else on the side channel: refused by its magic.
sp=$(port)
"$bin/ssq_write_bw" --ssq_socket="$tmp/b.sock" --server -p "$sp" --timeout 60 >"$tmp/srv.out" 2>&1 &
spid=$!
pids+=($spid)
server_ready "$spid"
head -c 252 /dev/zero >"/dev/tcp/127.0.0.1/$sp" || bad "could not reach the server's port"
src=0
wait "$spid" || src=$?
[ "$src" != 0 ] && grep -q 'not an ssq perftest peer' "$tmp/srv.out" ||
	{ cat "$tmp/srv.out"; bad "a stray frame was not refused by its magic"; }

# A server that no client comes to ends after --timeout, non-zero.
sp=$(port)
t0=$(date +%s)
if "$bin/ssq_write_bw" --ssq_socket="$tmp/b.sock" --server -p "$sp" --timeout 1 >"$tmp/to.out" 2>&1; then
	bad "a server with no client exited 0"
fi
grep -q 'no client on TCP port' "$tmp/to.out" || bad "server timeout: $(cat "$tmp/to.out")"
[ $(($(date +%s) - t0)) -lt 30 ] || bad "server --timeout 1 took $(($(date +%s) - t0)) s"

# A role against an ssqd without a peer: refused.
"$ssqd" --device emu --hugepages=off --queues 1 --data-mib 4 --socket "$tmp/l.sock" \
	>"$tmp/l.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -S "$tmp/l.sock" ] && break; sleep 0.05; done
if "$bin/ssq_write_bw" --ssq_socket="$tmp/l.sock" --server --timeout 1 >"$tmp/lb.out" 2>&1; then
	bad "--server against a loopback ssqd ran"
fi
grep -q 'has no peer ssqd' "$tmp/lb.out" || bad "loopback --server refusal: $(cat "$tmp/lb.out")"

exit $fail
