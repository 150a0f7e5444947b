/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status under --tenants (status_tenants.c): what every tenant's
 * ssqd says of itself, asked through the parent ssqd (TENANT,
 * tenant_status.c) and answered by each tenant's ssqd directly.
 */
#ifndef SSQD_STATUS_TENANTS_H
#define SSQD_STATUS_TENANTS_H

#include "ctrl/daemon/ssqd.h"
#include "ctrl/proto/msg.h"

/*
 * How long --status waits for the tenants' answers, all together: a live
 * tenant answers two requests at once, but on a busy machine its ssqd may
 * be off the CPU for a while. One that has not answered by then is shown
 * as not answering (stopped, or its loop stuck).
 */
#define SSQD_STATUS_TENANT_MS 3000

struct status_tenant {
	struct proto_msg_tenant_reply info; /* the parent's word: who, which pid */
	struct proto_msg_list_reply list;   /* its own: queues and clients */
	int answered;                       /* list is its answer */
	char why[200];                      /* else why not */
};

struct status_tenants {
	unsigned n;
	struct status_tenant t[SSQD_MAX_TENANTS];
	char err[200]; /* the parent would not say (not its uid): why */
};

struct ssq_client;
/*
 * status_tenants_fetch - every tenant of the ssqd @c is connected to, and
 * each one's LIST, into @ts; waits SSQD_STATUS_TENANT_MS at most for them.
 */
void status_tenants_fetch(struct ssq_client *c, struct status_tenants *ts);

/* "uid" or "gid". */
const char *status_tenant_kind(const struct status_tenant *t);

#endif /* SSQD_STATUS_TENANTS_H */
