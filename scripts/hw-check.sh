#!/usr/bin/env bash
# One command for a ConnectX lab: build ssq, list the mlx5 devices, and run
# the mlx5 backend end to end, one verdict per step: ssqd on the device,
# loopback QPs on one port, several client processes on the shared queue,
# every opcode with its data checked, an error and a recovery, a client and
# ssqd killed, ssqd stopped and started again. On a
# machine without an mlx5 device it says so and exits 0: nothing is
# pretended.
#
#   scripts/hw-check.sh [DEVICE]      e.g. mlx5_0 (default: the first)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${SSQ_BUILD_DIR:-$here/build}
# Where devices are listed; tests point it at a folder of their own.
sysfs=${SSQ_SYSFS_INFINIBAND:-/sys/class/infiniband}

mlx5=$(ls "$sysfs" 2>/dev/null | grep '^mlx5' || true)
if [ -z "$mlx5" ]; then
	echo "hw-check: skip: no mlx5 device in $sysfs (scripts/test.sh tests the emulated device)"
	exit 0
fi
dev=${1:-$(echo "$mlx5" | head -n1)}
echo "hw-check: mlx5 device(s): $(echo $mlx5); checking $dev"
# SSQ_HW_CHECK_BUILD=0: use $build as it is (the tests of this script).
if [ "${SSQ_HW_CHECK_BUILD:-1}" != 0 ]; then
	"$here/scripts/build.sh" "$build"
fi
echo "== ssqd --list-devices =="
"$build/ssqd" --list-devices
cd "$build"
# Each step is a ctest that starts its own ssqd on $dev (SSQ_TEST_DEVICE, see
# tests/test_device.h) and prints what it checked; a verdict line per step.
steps=(
	"ctrl_mlx5:several clients on one loopback queue, a WRITE checked, a client and ssqd killed"
	"ctrl_device_ops:every opcode, data checked; a wrong rkey and recovery; ssqd restart"
	"ssq_multiproc:producer processes posting WRITE + FETCH_ADD, each exactly once"
	"ctrl_recv:SEND, SEND_IMM and WRITE_IMM into the receive pool, in order"
	"ctrl_wait_lone:a lone ssq_wait sleeper woken by ssqd through the send CQ it arms (rounds woken printed)"
	"ctrl_mem_wire:clients' own malloc'd memory host to host (ibv_import_device/_pd, ibv_reg_mr in ssqd's PD); unexposed and dead keys refused"
)
failed=0
for s in "${steps[@]}"; do
	name=${s%%:*}
	echo "== $name: ${s#*:} =="
	# A step passes only if its test ran and passed: no test found, or a
	# skip (exit 77), is a failure here.
	rc=0
	out=$(SSQ_MLX5_DEVICE=$dev SSQ_TEST_DEVICE=$dev ctest -R "^$name\$" \
		--no-tests=error --output-on-failure 2>&1) || rc=$?
	echo "$out"
	if [ $rc -eq 0 ] && grep -q "tests passed, 0 tests failed out of 1" <<<"$out" &&
		! grep -q "Skipped\|Not Run" <<<"$out"; then
		echo "hw-check: $name on $dev: PASS"
	else
		echo "hw-check: $name on $dev: FAIL"
		failed=$((failed + 1))
	fi
done
if [ "$failed" -ne 0 ]; then
	echo "hw-check: $dev: $failed of ${#steps[@]} steps failed"
	exit 1
fi
echo "hw-check: $dev: all ${#steps[@]} steps passed"
