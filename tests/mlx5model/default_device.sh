#!/usr/bin/env bash
# ssqd with no --device on a host whose ConnectX is named as rdma-core's
# udev rule names it (rocep1s0f0: the model of libmlx5 44 + mlx5_ib
# preloaded): it must pick that device (an mlx5 device by
# mlx5dv_is_supported), not the emulated one. Run by ctest
# (ctrl_default_device_mlx5model).
set -u
: "${SSQD:?run through ctest}" "${LD_PRELOAD:?the model must be preloaded}"
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
"$SSQD" --socket "$tmp/s.sock" --hugepages=off --data-mib 8 --sq-size 256 \
	>"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
	grep -q "queue(s) of" "$tmp/log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
line=$(grep "queue(s) of" "$tmp/log")
if ! grep -q " on rocep1s0f0 (mlx5)" <<<"$line"; then
	echo "FAIL: ssqd with no --device, a ConnectX named rocep1s0f0 present:"
	cat "$tmp/log"
	exit 1
fi
echo "ok: ssqd with no --device runs on rocep1s0f0: $line"
