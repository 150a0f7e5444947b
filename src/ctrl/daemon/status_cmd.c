/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status [--json] (daemon.h): LIST and PEER requests, as any client
 * makes them, and under --tenants the same of every tenant's ssqd
 * (status_tenants.c); a table for people, or one JSON object for scripts.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/client.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/status_tenants.h"
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"
#include "shm/layout.h"

static const char *state_str(enum ssq_peer_state s)
{
	switch (s) {
	case SSQ_PEER_IDLE:
		return "idle";
	case SSQ_PEER_CONNECTING:
		return "connecting";
	case SSQ_PEER_FAILED:
		return "failed";
	case SSQ_PEER_READY:
		return "ready";
	}
	return "?";
}

/*
 * @s with every control byte shown as '?', in @buf (@len): the table's
 * words from elsewhere - a tenant's ssqd's own answer (its error, its
 * queues' names: a process its uid may reach), a peer's refusal - stay
 * on their own line, never starting one that reads as ssqd's
 * (tests/test_adv7t_status_forge.c). The JSON escapes them (json_str).
 */
static const char *printable(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = 0;
	return buf;
}

/*
 * What both forms of --status print: a client of the ssqd at @socket_path
 * (*@cp, for the caller to close), its queues (LIST: with their opens and
 * the clients' count), its peers, and its tenants' ssqd. Returns 0, or 1
 * having said why on stderr and closed what it opened.
 */
static int status_fetch(const char *socket_path, struct ssq_client **cp,
                        struct proto_msg_list_reply *q, struct ssq_peer_info *p, int *npp,
                        struct status_tenants *ts)
{
	struct ssq_client *c;
	struct proto_msg reply;
	int np, rc;

	if (ssq_client_connect(socket_path, &c)) {
		fprintf(stderr, "ssqd --status: %s\n", ssq_client_strerror_last());
		return 1;
	}
	rc = client_call(c, SSQ_MSG_LIST, NULL, 0, &reply, NULL);
	np = rc ? rc : ssq_client_peers(c, p, SSQ_MAX_QUEUES);
	if (np < 0) {
		fprintf(stderr, "ssqd --status: %s\n", ssq_client_error(c));
		ssq_client_close(c);
		return 1;
	}
	*q = reply.u.list_reply;
	*cp = c;
	*npp = np;
	status_tenants_fetch(c, ts);
	return 0;
}

/*
 * The queue table of one ssqd, each line indented by @indent. WQEBB/S is
 * the queue's recent posting rate (watch/rate.c), with OPENS what the pick
 * of "any" weighs: a user sees why an open went where it did.
 */
static void print_queues(FILE *out, const char *indent,
                         const struct proto_msg_list_reply *q)
{
	char name[SSQ_NAME_MAX];
	unsigned i;

	fprintf(out, "%s%-31s %-8s %5s %10s %7s %s\n", indent, "QUEUE", "QPN", "OPENS",
	        "WQEBB/S", "REFUSED", "STATE");
	for (i = 0; i < q->nqueues && i < SSQ_MAX_QUEUES; i++)
		fprintf(out, "%s%-31s 0x%-6x %5u %10u %7u %s\n", indent,
		        printable(q->queues[i].name, name, sizeof(name)),
		        q->queues[i].qpn, q->queues[i].opens, q->queues[i].rate,
		        q->queues[i].refused,
		        q->queues[i].state == SSQ_QUEUE_READY ? "ready" : "not ready");
}

int ssqd_status_print(const char *socket_path, FILE *out)
{
	struct proto_msg_list_reply q;
	struct ssq_peer_info p[SSQ_MAX_QUEUES];
	struct status_tenants ts;
	struct ssq_client *c;
	char why[256]; /* the longest of a tenant's or a peer's */
	int np, i;

	if (status_fetch(socket_path, &c, &q, p, &np, &ts))
		return 1;
	fprintf(out, "ssqd at %s on %s: %u queue(s), %d peer(s), %u client(s)\n",
	        socket_path, ssq_client_device(c), q.nqueues, np, q.nclients);
	if (np > 0) {
		/* Columns as wide as their longest entry: names run to 23. */
		int nw = 16, aw = 24;

		for (i = 0; i < np && i < (int)SSQ_MAX_QUEUES; i++) {
			if ((int)strlen(p[i].name) > nw)
				nw = (int)strlen(p[i].name);
			if ((int)strlen(p[i].addr) > aw)
				aw = (int)strlen(p[i].addr);
		}
		fprintf(out, "%-*s %-10s %-*s %-6s %-5s %5s %5s %5s %7s  %s\n", nw,
		        "PEER", "STATE", aw, "ADDRESS", "QUEUES", "OPEN", "LINKS", "LOST",
		        "TRIES", "REFUSED", "LAST");
		for (i = 0; i < np && i < (int)SSQ_MAX_QUEUES; i++) {
			char open[16];

			snprintf(open, sizeof(open), "%s%s",
			         p[i].flags & SSQ_PEER_OPEN_HERE ? "here" : "",
			         p[i].flags & SSQ_PEER_OPEN_THERE ? "+far" : "");
			fprintf(out, "%-*s %-10s %-*s %-6u %-5s %5u %5u %5u %7u  %s\n",
			        nw, p[i].name, state_str(p[i].state), aw, p[i].addr,
			        p[i].nqueues, open[0] ? open : "-", p[i].links,
			        p[i].losses, p[i].attempts, p[i].refused,
			        p[i].why[0] ? printable(p[i].why, why, sizeof(why))
			                    : "-");
		}
	}
	print_queues(out, "", &q);
	for (i = 0; i < (int)ts.n; i++) {
		const struct status_tenant *t = &ts.t[i];

		fprintf(out, "tenant %s %u: ssqd pid %d", status_tenant_kind(t),
		        t->info.id, (int)t->info.pid);
		if (t->info.closing) {
			/* Not asked: it takes nothing more (tenant_status.c). */
			fprintf(out,
			        ": %s, %u connection(s) of its %s waiting for it to be "
			        "gone\n",
			        printable(t->info.why, why, sizeof(why)),
			        (unsigned)t->info.parked, status_tenant_kind(t));
			continue;
		}
		if (!t->answered) {
			fprintf(out, ": not answering (%s)\n",
			        printable(t->why, why, sizeof(why)));
			continue;
		}
		fprintf(out, ", %u queue(s), %u client(s)\n", t->list.nqueues,
		        t->list.nclients);
		print_queues(out, "  ", &t->list);
	}
	if (ts.err[0])
		fprintf(out, "tenants: %s\n", ts.err);
	ssq_client_close(c);
	return 0;
}

