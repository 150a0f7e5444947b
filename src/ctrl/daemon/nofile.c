/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/nofile.h"

/* Descriptors this process holds now (/proc/self/fd), or -1. */
static long fds_held(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n - 1; /* the directory's own */
}

void ssqd_nofile_report(const struct ssqd *d)
{
	struct rlimit rl;
	unsigned long long links, need, room;
	long held = fds_held();
	unsigned clients;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	if (held < 0)
		held = SSQD_FD_RESERVE - 2u * SSQD_MAX_CLIENTS;
	/* Each peer's link, the links coming in, each tenant's socket and pidfd. */
	links = d->npeers + SSQD_MAX_KNOCKS +
	        (d->opt.tenants != SSQD_TENANTS_NONE ? 2u * SSQD_MAX_TENANTS : 0);
	need = (unsigned long long)held + links + 2u * SSQD_MAX_CLIENTS + SSQD_MAX_MRS;
	if (rl.rlim_cur >= need)
		return;
	room = rl.rlim_cur > held + links ? rl.rlim_cur - held - links : 0;
	clients = room / 2 < SSQD_MAX_CLIENTS ? (unsigned)(room / 2) : SSQD_MAX_CLIENTS;
	fprintf(stderr,
	        SD_WARNING "ssqd: RLIMIT_NOFILE %llu (hard limit %llu) holds %u of the "
	                   "%u clients and %u of the %u memory registrations ssqd "
	                   "serves at most, beside the %ld descriptors it holds now; "
	                   "%llu would hold all (LimitNOFILE=, ulimit -n)\n",
	        (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, clients,
	        SSQD_MAX_CLIENTS, d->mr_cap, SSQD_MAX_MRS, held, need);
}

int ssqd_nofile_retry(int n, struct rlimit *rl)
{
	struct rlimit was;

	if (getrlimit(RLIMIT_NOFILE, rl)) {
		rl->rlim_cur = rl->rlim_max = 0;
		return 0;
	}
	if (rl->rlim_cur >= (rlim_t)n || rl->rlim_cur >= rl->rlim_max)
		return 0;
	was = *rl;
	rl->rlim_cur = rl->rlim_max;
	if (setrlimit(RLIMIT_NOFILE, rl)) {
		*rl = was;
		return 0;
	}
	fprintf(stderr,
	        SD_WARNING "ssqd: RLIMIT_NOFILE was lowered to %llu under the %d "
	                   "descriptors the serve loop polls: raised back to its hard "
	                   "limit %llu\n",
	        (unsigned long long)was.rlim_cur, n, (unsigned long long)rl->rlim_max);
	return 1;
}
