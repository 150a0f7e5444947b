/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status [--json] (daemon.h): LIST and PEER requests, as any client
 * makes them; a table for people, or one JSON object for scripts.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/client.h>
#include "ctrl/daemon/daemon.h"
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
 * What both forms of --status print: a client of the ssqd at @socket_path
 * (*@cp, for the caller to close) and its queues and peers. Returns 0, or
 * 1 having said why on stderr and closed what it opened.
 */
static int status_fetch(const char *socket_path, struct ssq_client **cp,
                        struct ssq_queue_info *q, int *nqp, struct ssq_peer_info *p,
                        int *npp)
{
	struct ssq_client *c;
	int nq, np;

	if (ssq_client_connect(socket_path, &c)) {
		fprintf(stderr, "ssqd --status: %s\n", ssq_client_strerror_last());
		return 1;
	}
	nq = ssq_client_list(c, q, SSQ_MAX_QUEUES);
	np = nq < 0 ? nq : ssq_client_peers(c, p, SSQ_MAX_QUEUES);
	if (nq < 0 || np < 0) {
		fprintf(stderr, "ssqd --status: %s\n", ssq_client_error(c));
		ssq_client_close(c);
		return 1;
	}
	*cp = c;
	*nqp = nq;
	*npp = np;
	return 0;
}

int ssqd_status_print(const char *socket_path, FILE *out)
{
	struct ssq_queue_info q[SSQ_MAX_QUEUES];
	struct ssq_peer_info p[SSQ_MAX_QUEUES];
	struct ssq_client *c;
	int nq, np, i;

	if (status_fetch(socket_path, &c, q, &nq, p, &np))
		return 1;
	fprintf(out, "ssqd at %s on %s: %d queue(s), %d peer(s)\n", socket_path,
	        ssq_client_device(c), nq, np);
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
			        p[i].why[0] ? p[i].why : "-");
		}
	}
	fprintf(out, "%-31s %-8s %7s %s\n", "QUEUE", "QPN", "REFUSED", "STATE");
	for (i = 0; i < nq && i < (int)SSQ_MAX_QUEUES; i++)
		fprintf(out, "%-31s 0x%-6x %7u %s\n", q[i].name, q[i].qpn, q[i].refused,
		        q[i].ready ? "ready" : "not ready");
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

int ssqd_status_json(const char *socket_path, FILE *out)
{
	struct ssq_queue_info q[SSQ_MAX_QUEUES];
	struct ssq_peer_info p[SSQ_MAX_QUEUES];
	struct ssq_client *c;
	int nq, np, i;

	if (status_fetch(socket_path, &c, q, &nq, p, &np))
		return 1;
	fputs("{\"socket\": ", out);
	json_str(out, socket_path);
	fputs(", \"device\": ", out);
	json_str(out, ssq_client_device(c));
	fputs(", \"queues\": [", out);
	for (i = 0; i < nq && i < (int)SSQ_MAX_QUEUES; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", out);
		json_str(out, q[i].name);
		fprintf(out, ", \"qpn\": %u, \"refused\": %u, \"ready\": %s}", q[i].qpn,
		        q[i].refused, q[i].ready ? "true" : "false");
	}
	fputs("], \"peers\": [", out);
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
	fputs("]}\n", out);
	ssq_client_close(c);
	return 0;
}
