/* SPDX-License-Identifier: MIT */
/*
 * run.c - one sender process of a benchmark run, in any --mode: its lanes
 * opened (lanes.c), its source and request template, then its loop
 * (loops.c); the proxy process of --mode proxy is proxy.c.
 *
 * Every mode posts through the same builder, pt_post_batch() (lanes.c).
 * The modes differ only in who calls it and around what:
 *   lockfree        each sender, on the shared queues q0..q<N-1> (-q N)
 *   spinlock        each sender, on those, inside the queue's one
 *                   process-shared spinlock (every post and every poll)
 *   qp-per-process  sender i, on its own queues q<i*N>..q<i*N+N-1> (it is
 *                   their only producer)
 *   proxy           senders put requests into their own SPSC ring; one
 *                   proxy process drains the rings and posts them on q0..
 * A sender's batches go round-robin over its N queues ("lanes"), each lane
 * with its own in-flight window and signaling; with --queue-pick it has one
 * lane, the one of the N queues ssqd picked for its open of "any".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "run.h"
#include "loops.h"

/* The request template of this test: opcode, WQEBBs, inline. */
static void req_template(const struct pt_opts *o, uint32_t size, struct pt_req *t)
{
	memset(t, 0, sizeof(*t));
	t->len = size;
	t->wqebbs = 1;
	if (pt_is_read(o)) {
		t->opcode = MLX5_OPCODE_RDMA_READ;
	} else if (pt_is_atomic(o)) {
		t->opcode = o->atomic_cas ? MLX5_OPCODE_ATOMIC_CS : MLX5_OPCODE_ATOMIC_FA;
		t->len = 8;
		/* ctrl, raddr, atomic, data: 4 DS of 16 bytes, one WQEBB. */
	} else {
		int send = o->test == PT_SEND_BW || o->test == PT_SEND_LAT;

		t->opcode = send ? MLX5_OPCODE_SEND : MLX5_OPCODE_RDMA_WRITE;
		if (size <= o->inline_size) {
			t->inl = 1;
			/* ctrl, raddr (not SEND), the 4-byte count + data padded to DS.
			 */
			t->wqebbs =
			    (uint8_t)(((send ? 16 : 32) + ((4 + size + 15) & ~15u) + 63) /
			              64);
		}
	}
}

/*
 * The index k of lane @lane's queue q<k> (opened as @q): ssqd's pick for
 * "any" (its name, as ssqd lists it), else the one the options name.
 */
static uint32_t lane_queue(const struct pt_opts *o, uint32_t idx, uint32_t lane,
                           const struct ssq_queue *q)
{
	unsigned k;

	if (o->queue_pick && q && sscanf(ssq_queue_name(q), "q%u", &k) == 1 &&
	    k < PT_MAX_LANES)
		return k;
	return pt_queue_index(o, idx, lane);
}

