#!/usr/bin/env bash
# The hand-over of <ssq/combine.h> (tests/model/ssq_combine.pml), checked
# with Spin (issue 29): the model must verify with no error over an
# exhaustive search (a survivor posting 2 requests, or 2 survivors 1 each,
# beside a victim combiner that may die at each hook, the lone fast path's
# included; then batches of up to 2 requests in the slot, SLOT=2: a
# survivor posting 3, appending while a combiner takes a prefix, the same
# with the victim also dying between its swap and its takes, with the
# room cap's shorter prefix (CAP), two survivors posting 2 each (an idle
# victim: no death), and with one request not built (SCRIBBLE): 0.36,
# 4.6, 2.0, 2.4, 2.2, 1.0 and 1.9 million states; about 40 s of CPU in
# all, pan compiled at -O0), and each
# deliberately broken variant must make Spin report the assertion it is
# built to break, so the test proves the model can fail. One line per
# configuration. Exit 0 pass, 1 fail.
# Env: SSQ_SOURCE_DIR (the repo root; default this script's ..), CC.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=${SSQ_SOURCE_DIR:-$here/..}
model=$src/tests/model/ssq_combine.pml
cc=${CC:-cc}

command -v spin >/dev/null ||
	{ echo "FAIL: spin not found: run scripts/install-deps.sh (it installs spin)"; exit 1; }
[ -r "$model" ] || { echo "FAIL: model $model not readable"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fails=0
# name, expected ("pass" or the assertion Spin must report), Spin's -D flags
check() {
	local name=$1 expect=$2 defs=$3 dir=$tmp/$1 out
	mkdir -p "$dir"
	cp "$model" "$dir/ssq_combine.pml"
	# -O0: pan.c is ~370 KB of generated C, which -O2 takes ~12 s of CPU
	# to compile, more than each run here saves by it (the longest, 4.6
	# million states, takes ~8 s at -O0).
	# shellcheck disable=SC2086 # $defs is a word list
	(cd "$dir" && spin $defs -a ssq_combine.pml >spin.log 2>&1 &&
		$cc -O0 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048 -o pan pan.c >cc.log 2>&1) ||
		{ echo "FAIL $name: spin -a or $cc failed"; cat "$dir"/*.log; fails=$((fails + 1)); return; }
	out=$(cd "$dir" && ./pan -m100000 2>&1) || true
	local states errors
	states=$(awk '/states, stored/ {print $1}' <<<"$out")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out")
	if [ "$expect" = pass ]; then
		if [ "$errors" = 0 ] && ! grep -q "out of memory\|max search depth too small" <<<"$out"; then
			echo "ok   $name: verified, $states states"
		else
			echo "FAIL $name: expected to verify"; echo "$out"; fails=$((fails + 1))
		fi
	elif grep -qF "$expect" <<<"$out"; then
		echo "ok   $name: fails as built to ($expect)"
	else
		echo "FAIL $name: expected '$expect'"; echo "$out"; fails=$((fails + 1))
	fi
}

check one_survivor_two_posts pass "-DNOWN=1 -DK=2"
check two_survivors pass "-DNOWN=2 -DK=1"
check blind_takeback "assertion violated" "-DNOWN=1 -DK=2 -DBROKEN_BLIND_TAKEBACK"
check nop_as_posted "assertion violated" "-DNOWN=1 -DK=2 -DBROKEN_NOP_AS_POSTED"
check no_recheck_no_settle "assertion violated" "-DNOWN=2 -DK=1 -DBROKEN_NO_RECHECK"
check lone_unsettled "assertion violated" "-DNOWN=1 -DK=2 -DBROKEN_LONE_UNSETTLED"
# Batches (SLOT=2): the prototype's protocol (proto-batch 95f16f8), with
# a mid-batch request the combiner does not build NOPed with the rest of
# its batch and no DONE (the prototype built on: PROTO_SCRIBBLE_GOES_ON).
check batch_one_survivor pass "-DNOWN=1 -DK=3 -DSLOT=2"
check batch_die_after_swap pass "-DNOWN=1 -DK=3 -DSLOT=2 -DSETTLE_BOUND -DDIE_AFTER_SWAP"
check batch_cap pass "-DNOWN=1 -DK=3 -DSLOT=2 -DCAP"
check batch_two_survivors pass "-DNOWN=2 -DK=2 -DSLOT=2 -DVPOSTS=0 -DMAXDEAD=0 -DCAP"
check batch_scribble pass "-DNOWN=1 -DK=3 -DSLOT=2 -DSCRIBBLE=1"
check batch_suffix "assertion violated" "-DNOWN=1 -DK=2 -DSLOT=2 -DBROKEN_BATCH_SUFFIX"
check batch_append "assertion violated" "-DNOWN=1 -DK=2 -DSLOT=2 -DBROKEN_BATCH_APPEND"
check batch_count "assertion violated" "-DNOWN=1 -DK=2 -DSLOT=2 -DBROKEN_BATCH_COUNT"
check batch_first "assertion violated" "-DNOWN=1 -DK=2 -DSLOT=2 -DBROKEN_BATCH_FIRST"
check batch_first_no_death pass "-DNOWN=1 -DK=2 -DSLOT=2 -DMAXDEAD=0 -DBROKEN_BATCH_FIRST"
check proto_scribble_goes_on "assertion violated" \
	"-DNOWN=1 -DK=3 -DSLOT=2 -DSCRIBBLE=2 -DPROTO_SCRIBBLE_GOES_ON"
[ "$fails" -eq 0 ] || exit 1
echo "ssq_combine_model: all configurations as expected"
