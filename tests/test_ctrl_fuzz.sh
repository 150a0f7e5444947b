#!/usr/bin/env bash
# Fuzz the two decoders that take bytes from outside ssqd - the client
# protocol (fuzz/fuzz_proto.c) and the peer exchange (fuzz/fuzz_peer.c) -
# with libFuzzer under ASan and UBSan, each for a bounded time
# (SSQ_FUZZ_SECONDS, default 10). A crash, a sanitizer report or a failed
# check fails the test, and the crashing input is printed in hex.
set -euo pipefail
src=${SSQ_SOURCE_DIR:?}
secs=${SSQ_FUZZ_SECONDS:-10}
command -v clang >/dev/null || { echo "FAIL: clang missing (scripts/install-deps.sh installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build() { # NAME SOURCES...
	local name=$1
	shift
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I"$src/include" -I"$src/src" "$@" -o "$work/$name"
}
build fuzz_proto "$src/fuzz/fuzz_proto.c" "$src/src/ctrl/proto/msg.c"
build fuzz_peer "$src/fuzz/fuzz_peer.c" "$src/src/ctrl/proto/peer_msg.c"

fail=0
for f in fuzz_proto fuzz_peer; do
	mkdir -p "$work/corpus-$f"
	if (cd "$work" && "./$f" -max_total_time="$secs" -rss_limit_mb=1024 -max_len=2048 \
		-print_final_stats=1 "corpus-$f" >"$work/$f.log" 2>&1); then
		runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$work/$f.log" | grep -oE '[0-9]+$' || echo '?')
		echo "ok   $f: $runs inputs in ${secs}s, no crash"
	else
		echo "FAIL $f:"
		tail -n 40 "$work/$f.log"
		for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
			[ -e "$crash" ] && { echo "input $crash:"; od -An -tx1 "$crash" | head; }
		done
		fail=1
	fi
done
exit $fail