int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size)
{
	struct pt_shared *sh = e->sh;
	struct pt_result *res = &sh->res[idx];
	struct ssq_client *c = NULL, *cd = NULL;
	struct ssq_queue *q;
	struct pt_port pt = { .mode = o->mode,
		              .nlanes = pt_lanes(o),
		              .events = o->events && !pt_is_lat(o),
		              .sh = sh,
		              .why = res->why,
		              .why_len = sizeof(res->why) };
	struct ssq_buf src, dst;
	struct ssq_queue *rq[PT_MAX_LANES] = { NULL };
	uint64_t next[PT_MAX_LANES];
	struct pt_req tmpl;
	char name[32];
	uint32_t i;
	int rc;

	res->rc = 1;
	if (ssq_client_connect(e->socket, &c)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_strerror_last());
		goto fail;
	}
	for (i = 0; i < pt.nlanes && o->mode != PT_PROXY; i++) {
		pt_queue_name(o, idx, i, name, sizeof(name));
		if (ssq_queue_open(c, name, &q)) {
			snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
			goto fail;
		}
		pt.lane[i].prod = ssq_queue_producer(q);
		/* spinlock: the queue's own lock (-q N: lane i is q<i>). */
		pt.lane[i].lock = &sh->lock[lane_queue(o, idx, i, q)];
		rq[i] = q;
		res->picked = lane_queue(o, idx, i, q);
	}
	if (ssq_buf_alloc(c, size < 8 ? 8 : size, &src)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
		goto fail;
	}
	memset(src.addr, 0x5a, src.len);
	if ((o->test == PT_SEND_BW || o->test == PT_SEND_LAT) && size >= 2)
		((uint8_t *)src.addr)[0] = (uint8_t)(idx + 1); /* whose SEND */
	pt.ring = &sh->rings[idx];
	pt.smp = &sh->smp[idx];
	pt.smp->every = 256;
	pt.live = o->run_inf ? &res->live : NULL;
	req_template(o, size, &tmpl);
	/*
	 * Inline data is copied by whoever builds the WQE, from where it sees
	 * the source: here, or (proxy) the proxy, which maps the arena
	 * elsewhere and translates the IOVA itself.
	 */
	tmpl.laddr =
	    tmpl.inl && o->mode != PT_PROXY ? (uint64_t)(uintptr_t)src.addr : src.iova;
	tmpl.lkey = src.lkey;
	/* The destination buffer at its remote descriptor, this sender's slot in it. */
	tmpl.raddr = e->dst_iova + (uint64_t)idx * e->slot;
	tmpl.rkey = e->rkey;
	if (o->test == PT_SEND_BW || o->test == PT_SEND_LAT)
		tmpl.raddr = tmpl.rkey = 0;
	for (i = 0; i < pt.nlanes; i++) {
		uint32_t peer = i % (o->npeers ? o->npeers : 1);
		const struct pt_peer_dst *pd = &e->peer_dst[peer];

		pt.lane[i].raddr = o->npeers ? pd->iova : tmpl.raddr;
		pt.lane[i].rkey = o->npeers ? pd->rkey : tmpl.rkey;
		/* A server's grant reaches its destination through one queue. */
		if (e->qgrants && !pt_is_send(o))
			pt.lane[i].rkey = e->qrkey[peer][lane_queue(o, idx, i, rq[i])];
	}
	if (o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT) {
		/*
		 * Watch the destination (send_lat: the receive log) where it is:
		 * over the wire, in the other ssqd.
		 */
		if (strcmp(e->dst_socket, e->socket) &&
		    ssq_client_connect(e->dst_socket, &cd)) {
			snprintf(res->why, sizeof(res->why), "%s",
			         ssq_client_strerror_last());
			goto fail;
		}
		if (ssq_buf_at(cd ? cd : c, e->dst_off, e->dst_len, &dst)) {
			snprintf(res->why, sizeof(res->why),
			         "destination not in the arena");
			goto fail;
		}
	}
	/*
	 * send_lat reads each queue's receive log where its receiver keeps it:
	 * loopback, the queue itself (already open unless proxy); over the
	 * wire, the listening ssqd's queue of the same name.
	 */
	for (i = 0; i < o->qps && o->test == PT_SEND_LAT; i++) {
		pt_queue_name(o, idx, i, name, sizeof(name));
		if (cd || !rq[i]) {
			rq[i] = NULL;
			if (ssq_queue_open(cd ? cd : c, name, &rq[i])) {
				snprintf(res->why, sizeof(res->why), "%s",
				         ssq_client_error(cd ? cd : c));
				goto fail;
			}
		}
		/* Nothing is sent before go: everything after this is this run's. */
		next[i] = ssq_recv_arrived(rq[i]);
	}
	pt_start_line(sh);
	if (o->test == PT_WRITE_LAT)
		rc = pt_lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		                 src.addr, (uint8_t *)dst.addr + (size_t)idx * e->slot,
		                 size);
	else if (pt_is_cqe_lat(o))
		rc = pt_cqe_lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		                     src.addr, size);
	else if (o->test == PT_SEND_LAT)
		rc = pt_send_lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		                      src.addr, idx, size, rq, next);
	else
		rc = pt_bw_loop(o, &pt, &tmpl, res);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&pt.ring->fin, 1, __ATOMIC_RELEASE);
	if (rc)
		goto fail;
	/* Lane i goes to peer i % peers (pt_queue_name). */
	for (i = 0; o->npeers && i < pt.nlanes; i++)
		res->peer_msgs[i % o->npeers] += pt.lane[i].posted;
	res->rc = 0;
	if (cd)
		ssq_client_close(cd);
	ssq_client_close(c);
	return 0;
fail:
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELAXED);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&sh->rings[idx].fin, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL); /* don't hold the start */
	if (cd)
		ssq_client_close(cd);
	if (c)
		ssq_client_close(c);
	return 1;
}
