#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ssqd's log and its status for scripts:
#  - run by hand, each line starts with the local time to the microsecond
#    (before: "ssqd: ..." with no time), warnings and errors with their
#    level's name;
#  - under journald (stderr is the stream $JOURNAL_STREAM names), each line
#    starts with its sd-daemon(3) priority, "<5>ssqd: ..." for the serving
#    line, "<3>" for a failed start, and carries no time (journald's own);
#    a $JOURNAL_STREAM naming another stream is not journald;
#  - --log-level err leaves out the notice and info lines and keeps errors;
#    a bad level is refused naming the choices;
#  - `ssqd --status --json` is one JSON object with every queue (name,
#    qpn, ready) and every peer's counters (state, links, losses, attempts,
#    queues, open here/there, last outcome), the same as the table shows.
set -euo pipefail
ssqd=${SSQD:?}
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fail=1
}
emu=(--device emu --hugepages=off --data-mib 4)
wait_grep() { # PATTERN FILE: up to 30 s
	for _ in $(seq 300); do
		grep -qE "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}
stamp='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} '

# ---- by hand ----
"$ssqd" "${emu[@]}" --socket "$work/a.sock" 2>"$work/a.log" &
pids+=($!)
if wait_grep 'serving' "$work/a.log"; then
	line=$(grep -m1 serving "$work/a.log")
	grep -qE "${stamp}ssqd: .*serving $work/a.sock" <<<"$line" && ok "by hand: '$line'" ||
		bad "by hand: the serving line has no timestamp: '$line'"
	grep -q '^<[0-7]>' "$work/a.log" && bad "by hand: a <N> prefix where no journald reads it"
else
	bad "ssqd did not start:"
	cat "$work/a.log"
fi
# A second ssqd on the same socket fails to start: an error, so named.
set +e
"$ssqd" "${emu[@]}" --socket "$work/a.sock" 2>"$work/a2.log"
rc=$?
set -e
line=$(grep -m1 'another ssqd' "$work/a2.log" || true)
[ $rc -eq 1 ] && grep -qE "${stamp}error: ssqd: another ssqd" <<<"$line" &&
	ok "by hand, failed start: '$line'" || bad "failed start: exit $rc, log: $(cat "$work/a2.log")"

# ---- --status --json, on a plain ssqd ----
if json=$("$ssqd" --status --json --socket "$work/a.sock" 2>"$work/st.err"); then
	if python3 - "$json" "$work/a.sock" <<'PY'; then
import json, sys
j = json.loads(sys.argv[1])
assert j["socket"] == sys.argv[2], j
assert j["device"] == "emu", j
assert [q["name"] for q in j["queues"]] == ["q0"], j
q = j["queues"][0]
assert isinstance(q["qpn"], int) and q["qpn"] > 0 and q["ready"] is True, q
assert j["peers"] == [], j
PY
		ok "--status --json: $json"
	else
		bad "--status --json: not what the ssqd has: $json"
	fi
else
	bad "--status --json: exit $?: $(head -n1 "$work/st.err")"
fi
set +e
"$ssqd" --json --socket "$work/a.sock" "${emu[@]}" 2>"$work/j.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "--json goes with --status" "$work/j.err" && ok "--json alone: refused" ||
	bad "--json alone: exit $rc, '$(head -n1 "$work/j.err")'"

# ---- under journald ----
: >"$work/j.log"
js=$(stat -c '%d:%i' "$work/j.log")
JOURNAL_STREAM=$js "$ssqd" "${emu[@]}" --socket "$work/j.sock" 2>>"$work/j.log" &
pids+=($!)
if wait_grep 'serving' "$work/j.log"; then
	line=$(grep -m1 serving "$work/j.log")
	grep -qE "^<5>ssqd: .*serving $work/j.sock" <<<"$line" &&
		ok "under journald: '$line'" || bad "under journald: '$line', want '<5>ssqd: ... serving'"
	grep -qE "${stamp#^}" "$work/j.log" && bad "under journald: a timestamp journald adds itself"
else
	bad "ssqd under journald did not start: $(cat "$work/j.log")"
fi
: >"$work/j2.log"
set +e
JOURNAL_STREAM=$(stat -c '%d:%i' "$work/j2.log") "$ssqd" "${emu[@]}" --socket "$work/j.sock" \
	2>>"$work/j2.log"
set -e
grep -q '^<3>ssqd: another ssqd' "$work/j2.log" && ok "under journald, failed start: $(head -n1 "$work/j2.log")" ||
	bad "under journald, failed start: '$(cat "$work/j2.log")', want '<3>ssqd: another ssqd ...'"
# Another stream's numbers: not journald.
JOURNAL_STREAM=$js "$ssqd" "${emu[@]}" --socket "$work/j.sock" 2>"$work/j3.log" || true
grep -qE "${stamp}error: ssqd: another ssqd" "$work/j3.log" &&
	ok "JOURNAL_STREAM of another stream: times, no <N>" || bad "JOURNAL_STREAM of another stream: '$(cat "$work/j3.log")'"

# ---- --log-level ----
"$ssqd" "${emu[@]}" --log-level err --socket "$work/e.sock" 2>"$work/e.log" &
pids+=($!)
for _ in $(seq 300); do
	[ -S "$work/e.sock" ] && "$ssqd" --status --socket "$work/e.sock" >/dev/null 2>&1 && break
	sleep 0.1
done
"$ssqd" "${emu[@]}" --log-level err --socket "$work/e.sock" 2>>"$work/e.log" || true
if grep -q 'serving' "$work/e.log"; then
	bad "--log-level err: the notice line is in the log"
elif grep -qE "${stamp}error: ssqd: another ssqd" "$work/e.log"; then
	ok "--log-level err: notices left out, the error kept"
else
	bad "--log-level err: log is '$(cat "$work/e.log")'"
fi
set +e
"$ssqd" --log-level loud "${emu[@]}" 2>"$work/l.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q 'want err, warning, notice, info, debug' "$work/l.err" &&
	ok "--log-level loud: $(head -n1 "$work/l.err")" || bad "--log-level loud: exit $rc, '$(head -n1 "$work/l.err")'"

# ---- --status --json with peers: two daemons linked on the emulated wire ----
# Two listen ports handed out as tests/lib/tcp_port.c does: below the
# kernel's ephemeral range (a port the kernel picked goes back to its pool,
# where another test's outgoing connection can take it before ssqd binds
# it), and held until this test exits (a lock on /tmp/ssq-test-ports/PORT,
# which every other test's t_free_tcp_port skips).
eph_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
held_port=
hold_port() {
	local p fd lo=10000 n=$((eph_lo - 10000))
	[ "$eph_lo" -gt 11024 ] || { lo=61000; n=4535; }
	mkdir -p /tmp/ssq-test-ports 2>/dev/null && chmod 1777 /tmp/ssq-test-ports 2>/dev/null || true
	while :; do
		p=$((lo + (RANDOM * 32768 + RANDOM) % n))
		exec {fd}<>"/tmp/ssq-test-ports/$p" 2>/dev/null || continue
		if flock -n "$fd" && ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			held_port=$p # the lock stays with this shell until it exits
			return
		fi
		exec {fd}<&-
	done
}
hold_port
pa=$held_port
hold_port
pb=$held_port
printf 'alice 127.0.0.1:%s\nbob 127.0.0.1:%s\n' "$pa" "$pb" >"$work/peers"
"$ssqd" "${emu[@]}" --name alice --peers "$work/peers" --listen "$pa" --eager \
	--socket "$work/alice.sock" 2>"$work/alice.log" &
pids+=($!)
"$ssqd" "${emu[@]}" --name bob --peers "$work/peers" --listen "$pb" --eager --arena-rkey \
	--socket "$work/bob.sock" 2>"$work/bob.log" &
pids+=($!)
json=
for _ in $(seq 300); do
	json=$("$ssqd" --status --json --socket "$work/alice.sock" 2>/dev/null || true)
	grep -q '"state": "ready"' <<<"$json" && break
	sleep 0.1
done
table=$("$ssqd" --status --socket "$work/alice.sock" 2>&1 || true)
if python3 - "$json" "$table" <<'PY'; then
import json, sys
j = json.loads(sys.argv[1])
table = sys.argv[2]
names = [q["name"] for q in j["queues"]]
assert "bob/q0" in names, names
[p] = [p for p in j["peers"] if p["name"] == "bob"]
assert p["state"] == "ready" and p["links"] >= 1 and p["losses"] == 0, p
for k in ("address", "first_queue", "queues", "open_here", "open_there", "attempts", "last"):
    assert k in p, (k, p)
# The table's row for bob says the same.
row = [l.split() for l in table.splitlines() if l.startswith("bob ")][0]
assert row[1] == p["state"] and row[2] == p["address"] and int(row[3]) == p["queues"], (row, p)
assert [int(row[5]), int(row[6]), int(row[7])] == [p["links"], p["losses"], p["attempts"]], (row, p)
PY
	ok "--status --json on alice: bob $(python3 -c 'import json,sys; print([p for p in json.loads(sys.argv[1])["peers"] if p["name"]=="bob"][0])' "$json")"
else
	bad "--status --json on alice: '$json' vs table:"
	echo "$table"
	sed 's/^/     alice: /' "$work/alice.log"
fi
exit "$fail"
