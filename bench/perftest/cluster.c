/* SPDX-License-Identifier: MIT */
/*
 * cluster.c - where --peers runs write: on the cluster this tool started
 * (daemons.c), a destination in each peer ssqd's arena, the tool a client
 * of each; against a running cluster (--ssq_socket), this host's ssqd
 * links to every peer ssqd and each peer's host runs the tool's --server
 * on its own ssqd. The client then keeps one side channel per peer
 * (twohost_client.c's, each to NAME@HOST[:PORT], else the peer's name and -p):
 * each server holds a destination in its arena and checks what its share
 * of the run left there, as in a two-host run.
 */
#include <string.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "cluster.h"
#include "twohost_client.h"
#include "twohost_queues.h"

/* Peer @k's view of the run: its server (twohost_server.c) is its host and port. */
static void peer_opts(const struct pt_opts *o, uint32_t k, struct pt_opts *po)
{
	*po = *o;
	po->peer_host = o->peer_srv[k][0] ? o->peer_srv[k] : o->peers[k];
	po->port = o->peer_port[k] ? o->peer_port[k] : o->port;
}

/* Peer @k's queue NAME/q0 on @c, linking the peer if it is not (the open waits). */
static int open_peer_q0(const struct pt_opts *o, struct ssq_client *c, uint32_t k,
                        struct ssq_queue **q)
{
	char name[32];

	snprintf(name, sizeof(name), "%s/q0", o->peers[k]);
	if (ssq_queue_open(c, name, q) == 0)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", o->tool, name, ssq_client_error(c));
	return -1;
}

int pt_cl_local_open(const struct pt_opts *o, struct ssq_client *c,
                     struct ssq_client *const *cp, uint32_t top, struct pt_env *e,
                     struct ssq_queue **q0, struct ssq_buf *dst0)
{
	struct ssq_queue *q;
	struct ssq_buf b;
	uint32_t k;

	for (k = 0; k < o->npeers; k++) {
		if (open_peer_q0(o, c, k, &q))
			return -1;
		if (ssq_buf_alloc(cp[k], top < 8 ? 8 : top, &b)) {
			fprintf(stderr, "%s: %s's arena: %s\n", o->tool, o->peers[k],
			        ssq_client_error(cp[k]));
			return -1;
		}
		/*
		 * Its remote descriptor, granted to each of that peer's
		 * queues to this host (here/qk: this host's ssqd is "here",
		 * daemons.c), where the senders' requests arrive.
		 */
		if (pt_th_grant_all(o, cp[k], "here/", &b, e->qrkey[k]))
			return -1;
		e->qgrants = 1;
		e->peer_dst[k] = (struct pt_peer_dst){ .iova = b.remote_addr,
			                               .rkey = b.rkey,
			                               .addr = b.addr,
			                               .len = b.len };
		if (k == 0) {
			*q0 = q;
			*dst0 = b;
		}
	}
	return 0;
}

int pt_cl_open(const struct pt_opts *o, struct ssq_client *c, uint32_t top, int check,
               struct pt_env *e, struct ssq_queue **q0, struct ssq_buf *dst0)
{
	struct pt_opts po;
	struct pt_env pe;
	struct ssq_queue *q;
	char prefix[PT_PEER_NAME + 1];
	uint32_t k;

	for (k = 0; k < o->npeers; k++) {
		if (open_peer_q0(o, c, k, &q))
			return -1;
		peer_opts(o, k, &po);
		memset(&pe, 0, sizeof(pe));
		snprintf(prefix, sizeof(prefix), "%s/", o->peers[k]);
		if (pt_th_client_open(&po, c, prefix, q, top, check, NULL, &pe,
		                      e->qrkey[k]))
			return -1;
		e->qgrants = 1;
		e->srv_fd[e->nsrv++] = pe.th_fd;
		e->peer_dst[k] = (struct pt_peer_dst){ .iova = pe.dst_iova,
			                               .rkey = pe.rkey,
			                               .len = pe.dst_len };
		if (k == 0) {
			*q0 = q;
			memset(dst0, 0, sizeof(*dst0));
			dst0->iova = dst0->remote_addr = pe.dst_iova;
			dst0->rkey = pe.rkey;
			dst0->len = pe.dst_len;
		}
	}
	return 0;
}

int pt_cl_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size)
{
	struct pt_opts po;
	struct pt_env pe = { .th_fd = -1 };
	uint32_t k;

	for (k = 0; k < e->nsrv; k++) {
		peer_opts(o, k, &po);
		pe.th_fd = e->srv_fd[k];
		if (pt_th_client_start(&po, &pe, size))
			return -1;
	}
	return 0;
}

int pt_cl_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size, int ok,
               char *verdicts, size_t len)
{
	struct pt_opts po;
	struct pt_env pe = { .th_fd = -1 };
	char v[200];
	size_t at = 0;
	uint32_t k;
	int rc = 0;

	verdicts[0] = 0;
	for (k = 0; k < e->nsrv; k++) {
		peer_opts(o, k, &po);
		pe.th_fd = e->srv_fd[k];
		v[0] = 0;
		/* Every server hears the end of the size, even after one failed. */
		if (pt_th_client_done(&po, &pe, size, ok ? e->peer_msgs[k] : 0, ok, NULL,
		                      v, sizeof(v)))
			rc = -1;
		if (v[0] && at < len)
			at += (size_t)snprintf(verdicts + at, len - at, "%s%s (%s)",
			                       at ? "\n" : "", v, o->peers[k]);
	}
	return rc;
}

void pt_cl_close(const struct pt_opts *o, struct pt_env *e, int bye)
{
	struct pt_env pe;
	uint32_t k;

	for (k = 0; k < e->nsrv; k++) {
		pe.th_fd = e->srv_fd[k];
		if (bye)
			pt_th_client_close(o, &pe); /* BYE, then closed */
		else
			close(pe.th_fd); /* no BYE: the server must not take it for
			                    success */
	}
	e->nsrv = 0;
}
