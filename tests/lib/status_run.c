/* SPDX-License-Identifier: MIT */
/* `ssqd --status` run as a command, and what its output says (tlib.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tlib.h"

int t_ssqd_status(const char *sock, int json, const char *outf, char *out, size_t len,
                  double *secs)
{
	char cmd[512];
	struct timespec t0, t1;
	FILE *f;
	size_t n;
	int rc;

	snprintf(cmd, sizeof(cmd), "'%s' --status %s --socket '%s' > %s 2>&1",
	         getenv("SSQD"), json ? "--json" : "", sock, outf);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = system(cmd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (secs)
		*secs = (double)(t1.tv_sec - t0.tv_sec) +
		        (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	f = fopen(outf, "r");
	n = f ? fread(out, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	out[n] = 0;
	return rc;
}

unsigned t_occurs(const char *s, const char *needle)
{
	unsigned n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}
