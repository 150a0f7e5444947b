#!/usr/bin/env bash
# Adversary (h-adv5c): tests/model/ssq_combine.pml with the victim
# combiner also allowed to die between its swap of the pending bits (A14a)
# and its takes (C10) - in ssq__reserve's room spin or after its fetch-add
# (-DDIE_AFTER_SWAP) - and a bound on ssq__hand_settle going round with
# its request still POSTED after combining (-DSETTLE_BOUND: at most 2
# rounds; a live combiner that swapped our bit holds the role until after
# its take, so a free role and our word POSTED with no bit only comes of a
# death). Both must verify. Before the fix the second failed: the
# survivor's settle took the free role, its combine found no bit, let the
# role go, and settle went round for ever (test_ssq_combine_adv_bitless.c,
# the same in C); now settle takes its request back (C13') after its own
# combine if it is still POSTED. -DBROKEN_SETTLE_ROUND (the old settle)
# must still fail. The model checks safety only (-DSAFETY), so the loop
# itself is no error there: hence the bound.
# Env: SSQ_SOURCE_DIR (the repo root; default this script's ..), CC.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=${SSQ_SOURCE_DIR:-$here/..}
model=$src/tests/model/ssq_combine.pml
cc=${CC:-cc}

command -v spin >/dev/null ||
	{ echo "FAIL: spin not found: run scripts/install-deps.sh (it installs spin)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# name, Spin's -D flags, and the assertion Spin must report (none: verify)
check() {
	local name=$1 defs=$2 expect=${3:-} dir=$tmp/$1 out states errors
	mkdir -p "$dir"
	cp "$model" "$dir/ssq_combine.pml"
	# shellcheck disable=SC2086 # $defs is a word list
	(cd "$dir" && spin $defs -a ssq_combine.pml >spin.log 2>&1 &&
		$cc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048 -o pan pan.c >cc.log 2>&1) ||
		{ echo "FAIL $name: spin -a or $cc failed"; cat "$dir"/*.log; fails=$((fails + 1)); return; }
	out=$(cd "$dir" && ./pan -m100000 2>&1) || true
	states=$(awk '/states, stored/ {print $1}' <<<"$out")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out")
	if [ -n "$expect" ]; then
		if grep -qF "$expect" <<<"$out"; then
			echo "ok   $name: fails as built to ($expect)"
		else
			echo "FAIL $name: expected '$expect'"; echo "$out" | head -20; fails=$((fails + 1))
		fi
	elif [ "$errors" = 0 ] && ! grep -q "out of memory\|max search depth too small" <<<"$out"; then
		echo "ok   $name: verified, $states states"
	else
		echo "FAIL $name: $(grep -m1 'assertion violated' <<<"$out" || echo "$out" | head -5)"
		fails=$((fails + 1))
	fi
}

check settle_bound "-DNOWN=1 -DK=2 -DSETTLE_BOUND"
check die_after_swap "-DNOWN=1 -DK=2 -DSETTLE_BOUND -DDIE_AFTER_SWAP"
check settle_round "-DNOWN=1 -DK=2 -DSETTLE_BOUND -DDIE_AFTER_SWAP -DBROKEN_SETTLE_ROUND" \
	"assertion violated (rounds<3)"
[ "$fails" -eq 0 ] || exit 1
echo "ssq_combine_adv_model: all configurations verified"
