/* SPDX-License-Identifier: MIT */
/* Entries polled in turn: see util/util.h. */
#include "ctrl/daemon/util/util.h"

void ssqd_turns_pick(const unsigned *keys, int n, int take, unsigned *cursor, int *out)
{
	int s = 0, i;

	if (n <= 0 || take <= 0)
		return;
	while (s < n && keys[s] < *cursor)
		s++;
	if (s == n)
		s = 0; /* past the last key: round again from the first */
	for (i = 0; i < take && i < n; i++)
		out[i] = (s + i) % n;
	*cursor = keys[out[i - 1]] + 1;
}
