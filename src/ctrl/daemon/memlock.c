/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include "ctrl/daemon/memlock.h"

int ssqd_self_cap(int cap)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long eff = 0;
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	if (f)
		fclose(f);
	return found && (eff >> cap) & 1;
}

int ssqd_memlock_check(uint64_t need, char *why, size_t whylen)
{
	struct rlimit rl;

	if (ssqd_self_cap(CAP_IPC_LOCK))
		return 0;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    (uint64_t)rl.rlim_cur >= need)
		return 0;
	snprintf(why, whylen,
	         "ssqd pins up to %" PRIu64 " MiB (its arena, and with buffer keys "
	         "each buffer again as its own MR) but may lock only %" PRIu64
	         " KiB (RLIMIT_MEMLOCK) and lacks CAP_IPC_LOCK: the kernel would "
	         "refuse its registrations (ib_umem_get: ENOMEM). Raise the limit "
	         "(ulimit -l %" PRIu64 ", LimitMEMLOCK= in the unit, "
	         "/etc/security/limits.conf) or run with CAP_IPC_LOCK",
	         (need + (1u << 20) - 1) >> 20, (uint64_t)rl.rlim_cur >> 10,
	         (need + 1023) >> 10);
	return -ENOMEM;
}
