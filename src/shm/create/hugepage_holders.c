/* SPDX-License-Identifier: MIT */
/* Who holds 2 MiB hugepages (hugepage_holders.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shm/create/hugepage_holders.h"

/* Does process @pid map a shared mapping backed by 2 MiB pages? */
static int maps_hugepages(const char *pid)
{
	char path[300], line[256];
	int shared = 0, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/smaps", pid);
	f = fopen(path, "r");
	if (!f)
		return 0; /* gone, or not ours to read */
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[8];

		/* A mapping's header: "start-end perms offset dev inode [path]". */
		if (isxdigit((unsigned char)line[0]) && strchr(line, '-') &&
		    sscanf(line, "%*s %7s", perms) == 1)
			shared = perms[3] == 's';
		else if (shared && strstr(line, "KernelPageSize:") &&
		         strstr(line, " 2048 kB"))
			found = 1;
	}
	fclose(f);
	return found;
}

int shm_hugepage_holders(char *out, size_t len)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	if (len)
		*out = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < 8) {
		char path[300], comm[32] = "?";
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]) ||
		    atoi(e->d_name) == getpid() || !maps_hugepages(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		if (used < len)
			used += (size_t)snprintf(out + used, len - used, "%spid %s (%s)",
			                         n ? ", " : "", e->d_name, comm);
		n++;
	}
	closedir(d);
	return n;
}
