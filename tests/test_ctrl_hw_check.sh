#!/usr/bin/env bash
# scripts/hw-check.sh, the ConnectX lab's command, without a ConnectX:
#  - with no mlx5 device listed it skips with one line and exits 0;
#  - with a device listed it runs every step on that device (here one that
#    does not exist, so ssqd refuses it): each step prints a FAIL verdict
#    naming the device, and the script exits non-zero. A step that ran on
#    the emulated device instead would pass.
set -u
: "${SSQ_BINARY_DIR:?run through ctest}" "${SSQ_SOURCE_DIR:?run through ctest}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hw() { SSQ_HW_CHECK_BUILD=0 SSQ_BUILD_DIR=$SSQ_BINARY_DIR SSQ_SYSFS_INFINIBAND=$1 \
	bash "$SSQ_SOURCE_DIR/scripts/hw-check.sh" 2>&1; }
fail=0

mkdir "$tmp/none"
out=$(hw "$tmp/none")
rc=$?
lines=$(printf '%s\n' "$out" | wc -l)
if [ $rc -ne 0 ] || [ "$lines" -ne 1 ] || ! grep -q "^hw-check: skip: no mlx5 device" <<<"$out"; then
	echo "FAIL: without a device: rc $rc, $lines lines:"; echo "$out"; fail=1
else
	echo "ok: without a device: $out"
fi

mkdir -p "$tmp/one/mlx5_ssq_fake"
out=$(hw "$tmp/one")
rc=$?
verdicts=$(grep -c "^hw-check: [a-z_0-9]* on mlx5_ssq_fake: FAIL$" <<<"$out")
if [ $rc -eq 0 ] || [ "$verdicts" -ne 6 ] || grep -q ": PASS$" <<<"$out"; then
	echo "FAIL: with mlx5_ssq_fake listed: rc $rc, $verdicts FAIL verdicts:"
	grep "^hw-check" <<<"$out"; fail=1
else
	echo "ok: with mlx5_ssq_fake listed: rc $rc, every step ran on it and failed:"
	grep "^hw-check" <<<"$out"
fi
# A build without the tests (or where they skip) must not pass a step.
mkdir -p "$tmp/notests/tests"
: >"$tmp/notests/CTestTestfile.cmake"
cp "$SSQ_BINARY_DIR/ssqd" "$tmp/notests/"
out=$(SSQ_HW_CHECK_BUILD=0 SSQ_BUILD_DIR=$tmp/notests SSQ_SYSFS_INFINIBAND=$tmp/one \
	bash "$SSQ_SOURCE_DIR/scripts/hw-check.sh" 2>&1)
rc=$?
if [ $rc -eq 0 ] || grep -q ": PASS$" <<<"$out"; then
	echo "FAIL: with no tests to run: rc $rc"
	grep "^hw-check" <<<"$out"
	fail=1
else
	echo "ok: with no tests to run, every step failed (rc $rc)"
fi
exit $fail
