/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd that fails is started again after a wait (daemon.h):
 * tenants.c starts a tenant's ssqd at its uid's next connection, so one
 * that cannot start (its device, its memory) or crashes at once would
 * otherwise cost a fork and exec, and an arena and a device context set up
 * and torn down, per connection - a client retrying in a loop keeps the
 * host busy for nothing. Meanwhile that uid's connections are refused
 * with -EAGAIN and a sentence saying when to come back (man
 * ssq_client_connect). The wait doubles from SSQD_TENANT_BACKOFF_MIN_MS
 * to SSQD_TENANT_BACKOFF_MAX_MS while each run is short, as systemd's
 * RestartSec with RestartSteps does for a unit, and starts over once a
 * run lasted SSQD_TENANT_HEALTHY_MS: a tenant that served for a while and
 * then crashed is started again at once. A run that ended well (an idle
 * exit, --tenant-idle-ms) starts it over too, however short: else a uid
 * whose runs are short by design (a client now and then) would keep the
 * wait of failures long past, and its next crash wait that doubled.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h> /* SD_WARNING: util/log.c */
#include "ctrl/daemon/daemon.h"

/* @key's entry; one made (the one least worth keeping reused) if @make. */
static struct ssqd_tenant_backoff *entry(struct ssqd *d, uint32_t key, int make)
{
	struct ssqd_tenant_backoff *e, *spare = NULL;
	unsigned i;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		e = &d->tenant_backoff[i];
		if (e->used && e->key == key)
			return e;
		/* A free one, else the one whose wait ends first. */
		if (!spare ||
		    (spare->used && (!e->used || e->until_ns < spare->until_ns)))
			spare = e;
	}
	if (!make)
		return NULL;
	memset(spare, 0, sizeof(*spare));
	spare->used = 1;
	spare->key = key;
	return spare;
}

static const char *kind(const struct ssqd *d)
{
	return d->opt.tenants == SSQD_TENANTS_GID ? "gid" : "uid";
}

void ssqd_tenant_started(struct ssqd *d, uint32_t key)
{
	entry(d, key, 1)->started_ns = ssqd_now_ns();
}

void ssqd_tenant_failed(struct ssqd *d, uint32_t key, int status)
{
	struct ssqd_tenant_backoff *e = entry(d, key, 1);
	uint64_t now = ssqd_now_ns();
	uint64_t ran_ms = e->started_ns ? (now - e->started_ns) / 1000000 : 0;

	e->status = status;
	e->found_dead = status == SSQD_TENANT_FOUND_DEAD;
	if (e->started_ns && ran_ms >= SSQD_TENANT_HEALTHY_MS)
		e->delay_ms = 0;
	else if (!e->delay_ms)
		e->delay_ms = SSQD_TENANT_BACKOFF_MIN_MS;
	else if (e->delay_ms < SSQD_TENANT_BACKOFF_MAX_MS / 2)
		e->delay_ms *= 2;
	else
		e->delay_ms = SSQD_TENANT_BACKOFF_MAX_MS;
	e->until_ns = e->delay_ms ? now + (uint64_t)e->delay_ms * 1000000 : 0;
	if (e->delay_ms)
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: tenant %s %u: its ssqd failed %llu ms after its "
		        "start: not started again for %u ms\n",
		        kind(d), (unsigned)key, (unsigned long long)ran_ms, e->delay_ms);
}

void ssqd_tenant_reaped_dead(struct ssqd *d, uint32_t key, int status)
{
	struct ssqd_tenant_backoff *e = entry(d, key, 0);

	/* Only the failure it counted: not a later one's (a new ssqd's). */
	if (e && e->status == SSQD_TENANT_FOUND_DEAD)
		e->status = status;
}

void ssqd_tenant_ended_well(struct ssqd *d, uint32_t key)
{
	struct ssqd_tenant_backoff *e = entry(d, key, 0);

	if (e) {
		e->delay_ms = 0;
		e->until_ns = 0;
	}
}

int ssqd_tenant_backoff(struct ssqd *d, uint32_t key, char *why, size_t whylen)
{
	struct ssqd_tenant_backoff *e = entry(d, key, 0);
	uint64_t now = ssqd_now_ns();
	const char *dead = e && e->found_dead ? ", found dead at a send" : "";
	char how[80];

	if (!e || !e->until_ns || now >= e->until_ns)
		return 0;
	/*
	 * Found dead (tenants.c): killed then, but how it ended is its
	 * reaping's to say - it may have exited on its own first.
	 */
	if (e->status == SSQD_TENANT_FOUND_DEAD)
		snprintf(how, sizeof(how), "was found dead at a send, not reaped yet");
	else if (WIFSIGNALED(e->status))
		snprintf(how, sizeof(how), "was killed by signal %d%s",
		         WTERMSIG(e->status), dead);
	else
		snprintf(how, sizeof(how), "exited with status %d%s",
		         WEXITSTATUS(e->status), dead);
	snprintf(why, whylen,
	         "tenant %s %u's ssqd failed (it %s; see ssqd's log) and is started "
	         "again at a connection in %llu ms or later: connect again then",
	         kind(d), (unsigned)key, how,
	         (unsigned long long)((e->until_ns - now + 999999) / 1000000));
	return -EAGAIN;
}
