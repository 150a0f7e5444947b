# SPDX-License-Identifier: MIT
# Sourced by the perftest-style tools' tests that start daemons and servers
# of their own (test_bench_twohost.sh, test_bench_peers.sh). Sets: build,
# bin (the tools), tmp (removed at exit), pids (each killed and reaped at
# exit: add what you start), fail; bad prints a failure and makes the test
# fail; port prints a free TCP port on 127.0.0.1.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
bin=$build/bench/perftest
export SSQ_EMU_MODE=full
unset SSQ_SOCKET
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# A TCP port on 127.0.0.1 nobody answers on just now: a random one, since
# several tests run at once, below the kernel's ephemeral range, where no
# outgoing connection takes it meanwhile (a clash shows as a failed bind,
# retried by the caller).
eph_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port() {
	local p
	while :; do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % (eph_lo > 11024 ? eph_lo - 10000 : 1000)))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
