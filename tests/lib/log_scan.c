/* SPDX-License-Identifier: MIT */
/* What an ssqd's log says, read whole (tlib.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tlib.h"

/* The first T_LOG_MAX bytes of @path, NUL-ended (empty if unreadable); free() it. */
#define T_LOG_MAX (1u << 22)
static char *log_read(const char *path)
{
	char *buf = malloc(T_LOG_MAX);
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (!buf)
		abort();
	if (f) {
		n = fread(buf, 1, T_LOG_MAX - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

unsigned t_log_count(const char *path, const char *needle)
{
	char *buf = log_read(path), *s = buf;
	unsigned k = 0;

	while ((s = strstr(s, needle))) {
		k++;
		s++;
	}
	free(buf);
	return k;
}

long t_log_last_num(const char *path, const char *needle)
{
	char *buf = log_read(path), *s = buf, *last = NULL;
	long v;

	while ((s = strstr(s, needle))) {
		last = s;
		s++;
	}
	v = last ? atol(last + strlen(needle)) : -1;
	free(buf);
	return v;
}

int t_log_wait(const char *path, const char *needle, unsigned n, double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (t_log_count(path, needle) >= n)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) +
		        (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >
		    secs)
			return 0;
		usleep(20000);
	}
}
