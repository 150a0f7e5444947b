#!/usr/bin/env bash
# The device tests scripts/hw-check.sh runs on a ConnectX start ssqd on the
# device they are given ($SSQ_TEST_DEVICE), not on the emulated device
# whatever they were asked: given a device that does not exist, each must
# fail and say that ssqd refused that device.
set -u
bin=${SSQ_BINARY_DIR:?run through ctest}/tests
dev=mlx5_ssq_absent
fail=0
for t in test_ctrl_device_ops test_ctrl_multiproc test_ssq_multiproc test_ctrl_recv \
	test_ctrl_mem_wire test_ctrl_default_sizes test_ctrl_recv_small test_ctrl_mem_iova \
	test_ctrl_mem_disk_file test_ctrl_mem_hangup; do
	out=$(SSQ_TEST_DEVICE=$dev timeout 60 "$bin/$t" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
		echo "FAIL: $t passed (rc $rc) on $dev, which does not exist: it ran elsewhere"
		fail=1
	elif ! grep -q "device $dev not found" <<<"$out"; then
		echo "FAIL: $t failed (rc $rc) without ssqd saying $dev was not found:"
		echo "$out" | tail -5
		fail=1
	else
		echo "ok: $t on $dev: ssqd refused the device, the test failed (rc $rc)"
	fi
done
exit $fail
