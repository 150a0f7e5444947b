#!/usr/bin/env bash
# ssqd refuses bad options and impossible configurations with a message
# naming what was wrong, before touching anything: bad values exit 2 with the
# usage text, an arena the hugepages cannot hold under --hugepages=required
# exits 1 saying how to reserve pages, and nothing is left listening.
set -euo pipefail
ssqd=${SSQD:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

expect() { # RC NEEDLE ARGS...
	local want=$1 needle=$2 rc
	shift 2
	set +e
	"$ssqd" --socket "$work/s" "$@" >"$work/out" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq "$want" ] && grep -qF -- "$needle" "$work/out"; then
		echo "ok   ssqd $*: exit $rc, \"$needle\""
	else
		echo "FAIL ssqd $*: exit $rc (want $want), output:"
		sed 's/^/     /' "$work/out"
		fail=1
	fi
	if [ -e "$work/s" ]; then
		echo "FAIL ssqd $*: left a socket behind"
		fail=1
	fi
}

expect 2 "--hugepages 'maybe': want auto, required or off" --hugepages=maybe
expect 2 "--sq-size 100: must be a power of two" --sq-size 100
expect 2 "--queues '0': want a number from 1 to 64" --queues 0
expect 2 "--ib-port 'x': want a number" --ib-port x
expect 2 "unknown or incomplete option '--bogus'" --bogus
expect 2 "--gid-index (auto, none or an index) 'x': want a number from 0 to 255" --gid-index x
expect 2 "--emu-link-layer 'roce': want ib or eth" --emu-link-layer roce
expect 2 "--emu-mtu 1500: must be a power of two" --emu-mtu 1500
expect 2 "--emu-mtu '8192': want a number from 256 to 4096" --emu-mtu 8192
expect 2 "unexpected argument 'extra'" extra
expect 2 "--recv-depth 100: must be 0 or a power of two" --recv-depth 100
expect 2 "--recv-depth '65536': want a number from 0 to 32768" --recv-depth 65536
expect 2 "--recv-depth '-1': want a number" --recv-depth -1
expect 2 "--recv-size 100: must be a multiple of 64" --recv-size 100
expect 2 "--recv-size '32': want a number from 64 to 1048576" --recv-size 32
expect 2 "--recv-size '2097152': want a number from 64 to 1048576" --recv-size 2097152
expect 2 "--qp-timeout '32': want a number from 0 to 31" --qp-timeout 32
expect 1 "receive pools of --recv-depth 32768 x 2 buffers x --recv-size 1048576" --device emu --hugepages=off --recv-depth 32768 --recv-size 1048576
expect 2 "--hello-ms '5': want a number from 10 to 60000" --hello-ms 5
# --peer-key: for links to peers; its file owned by ssqd's uid, mode 0600 or
# narrower, 32 bytes or more.
expect 2 "--peer-key authenticates links to peers" --peer-key "$work/key"
head -c 32 /dev/urandom >"$work/key"
chmod 640 "$work/key"
expect 1 "--peer-key $work/key: mode 0640 lets its group or others at it" --device emu --hugepages=off --name a --peer b=127.0.0.1:1 --listen 1 --peer-key "$work/key"
chmod 600 "$work/key"
head -c 31 /dev/urandom >"$work/key"
expect 1 "--peer-key $work/key: 31 bytes; a key has 32 to 1024" --device emu --hugepages=off --name a --peer b=127.0.0.1:1 --listen 1 --peer-key "$work/key"
head -c 32 /dev/urandom >"$work/key"
if [ "$(id -u)" -eq 0 ]; then # only root can hand a file to another uid
	chown 65534 "$work/key"
	expect 1 "--peer-key $work/key: owned by uid 65534, not by ssqd's uid 0" --device emu --hugepages=off --name a --peer b=127.0.0.1:1 --listen 1 --peer-key "$work/key"
fi
expect 1 "--peer-key $work/nokey: No such file or directory" --device emu --hugepages=off --name a --peer b=127.0.0.1:1 --listen 1 --peer-key "$work/nokey"
expect 2 "--stall-ms 5: want 0 (no deadline) or 10 to 60000" --stall-ms 5
expect 2 "--queue-uid 'x1=5': want qN=UID" --queue-uid x1=5
expect 2 "--queue-gid 'q1=': want qN=GID" --queue-gid q1=
expect 2 "--queue-uid 'q99=5': want qN=UID" --queue-uid q99=5
expect 2 "--queue-uid q3=7: there are only 2 queues (q0..q1)" --queues 2 --queue-uid q3=7
expect 2 "--stall-ms '60001': want a number from 0 to 60000" --stall-ms 60001
expect 2 "--max-uid-clients '0': want a number from 1 to 256" --max-uid-clients 0
expect 2 "--max-client-bufs '5000': want a number from 1 to 4096" --max-client-bufs 5000
expect 2 "--max-client-mib 9: at most --data-mib 8" --data-mib 8 --max-client-mib 9
expect 2 "--max-uid-mib 9: at most --data-mib 8" --data-mib 8 --max-uid-mib 9
expect 2 "--tenants 'user': want none, uid or gid" --tenants user
expect 2 "--tenants: peers are carried per tenant in a cluster only" --tenants uid --listen 5000
expect 2 "--tenants: peers are carried per tenant in a cluster only" --tenants gid --connect 127.0.0.1:5000
expect 2 "--listen and --connect exclude each other" --listen 5000 --connect 127.0.0.1:5000
expect 2 "--buffer-keys and --arena-rkey exclude each other" --buffer-keys --arena-rkey
expect 2 "--connect 'nohost': want HOST:PORT" --device emu --hugepages=off --data-mib 4 --connect nohost
expect 2 "--connect 'fe80::1': an IPv6 address goes in brackets" --device emu --hugepages=off --data-mib 4 --connect fe80::1
expect 2 "--connect 'h:+1': port must be 1..65535" --device emu --hugepages=off --data-mib 4 --connect h:+1
# Idle exit of tenants is opt-in (docs/trust.md): the default is never.
expect 0 "for N ms exits (default 0: never;" --help
expect 1 "device emu0 not found" --device emu0 --hugepages=off
expect 1 "echo " --device emu --hugepages=required --data-mib 60000
grep -q "nr_hugepages" "$work/out" || { echo "FAIL: no nr_hugepages hint"; fail=1; }
exit $fail
