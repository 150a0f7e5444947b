/* SPDX-License-Identifier: MIT */
/*
 * ssqd's descriptor limit (RLIMIT_NOFILE): raised to the hard limit at
 * start, and what it leaves room for said when that is less than ssqd is
 * built to hold.
 */
#ifndef SSQD_NOFILE_H
#define SSQD_NOFILE_H

#include <sys/resource.h>

struct ssqd;

/*
 * The soft limit up to the hard one (systemd leaves services a soft 1024:
 * systemd.exec(5), LimitNOFILE=, asks those that need more to raise it
 * themselves), before anything opens descriptors; said only when it fails.
 */
void ssqd_nofile_raise(void);

/*
 * Once set up: when the limit is below what ssqd holds at most (its
 * clients' sockets and pidfds, registrations, peers' and tenants' links,
 * beside what it holds now), say once what it leaves room for.
 */
void ssqd_nofile_report(const struct ssqd *d);

#endif
