#!/usr/bin/env bash
# ssq's main job on this machine, from a fresh Debian 12 install: installs
# what is missing, builds, starts ssqd (on the first ConnectX, or on the
# emulated mlx5 device when there is none), runs several sender processes
# that share one send queue, checks the data, prints a perftest-style
# table, prints one WQE of every opcode decoded field by field, and stops
# ssqd. Its first line says which device it runs on.
#
#   scripts/demo.sh [-P procs] [-n iterations per process] [-s size]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build

"$here/scripts/build.sh" "$build" >/dev/null
# The first device libmlx5 drives, as ssqd lists them (mlx5dv_is_supported:
# by provider; rdma-core's udev rule names ConnectX devices rocep.../ibp...
# on Debian and Ubuntu, not mlx5_N).
mlx5=$("$build/ssqd" --list-devices | awk '/ \(node GUID 0x/ {print $1; exit}')
if [ -n "$mlx5" ]; then
	device=$mlx5
	echo "ssq demo: running on mlx5 device $mlx5 (loopback: both ends of each queue on this host)"
else
	device=emu
	echo "ssq demo: no mlx5 device (ssqd --list-devices): running on the emulated mlx5 device"
fi

run=$(mktemp -d)
sock=$run/ssqd.sock
"$build/ssqd" --device "$device" --socket "$sock" --sq-size 4096 --data-mib 64 \
	2>"$run/ssqd.log" &
daemon=$!
stop_daemon() {
	kill "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
	rm -rf "$run"
}
trap stop_daemon EXIT
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	kill -0 "$daemon" 2>/dev/null || { cat "$run/ssqd.log" >&2; exit 1; }
	sleep 0.1
done
head -n1 "$run/ssqd.log"
"$build/tools/ssq_demo" -S "$sock" -P 4 -n 200000 "$@"
echo
echo "--- one WQE of every opcode, as ssq builds them into the send queue, field by field ---"
"$build/tools/ssq_wqe_demo"
