#!/usr/bin/env bash
# scripts/hw-check.sh, the ConnectX lab's command, without a ConnectX. The
# device list comes from `ssqd --list-devices` (devices libmlx5 drives,
# whatever their names); here a stand-in lister (SSQ_HW_CHECK_LISTER)
# prints what ssqd would on a host with devices:
#  - nothing listed, no device named: one skip line after the pre-flight
#    (uid, ulimit -l, CAP_IPC_LOCK) and the listing, exit 0;
#  - nothing listed, a device named: FAIL naming it, exit 1, no step run
#    (before the hardware review of 2026-11-28 it skipped with exit 0 even
#    when told the device, and looked only for names starting "mlx5");
#  - two devices listed (one udev-style rocep..., one mlx5_...), none
#    named: every step runs on each (neither exists, so ssqd refuses it)
#    and prints a FAIL verdict naming the device; exit non-zero. A step
#    that ran on the emulated device instead would pass;
#  - one of them named: its steps only;
#  - a build without the tests: no step passes.
set -u
: "${SSQ_BINARY_DIR:?run through ctest}" "${SSQ_SOURCE_DIR:?run through ctest}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A lister as ssqd --list-devices prints: "NAME (node GUID 0x...)" per device.
lister() {
	local f=$tmp/$1 d
	shift
	printf '#!/bin/sh\n' >"$f"
	for d in "$@"; do
		printf 'echo "%s (node GUID 0x0002c90300a1b2c3)"\necho "  port 1: PORT_ACTIVE"\n' \
			"$d" >>"$f"
	done
	chmod +x "$f"
}
hw() { SSQ_HW_CHECK_BUILD=0 SSQ_BUILD_DIR=${build:-$SSQ_BINARY_DIR} \
	SSQ_HW_CHECK_LISTER=$lister_path bash "$SSQ_SOURCE_DIR/scripts/hw-check.sh" "$@" 2>&1; }
fail=0
nsteps=$(grep -c '^	"[a-z_0-9]*:' "$SSQ_SOURCE_DIR/scripts/hw-check.sh")

lister_path=$SSQ_BINARY_DIR/ssqd # this host has no mlx5 device
out=$(hw)
rc=$?
if [ $rc -ne 0 ] || [ "$(printf '%s\n' "$out" | tail -n1 | grep -c '^hw-check: skip: no mlx5 device')" -ne 1 ] ||
	! grep -q "^hw-check: uid [0-9]*, ulimit -l .* KiB, CAP_IPC_LOCK" <<<"$out" ||
	grep -q "^== ctrl" <<<"$out"; then
	echo "FAIL: without a device: rc $rc:"; echo "$out"; fail=1
else
	echo "ok: without a device: $(tail -n1 <<<"$out")"
fi

out=$(hw rocep9s0f0)
rc=$?
if [ $rc -eq 0 ] || ! grep -q "^hw-check: FAIL: device rocep9s0f0 is not among" <<<"$out" ||
	grep -q "^== ctrl\|skip" <<<"$out"; then
	echo "FAIL: a named device that is absent: rc $rc:"; echo "$out"; fail=1
else
	echo "ok: a named device that is absent fails at once (rc $rc): $(grep FAIL <<<"$out")"
fi

lister two rocep_ssq_fake mlx5_ssq_fake
lister_path=$tmp/two
out=$(hw)
rc=$?
v1=$(grep -c "^hw-check: [a-z_0-9]* on rocep_ssq_fake: FAIL$" <<<"$out")
v2=$(grep -c "^hw-check: [a-z_0-9]* on mlx5_ssq_fake: FAIL$" <<<"$out")
if [ $rc -eq 0 ] || [ "$v1" -ne "$nsteps" ] || [ "$v2" -ne "$nsteps" ] || grep -q ": PASS$" <<<"$out"; then
	echo "FAIL: with two devices listed: rc $rc, $v1 + $v2 FAIL verdicts (want $nsteps each):"
	grep "^hw-check" <<<"$out"; fail=1
else
	echo "ok: with two devices listed, none named: every one of $nsteps steps ran on each and failed (rc $rc)"
fi

out=$(hw rocep_ssq_fake)
rc=$?
v1=$(grep -c "^hw-check: [a-z_0-9]* on rocep_ssq_fake: FAIL$" <<<"$out")
v2=$(grep -c "on mlx5_ssq_fake" <<<"$out")
if [ $rc -eq 0 ] || [ "$v1" -ne "$nsteps" ] || [ "$v2" -ne 0 ]; then
	echo "FAIL: with rocep_ssq_fake named: rc $rc, $v1 verdicts on it, $v2 lines on the other:"
	grep "^hw-check" <<<"$out"; fail=1
else
	echo "ok: with rocep_ssq_fake named: its $nsteps steps only (rc $rc)"
fi

# A build without the tests (or where they skip) must not pass a step.
mkdir -p "$tmp/notests/tests"
: >"$tmp/notests/CTestTestfile.cmake"
build=$tmp/notests
out=$(hw rocep_ssq_fake)
rc=$?
if [ $rc -eq 0 ] || grep -q ": PASS$" <<<"$out"; then
	echo "FAIL: with no tests to run: rc $rc"
	grep "^hw-check" <<<"$out"
	fail=1
else
	echo "ok: with no tests to run, every step failed (rc $rc)"
fi
exit $fail
