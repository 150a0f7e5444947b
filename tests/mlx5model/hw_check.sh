#!/usr/bin/env bash
# scripts/hw-check.sh, the ConnectX lab's command, on the model of
# libmlx5 44 + mlx5_ib (tests/mlx5model): the device is listed as a stock
# Debian/Ubuntu host lists a ConnectX (rdma-core's udev rule renames it
# rocep<bus>s<slot>f<fn>; its driver link says mlx5_core), the script is
# given that name, and every step must run on it and pass:
#  - exit 0 and "hw-check: rocep1s0f0: all N steps passed";
#  - a verdict "hw-check: <step> on rocep1s0f0: PASS" for every step;
#  - no skip.
# Run by ctest (ctrl_hw_check_mlx5model) with the model preloaded.
set -u
: "${SSQ_BINARY_DIR:?run through ctest}" "${SSQ_SOURCE_DIR:?run through ctest}"
: "${LD_PRELOAD:?the model must be preloaded}"
dev=rocep1s0f0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sys/$dev/device" "$tmp/drivers/mlx5_core"
ln -s "$tmp/drivers/mlx5_core" "$tmp/sys/$dev/device/driver"
out=$(SSQ_HW_CHECK_BUILD=0 SSQ_BUILD_DIR=$SSQ_BINARY_DIR SSQ_SYSFS_INFINIBAND=$tmp/sys \
	bash "$SSQ_SOURCE_DIR/scripts/hw-check.sh" "$dev" 2>&1)
rc=$?
printf '%s\n' "$out" | grep "^hw-check"
steps=$(grep -c "^hw-check: [a-z_0-9]* on $dev: " <<<"$out")
pass=$(grep -c "^hw-check: [a-z_0-9]* on $dev: PASS$" <<<"$out")
if [ $rc -ne 0 ] || grep -q "skip" <<<"$out" || [ "$steps" -eq 0 ] ||
	[ "$pass" -ne "$steps" ] || ! grep -q "^hw-check: $dev: all $steps steps passed$" <<<"$out"; then
	echo "FAIL: hw-check.sh $dev on the model: rc $rc, $pass of $steps steps passed"
	[ $rc -ne 0 ] || [ "$steps" -ne 0 ] || echo "$out" | tail -n 40
	exit 1
fi
echo "ok: hw-check.sh $dev on the model: rc 0, all $steps steps passed"
