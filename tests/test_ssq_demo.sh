#!/usr/bin/env bash
# The demo's program, end to end and small: ssqd on the emulated device,
# ssq_demo with 3 sender processes sharing its queue; the data must verify
# and the perftest-style table must be printed. Bad flags get usage text
# and exit 2.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
work=$(mktemp -d)
"${SSQD:?}" --device emu --socket "$work/s" --hugepages=off --data-mib 8 2>"$work/log" &
d=$!
trap 'kill $d 2>/dev/null; wait $d 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/s" ] && break; sleep 0.1; done
out=$("$build/tools/ssq_demo" -S "$work/s" -P 3 -n 20000)
echo "$out"
grep -q "data verified" <<<"$out" || { echo "FAIL: data not verified"; exit 1; }
grep -qE "^ 3 +64 +60000 " <<<"$out" || { echo "FAIL: no result row for 3 x 20000"; exit 1; }
set +e
"$build/tools/ssq_demo" -S "$work/s" -P 0 >/dev/null 2>"$work/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "-P '0'" "$work/err" || { echo "FAIL: -P 0 gave rc $rc"; cat "$work/err"; exit 1; }
echo "ok: bad flag refused with usage"
