#!/usr/bin/env bash
# One command for a ConnectX lab: build ssq, list the mlx5 devices, and run
# the mlx5 backend end to end (ssqd on the device, loopback QPs on one port,
# several client processes attaching to the shared queue, an RDMA WRITE
# through it with the data checked, a client killed, ssqd killed). On a
# machine without an mlx5 device it says so and exits 0: nothing is
# pretended.
#
#   scripts/hw-check.sh [DEVICE]      e.g. mlx5_0 (default: the first)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build

mlx5=$(ls /sys/class/infiniband 2>/dev/null | grep '^mlx5' || true)
if [ -z "$mlx5" ]; then
	echo "hw-check: no mlx5 device in /sys/class/infiniband: nothing to check on this machine"
	echo "hw-check: (the emulated device is tested by scripts/test.sh)"
	exit 0
fi
dev=${1:-$(echo "$mlx5" | head -n1)}
echo "hw-check: mlx5 device(s): $(echo $mlx5); checking $dev"
"$here/scripts/build.sh" "$build"
echo "== ssqd --list-devices =="
"$build/ssqd" --list-devices
echo "== the mlx5 backend, end to end, on $dev =="
cd "$build"
SSQ_MLX5_DEVICE=$dev ctest -R '^ctrl_mlx5$' --output-on-failure
echo "hw-check: $dev passed"
