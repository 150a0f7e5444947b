#!/usr/bin/env bash
# One command for a ConnectX lab: build ssq, list the mlx5 devices, and run
# the mlx5 backend end to end, one verdict per step: ssqd on the device,
# loopback QPs on one port, several client processes on the shared queue,
# every opcode with its data checked, an error and a recovery, a client and
# ssqd killed, ssqd stopped and started again, ssqd with its default sizes,
# small and large SENDs, a client's own memory, grants (memory windows)
# and guessed keys from a peer, the memlock pre-flight.
#
#   scripts/hw-check.sh [DEVICE]   e.g. rocep1s0f0 or mlx5_0
#
# DEVICE named: that device, which must be one libmlx5 drives; absent or
# not mlx5 is a failure (exit 1), never a skip. None named: every device
# `ssqd --list-devices` lists (those mlx5dv_is_supported accepts, whatever
# their names: rdma-core's udev rule names them rocep.../ibp... on Debian
# and Ubuntu); with none it says so and exits 0: nothing is pretended.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${SSQ_BUILD_DIR:-$here/build}
want=${1:-}

# SSQ_HW_CHECK_BUILD=0: use $build as it is (the tests of this script).
if [ "${SSQ_HW_CHECK_BUILD:-1}" != 0 ]; then
	"$here/scripts/build.sh" "$build"
fi
# The lister: this build's ssqd (the tests of this script give their own).
lister=${SSQ_HW_CHECK_LISTER:-$build/ssqd}
# Pinned memory: a ConnectX charges every registration to RLIMIT_MEMLOCK
# unless the process has CAP_IPC_LOCK (ib_umem_get, umem.c); ssqd refuses
# to start below what it needs and names the size (memlock.c).
capeff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status 2>/dev/null || echo 0)
ipc_lock=no
if (((16#${capeff:-0} >> 14) & 1)); then ipc_lock=yes; fi
lim=$(ulimit -l)
echo "== pre-flight =="
echo "hw-check: uid $(id -u), ulimit -l $lim KiB, CAP_IPC_LOCK $ipc_lock"
if [ "$ipc_lock" = no ] && [ "$lim" != unlimited ] && [ "$lim" -lt $((512 * 1024)) ]; then
	echo "hw-check: warning: $lim KiB of locked memory without CAP_IPC_LOCK; each ssqd of these steps pins up to ~200 MiB and will refuse to start (raise it: ulimit -l unlimited)"
fi
echo "== ssqd --list-devices =="
listing=$("$lister" --list-devices 2>&1) || {
	echo "$listing"
	echo "hw-check: FAIL: ssqd --list-devices failed"
	exit 1
}
echo "$listing"
# A device's line: "NAME (node GUID 0x...)", as mlx5_list.c prints it.
devs=$(awk '/ \(node GUID 0x[0-9a-f]*\)$/ { print $1 }' <<<"$listing")
if [ -n "$want" ]; then
	if ! grep -qx -- "$want" <<<"$devs"; then
		echo "hw-check: FAIL: device $want is not among the mlx5 devices ssqd lists ($(echo $devs)); absent, or not driven by libmlx5"
		exit 1
	fi
	devs=$want
elif [ -z "$devs" ]; then
	echo "hw-check: skip: no mlx5 device (ssqd --list-devices lists none; scripts/test.sh tests the emulated device)"
	exit 0
fi
echo "hw-check: checking $(echo $devs)"
cd "$build"
# Each step is a ctest that starts its own ssqd on the device (SSQ_TEST_DEVICE,
# see tests/test_device.h) and prints what it checked; a verdict line per step.
steps=(
	"ctrl_mlx5:several clients on one loopback queue, a WRITE checked, a client and ssqd killed"
	"ctrl_device_ops:every opcode, data checked; a wrong rkey and recovery; ssqd restart"
	"ssq_multiproc:producer processes posting WRITE + FETCH_ADD, each exactly once"
	"ctrl_recv:SEND, SEND_IMM and WRITE_IMM into the receive pool, in order"
	"ctrl_wait_lone:a lone ssq_wait sleeper woken by ssqd through the send CQ it arms; ssqd's own arm and event counts at least 1"
	"ctrl_mem_wire:clients' own malloc'd memory host to host (ibv_import_device/_pd, ibv_reg_mr in ssqd's PD); unexposed and dead keys refused"
	"ctrl_default_sizes:ssqd with no size option (--sq-size 1024, --cq-size 1024): a WRITE polled, one ssq_wait'ed"
	"ctrl_recv_small:SENDs of 1, 7, 32, 33 and 4096 bytes and small SEND_IMMs read back byte for byte"
	"ctrl_mem_iova:ssq_mem_reg of malloc'd memory: iova and remote_addr are its address; a WRITE and a READ through them"
	"ctrl_mem_disk_file:a disk file registered writable is refused with a reason (mm/gup.c), a memfd registers"
	"ctrl_mem_hangup:ssqd killed: a client that used ssq_mem_reg lets go of ssqd's verbs file, so the kernel tears down its QPs and MRs"
	"ctrl_wire_ops:two ssqd linked over the device (two daemons on one port), every opcode host to host, data and atomics checked"
	"ssq_kill:producer processes killed while posting on the shared queue: survivors lose nothing, nothing runs twice"
	"ctrl_cap_grant:three daemons on one port: a peer's client reaches a buffer only through a type-2 window granted to its queue (UMR bind on ssqd's ring), refused once revoked or freed"
	"ctrl_adv_cap_attack:guessed and leaked keys from a peer (the arena's, a buffer's own, another peer's window, a client registration's own) fail IBV_WC_REM_ACCESS_ERR, no byte moves"
	"ctrl_memlock:without CAP_IPC_LOCK under a 64 KiB memlock limit ssqd refuses, naming the limit and the size"
)
failed=0
total=0
for dev in $devs; do
	for s in "${steps[@]}"; do
		name=${s%%:*}
		total=$((total + 1))
		echo "== $name on $dev: ${s#*:} =="
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
done
if [ "$failed" -ne 0 ]; then
	echo "hw-check: $(echo $devs): $failed of $total steps failed"
	exit 1
fi
echo "hw-check: $(echo $devs): all $total steps passed"
