#!/usr/bin/env bash
# ssq's main job on this machine, from a fresh Debian 12 install: installs
# what is missing, builds, and runs the demo. Its first line says which
# device the demo runs on.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build

mlx5=$(ls /sys/class/infiniband 2>/dev/null | grep '^mlx5' || true)
if [ -n "$mlx5" ]; then
	echo "ssq demo: mlx5 device(s) present ($(echo $mlx5)); this step needs none: it shows the WQE bytes ssq hands a ConnectX"
else
	echo "ssq demo: no mlx5 device in /sys/class/infiniband; this step needs none: it shows the WQE bytes ssq hands a ConnectX"
fi
"$here/scripts/build.sh" "$build" >/dev/null
"$build/tools/ssq_wqe_demo"
