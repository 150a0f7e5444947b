/* SPDX-License-Identifier: MIT */
/* ssqd's soft RLIMIT_NOFILE up to its hard one: see util/util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include "ctrl/daemon/util/util.h"

void ssqd_nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	/* Fails only for a hard limit above fs.nr_open (EPERM: kernel/sys.c,
	 * do_prlimit), lowered since the hard limit was set. */
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fprintf(stderr,
		        SD_WARNING "ssqd: cannot raise RLIMIT_NOFILE to its hard limit "
		                   "%llu: %s\n",
		        (unsigned long long)rl.rlim_max, strerror(errno));
}
