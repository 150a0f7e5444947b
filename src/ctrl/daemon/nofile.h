/* SPDX-License-Identifier: MIT */
/*
 * ssqd's descriptor limit (RLIMIT_NOFILE): raised to the hard limit at
 * start, what it leaves room for said when that is less than ssqd is
 * built to hold, and raised again when it is lowered under a running
 * ssqd (serve.c).
 */
#ifndef SSQD_NOFILE_H
#define SSQD_NOFILE_H

#include <sys/resource.h>
#include "ctrl/daemon/util/util.h"

struct ssqd;

/*
 * Once set up: when the limit is below what ssqd holds at most (its
 * clients' sockets and pidfds, registrations, peers' and tenants' links,
 * beside what it holds now), say once what it leaves room for.
 */
void ssqd_nofile_report(const struct ssqd *d);

/*
 * poll(2) refused @n entries (more than the soft limit): the limit now
 * into @rl, its soft one first raised to the hard one where it is lower
 * than @n (1 then, said; 0 when that could not help or was not needed).
 */
int ssqd_nofile_retry(int n, struct rlimit *rl);

#endif