/* @s as a JSON string: quotes, backslashes and control bytes escaped. */
static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* The queues of one ssqd as a JSON array. */
static void json_queues(FILE *out, const struct proto_msg_list_reply *q)
{
	unsigned i;

	fputc('[', out);
	for (i = 0; i < q->nqueues && i < SSQ_MAX_QUEUES; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", out);
		json_str(out, q->queues[i].name);
		fprintf(out,
		        ", \"qpn\": %u, \"opens\": %u, \"refused\": %u, \"ready\": "
		        "%s, \"rate\": %u}",
		        q->queues[i].qpn, q->queues[i].opens, q->queues[i].refused,
		        q->queues[i].state == SSQ_QUEUE_READY ? "true" : "false",
		        q->queues[i].rate);
	}
	fputc(']', out);
}

int ssqd_status_json(const char *socket_path, FILE *out)
{
	struct proto_msg_list_reply q;
	struct ssq_peer_info p[SSQ_MAX_QUEUES];
	struct status_tenants ts;
	struct ssq_client *c;
	int np, i;

	if (status_fetch(socket_path, &c, &q, p, &np, &ts))
		return 1;
	fputs("{\"socket\": ", out);
	json_str(out, socket_path);
	fputs(", \"device\": ", out);
	json_str(out, ssq_client_device(c));
	fprintf(out, ", \"clients\": %u, \"queues\": ", q.nclients);
	json_queues(out, &q);
	fputs(", \"peers\": [", out);
	for (i = 0; i < np && i < (int)SSQ_MAX_QUEUES; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", out);
		json_str(out, p[i].name);
		fputs(", \"address\": ", out);
		json_str(out, p[i].addr);
		fprintf(out,
		        ", \"state\": \"%s\", \"first_queue\": %u, \"queues\": %u, "
		        "\"open_here\": %s, \"open_there\": %s, \"links\": %u, "
		        "\"losses\": %u, \"attempts\": %u, \"refused\": %u, \"last\": ",
		        state_str(p[i].state), p[i].first_queue, p[i].nqueues,
		        p[i].flags & SSQ_PEER_OPEN_HERE ? "true" : "false",
		        p[i].flags & SSQ_PEER_OPEN_THERE ? "true" : "false", p[i].links,
		        p[i].losses, p[i].attempts, p[i].refused);
		json_str(out, p[i].why);
		fputc('}', out);
	}
	fputs("], \"tenants\": [", out);
	for (i = 0; i < (int)ts.n; i++) {
		const struct status_tenant *t = &ts.t[i];

		fprintf(out,
		        "%s{\"kind\": \"%s\", \"id\": %u, \"pid\": %d, "
		        "\"answering\": %s",
		        i ? ", " : "", status_tenant_kind(t), t->info.id,
		        (int)t->info.pid, t->answered ? "true" : "false");
		if (t->answered) {
			fprintf(out, ", \"clients\": %u, \"queues\": ", t->list.nclients);
			json_queues(out, &t->list);
		} else {
			fputs(", \"why\": ", out);
			json_str(out, t->why);
		}
		/* Last: added after the others, which scripts may read in order. */
		fprintf(out, ", \"closing\": %s, \"parked\": %u}",
		        t->info.closing ? "true" : "false", (unsigned)t->info.parked);
	}
	fputc(']', out);
	if (ts.err[0]) {
		fputs(", \"tenants_error\": ", out);
		json_str(out, ts.err);
	}
	fputs("}\n", out);
	ssq_client_close(c);
	return 0;
}
