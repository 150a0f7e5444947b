#!/usr/bin/env bash
# Runs one example against a private ssqd on the emulated device: starts
# ssqd with its own socket ($SSQ_SOCKET), waits until it serves, runs the
# example, stops ssqd. The example's exit status is the result.
#   run_example.sh SSQD EXAMPLE
set -euo pipefail
ssqd=$1
example=$2
work=$(mktemp -d)
pid=
peer=
cleanup() {
	for p in $pid $peer; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
export SSQ_SOCKET=$work/ssqd.sock
# An example named two_hosts gets a second ssqd, "host B", linked to the
# first over the emulated wire: its socket in $SSQ_PEER_SOCKET.
peer_args=()
if [[ $(basename "$example") == *two_hosts* ]]; then
	port=$((10000 + RANDOM % 20000)) # below the ephemeral ports (32768..): no dial takes it
	peer_args=(--listen "$port")
	export SSQ_PEER_SOCKET=$work/peer.sock
	"$ssqd" --device emu --hugepages=off --data-mib 8 --socket "$SSQ_PEER_SOCKET" \
		--connect "127.0.0.1:$port" >"$work/peer.log" 2>&1 &
	peer=$!
fi
serving() { # log pid
	for _ in $(seq 200); do
		grep -q "serving" "$1" && return 0
		kill -0 "$2" 2>/dev/null || { cat "$1"; exit 1; }
		sleep 0.05
	done
}
# An example named cluster_send gets the README's cluster on one machine:
# alice (this ssqd), bob and carol from one peers file. bob keeps ssqd's
# per-buffer keys and is named with its socket (the example allocates its
# destination there); carol runs --arena-rkey and is named alone (the
# example addresses its arena by offset with the arena key).
declare -A peer_pid
if [[ $(basename "$example") == *cluster_send* ]]; then
	for name in alice bob carol; do
		echo "$name 127.0.0.1:$((10000 + RANDOM % 20000))"
	done >"$work/peers"
	for name in bob carol; do
		port=$(awk -v n=$name '$1 == n { sub(/.*:/, "", $2); print $2 }' "$work/peers")
		keys=()
		[[ $name == carol ]] && keys=(--arena-rkey)
		"$ssqd" --device emu --hugepages=off --data-mib 8 --name "$name" \
			--peers "$work/peers" --listen "$port" "${keys[@]}" \
			--socket "$work/$name.sock" >"$work/$name.log" 2>&1 &
		peer="$peer $!"
		peer_pid[$name]=$!
	done
	port=$(awk '$1 == "alice" { sub(/.*:/, "", $2); print $2 }' "$work/peers")
	peer_args=(--name alice --peers "$work/peers" --listen "$port")
fi
"$ssqd" --device emu --hugepages=off --data-mib 8 "${peer_args[@]}" >"$work/log" 2>&1 &
pid=$!
serving "$work/log" "$pid"
args=()
if [[ $(basename "$example") == *two_hosts* ]]; then
	serving "$work/peer.log" "$peer"
fi
if [[ $(basename "$example") == *cluster_send* ]]; then
	for name in bob carol; do
		serving "$work/$name.log" "${peer_pid[$name]}"
	done
	args=("bob=$work/bob.sock" carol)
	export SSQ_NAME=alice # the name bob's grant gives its queue to us
fi
"$example" "${args[@]}"
