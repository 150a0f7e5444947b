#!/usr/bin/env bash
# The demo's program, end to end and small: ssqd on the emulated device,
# ssq_demo with 3 sender processes sharing its queue; the data must verify
# and the perftest-style table must be printed. Bad flags get usage text
# and exit 2. Whatever fails, ssqd's log is shown, and ssqd must stop on
# SIGTERM.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
work=$(mktemp -d)
"${SSQD:?}" --device emu --socket "$work/s" --hugepages=off --data-mib 8 2>"$work/log" &
d=$!
fail() {
	echo "FAIL: $*"
	echo "--- ssqd's log:"
	cat "$work/log"
	exit 1
}
trap 'kill -9 $d 2>/dev/null || true; wait $d 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/s" ] && break; sleep 0.1; done
# The senders give up after 30 s without a completion; this bounds the rest.
set +e
out=$(timeout -s KILL 120 "$build/tools/ssq_demo" -S "$work/s" -P 3 -n 20000 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -eq 0 ] || fail "ssq_demo exited $rc"
grep -q "data verified" <<<"$out" || fail "data not verified"
grep -qE "^ 3 +64 +60000 " <<<"$out" || fail "no result row for 3 x 20000"
set +e
"$build/tools/ssq_demo" -S "$work/s" -P 0 >/dev/null 2>"$work/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "-P '0'" "$work/err" || { cat "$work/err"; fail "-P 0 gave rc $rc"; }
echo "ok: bad flag refused with usage"
kill $d
for _ in $(seq 100); do kill -0 $d 2>/dev/null || break; sleep 0.1; done
kill -0 $d 2>/dev/null && fail "ssqd still running 10 s after SIGTERM"
wait $d || fail "ssqd exited $? on SIGTERM"
grep -q "ssqd: stopped" "$work/log" || fail "ssqd's log does not say it stopped"
echo "ok: ssqd stopped on SIGTERM"
