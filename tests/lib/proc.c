/* SPDX-License-Identifier: MIT */
/* What /proc says of a process (tlib.h). */
#include <dirent.h>
#include <stdio.h>
#include "tlib.h"

int t_proc_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

double t_proc_run_wait(pid_t pid)
{
	char path[64];
	unsigned long long run, wait;
	FILE *f;
	int n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/schedstat");
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? (double)wait * 1e-9 : -1;
}
