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
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
export SSQ_SOCKET=$work/ssqd.sock
"$ssqd" --device emu --hugepages=off --data-mib 8 >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 200); do
	grep -q "serving" "$work/log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/log"; exit 1; }
	sleep 0.05
done
"$example"
