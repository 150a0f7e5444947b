#!/usr/bin/env bash
# Adversary, the perftest side channel's version 2 (HELLO carries the pong
# buffer's rkey): "a v1 peer is refused clearly". A v1 client's HELLO to a
# v2 --server: the server said so on its own side and hung up, and the v1
# client, waiting for WELCOME, could say only that the server closed the
# connection. The server now answers in its own frame (a refused WELCOME),
# which the version check of every version reads: the v1 client names both
# versions. Here the v1 client is a frame of version 1 written by hand.
# Fails while a client of another version gets no frame back.
. "$(dirname "$0")/bench_common.sh"
ssqd=${SSQD:-$build/ssqd}

emu=("$ssqd" --device emu --hugepages=off --data-mib 16)
pair_b=("${emu[@]}" --socket "$tmp/b.sock")
pair_a=("${emu[@]}" --socket "$tmp/a.sock")
start_pair

sp=$(port)
"$bin/ssq_write_bw" --ssq_socket="$tmp/b.sock" --server -p "$sp" --timeout 60 \
	>"$tmp/srv.out" 2>&1 &
spid=$!
pids+=($spid)
server_ready "$spid"
# A version-1 HELLO: magic "SSQPT2H", version 1, kind 1, zeros (252 bytes).
exec 3<>"/dev/tcp/127.0.0.1/$sp" || bad "could not reach the server's port"
{
	printf '\x00\x48\x32\x54\x50\x51\x53\x53\x00\x00\x00\x01\x00\x00\x00\x01'
	head -c 236 /dev/zero
} >&3
timeout 10 head -c 252 <&3 >"$tmp/reply" || true
exec 3<&-
src=0
wait "$spid" || src=$?
got=$(stat -c %s "$tmp/reply")
echo "the server's answer to a version-1 HELLO: $got bytes"
[ "$src" != 0 ] || bad "the server ran for a version-1 client"
grep -q 'speaks version 1, this tool 3' "$tmp/srv.out" ||
	{ cat "$tmp/srv.out"; bad "the server did not name the versions"; }
if [ "$got" = 252 ]; then
	# Magic, then the server's version (3), then WELCOME (2).
	hdr=$(head -c 16 "$tmp/reply" | od -An -tx1 | tr -d ' \n')
	[ "$hdr" = 00483254505153530000000300000002 ] || bad "answer header $hdr"
	text=$(tail -c 160 "$tmp/reply" | tr -d '\0')
	echo "its text: $text"
	case $text in *"version 3, the client 1"*) ;; *) bad "answer text '$text'" ;; esac
else
	bad "a version-1 client got $got bytes back, no frame naming the versions"
fi
exit $fail
