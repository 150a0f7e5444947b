#!/usr/bin/env bash
# ssqd's memlock pre-flight (hardware review 2026-11-28 R2), on
# $SSQ_TEST_DEVICE (default the emulated device), run as a user without
# CAP_IPC_LOCK under a 64 KiB RLIMIT_MEMLOCK:
#  - on an mlx5 device (a ConnectX, or the model of libmlx5) ssqd refuses
#    to start and names RLIMIT_MEMLOCK and the MiB it would pin: the kernel
#    charges every registration to pinned_vm (ib_umem_get), and before
#    this check the first ibv_reg_mr failed with a bare "Cannot allocate
#    memory";
#  - on the emulated device, which pins nothing, ssqd starts and serves.
set -u
: "${SSQD:?run through ctest}"
dev=${SSQ_TEST_DEVICE:-emu}
tmp=$(mktemp -d)
sock=$tmp/ssqd.sock
trap 'rm -rf "$tmp"' EXIT
if ! setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock true 2>/dev/null; then
	echo "skip: setpriv cannot drop CAP_IPC_LOCK here"
	exit 77
fi
prlimit --memlock=65536 setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock -- \
	"$SSQD" --device "$dev" --socket "$sock" --hugepages=off --data-mib 8 \
	2>"$tmp/log" &
pid=$!
for _ in $(seq 1 200); do
	grep -q "serving" "$tmp/log" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	kill "$pid"
	wait "$pid" 2>/dev/null
	rc=running
else
	wait "$pid"
	rc=$?
fi
if [ "$dev" = emu ]; then
	if [ "$rc" = running ] && grep -q serving "$tmp/log"; then
		echo "ok: on the emulated device (pins nothing) ssqd serves under a 64 KiB memlock limit"
		exit 0
	fi
	echo "FAIL: on the emulated device ssqd did not serve (rc $rc):"; cat "$tmp/log"
	exit 1
fi
if [ "$rc" != running ] && [ "$rc" -ne 0 ] && grep -q "RLIMIT_MEMLOCK" "$tmp/log" &&
	grep -q "pins up to [0-9]* MiB" "$tmp/log"; then
	echo "ok: on $dev ssqd refused to start, naming the limit and the size:"
	grep RLIMIT_MEMLOCK "$tmp/log"
	exit 0
fi
echo "FAIL: on $dev under a 64 KiB memlock limit without CAP_IPC_LOCK ssqd (rc $rc) did not refuse naming RLIMIT_MEMLOCK:"
cat "$tmp/log"
exit 1
