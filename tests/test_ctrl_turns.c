/* SPDX-License-Identifier: MIT */
/*
 * ssqd's serve loop under an RLIMIT_NOFILE lower than its poll entries
 * polls its clients in turn (serve.c, poll_in_turn; ssqd_turns_pick picks).
 * A client there pass after pass must be polled within a bounded number of
 * passes, whatever the others do. The attack (found by the h-adv9
 * adversary): with one client polled a pass, the client just before the
 * victim half-closes, so that the pass that polls it drops it; the victim
 * moves down into the place the cursor just left, and a cursor counting
 * places skips it. The attacker connects again into the lowest free slot
 * (its old one) after the next pass, and again: the victim is never
 * polled, and its hello deadline, which does not run while it is not
 * polled, never ends either. Also: no entry is picked twice in a pass, and
 * every entry is picked within a round when nobody comes or goes.
 */
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "helpers.h"

#define SLOTS 8

/* The present slots' keys in order; how many. */
static int keys_of(const int *present, unsigned *keys)
{
	int k, n = 0;

	for (k = 0; k < SLOTS; k++)
		if (present[k])
			keys[n++] = (unsigned)k;
	return n;
}

static void attacker_cannot_starve(int take, unsigned victim, unsigned attacker)
{
	int present[SLOTS], out[SLOTS], pass, i, n, since = 0, worst = 0, readd = -1;
	unsigned keys[SLOTS], cursor = 0;

	for (i = 0; i < SLOTS; i++)
		present[i] = 1;
	for (pass = 0; pass < 200; pass++) {
		n = keys_of(present, keys);
		ssqd_turns_pick(keys, n, take, &cursor, out);
		since++;
		for (i = 0; i < take && i < n; i++) {
			if (keys[out[i]] == victim)
				since = 0;
			if (keys[out[i]] == attacker) {
				present[attacker] = 0; /* half-closed: dropped */
				readd = pass + 1;
			}
		}
		if (since > worst)
			worst = since;
		if (readd == pass) {
			present[attacker] = 1; /* connects again, into its slot */
			readd = -1;
		}
	}
	CHECK(worst <= (SLOTS + take - 1) / take,
	      "take %d, victim slot %u, attacker slot %u: the victim went %d passes "
	      "unpolled (want at most %d)",
	      take, victim, attacker, worst, (SLOTS + take - 1) / take);
}

static void each_once_a_round(int take)
{
	int present[SLOTS], out[SLOTS], seen[SLOTS] = { 0 }, pass, i, n;
	unsigned keys[SLOTS], cursor = 5;

	for (i = 0; i < SLOTS; i++)
		present[i] = i % 3 != 1; /* some slots empty */
	n = keys_of(present, keys);
	for (pass = 0; pass < (n + take - 1) / take; pass++) {
		int here[SLOTS] = { 0 };

		ssqd_turns_pick(keys, n, take, &cursor, out);
		for (i = 0; i < take && i < n; i++) {
			CHECK(out[i] >= 0 && out[i] < n && !here[out[i]],
			      "take %d: pass %d picked index %d twice or out of range",
			      take, pass, out[i]);
			if (out[i] >= 0 && out[i] < n) {
				here[out[i]] = 1;
				seen[out[i]] = 1;
			}
		}
	}
	for (i = 0; i < n; i++)
		CHECK(seen[i], "take %d: key %u not picked in a round", take, keys[i]);
}

int main(void)
{
	int take;

	attacker_cannot_starve(1, 2, 1);
	attacker_cannot_starve(1, 5, 4);
	attacker_cannot_starve(2, 3, 2);
	for (take = 1; take <= SLOTS; take++)
		each_once_a_round(take);
	return test_exit("ctrl_turns");
}
