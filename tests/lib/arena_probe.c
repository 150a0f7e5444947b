/* SPDX-License-Identifier: MIT */
/* Which of this process's ssqd arena mappings still hold memory (tlib.h). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "tlib.h"

static sigjmp_buf probe_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(probe_jmp, 1);
}

/* Does the page at @p hold memory (1), or was its file cut (0: SIGBUS)? */
static int backed(const volatile char *p)
{
	struct sigaction sa, old;
	int ok = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(probe_jmp, 1)) {
		(void)*p;
		ok = 1;
	}
	sigaction(SIGBUS, &old, NULL);
	return ok;
}

unsigned t_arenas_held(unsigned *maps, unsigned *mib)
{
	char line[512];
	unsigned long lo, hi;
	unsigned n = 0, m = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	*maps = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "ssq-arena") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			++*maps;
			if (!backed((const volatile char *)lo))
				continue;
			n++;
			m += (unsigned)((hi - lo) >> 20);
		}
	if (f)
		fclose(f);
	if (mib)
		*mib = m;
	return n;
}
