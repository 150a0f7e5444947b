#!/usr/bin/env bash
# Adversary, the perftest-style tools' flags (bench/perftest/opts.c), -e
# among them, on every tool. Each refusal exits 1 and names the flag:
#  - a switch given a value ("--events=1", "--wire=1", "--report_gbits=yes")
#    was "unknown flag --events=1", though --events is known: it says the
#    switch takes no value;
#  - a number is decimal digits: "-n +5" and "-s ' 64'" ran (strtoull
#    takes a sign and leading blanks), "-n -1" only by its wrap to 2^64-1;
#  - -e: refused by ssq_write_lat, with --mode spinlock or proxy in a
#    bandwidth tool, and with --server, each naming -e; accepted by every
#    bandwidth tool and by ssq_send_lat (their runs: test_bench_perftest);
#  - "-d ''" started an ssqd that died saying "device  not found", "--peers
#    ''" ran with no peers at all, "--peers -1" with one named "-1", and a
#    --json or --out_json_file that cannot be written was said only after
#    the whole run, its results lost.
set -euo pipefail
build=${SSQ_BINARY_DIR:?}
bin=$build/bench/perftest
export SSQD=${SSQD:-$build/ssqd}
unset SSQ_SOCKET
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# refuse TOOL NEEDLE ARGS...: exit 1, NEEDLE on stderr's first line, no run.
refuse() {
	local tool=$1 needle=$2 out rc
	shift 2
	set +e
	out=$(timeout 20 "$bin/$tool" "$@" 2>&1 </dev/null)
	rc=$?
	set -e
	if [ "$rc" -ne 1 ] || ! grep -qF -- "$needle" <<<"$(head -n1 <<<"$out")"; then
		bad "$tool $*: exit $rc, want 1 and '$needle' first: $(head -n2 <<<"$out")"
	else
		echo "ok   $tool $*: $(head -n1 <<<"$out")"
	fi
}

tools="ssq_write_bw ssq_read_bw ssq_atomic_bw ssq_send_bw ssq_write_lat ssq_send_lat
	ssq_read_lat ssq_atomic_lat"
for t in $tools; do
	# perftest's MAX_SIZE, 8 MiB; SEND: ssqd's largest receive buffer.
	case $t in ssq_send_*) smax=1048576 ;; *) smax=8388608 ;; esac
	refuse "$t" "--events: a switch, it takes no value (drop '=1')" --events=1
	refuse "$t" "--wire: a switch, it takes no value" --wire=1
	refuse "$t" "--report_gbits: a switch, it takes no value" --report_gbits=yes
	refuse "$t" "--server: a switch, it takes no value" --server=
	refuse "$t" "unknown flag --frobnicate" --frobnicate=1
	refuse "$t" "-n '+5': want 1..1000000000" -n +5
	refuse "$t" "-n '-1': want 1..1000000000" -n -1
	refuse "$t" "-s ' 64': want 1..$smax" -s ' 64'
	refuse "$t" "-s '0x40': want 1..$smax" --size=0x40
	refuse "$t" "-t '16 ': want" -t '16 '
done
for t in ssq_write_bw ssq_read_bw ssq_atomic_bw ssq_send_bw; do
	for m in spinlock proxy; do
		refuse "$t" "-e: only lockfree and qp-per-process senders sleep" -e --mode "$m"
	done
	refuse "$t" "-e: the server echoes by polling; give -e to the client" \
		-e --server --ssq_socket=/nonexistent/ssqd.sock
done
refuse ssq_write_lat "-e: a latency test times one message at a time" -e
# Empty or unwritable values: refused before the run, not after it.
refuse ssq_write_bw "-d: an empty device name" -d ''
refuse ssq_write_bw "--peers '': an empty list" --peers ''
# A signed count is no name (issue 28): "-1" ran one peer named "-1".
refuse ssq_write_bw "--peers '-1': want 1..64 peers" --peers -1
refuse ssq_write_bw "--peers '+2': want 1..64 peers" --peers +2
refuse ssq_write_bw "--peers '65': want 1..64 peers" --peers 65
refuse ssq_write_bw "--json: an empty file name" --json ''
refuse ssq_write_bw "--json '/nonexistent/r.json': cannot write the results there" \
	--json /nonexistent/r.json
refuse ssq_send_bw "--out_json_file '/': cannot write the results there (Is a directory)" \
	--out_json_file /
refuse ssq_write_lat "-e: a latency test times one message at a time" --events -n 5
exit $fail
