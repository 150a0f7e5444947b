/* SPDX-License-Identifier: MIT */
/*
 * checks.c - did the data arrive? After a run: the WRITEs' destination
 * (every sender's source is 0x5a; write_lat's last byte is its last
 * message's), and a SEND run's receive pool, whose log must hold every
 * SEND, the newest pool-full intact. Used on one host (engine.c) and by
 * the two-host server (twohost_server.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "checks.h"

/* The bytes at @d: every one 0x5a (write_lat: but the last). 0 or 1 (said why). */
static int check_bytes(const struct pt_opts *o, const uint8_t *d, uint32_t size,
                       uint8_t last, const char *whose)
{
	uint32_t i;

	for (i = 0; i < size; i++) {
		uint8_t want = i + 1 == size ? last : 0x5a;

		if (d[i] != want) {
			fprintf(stderr,
			        "%s: destination byte %u%s is 0x%02x after the run, not "
			        "0x%02x\n",
			        o->tool, i, whose, d[i], want);
			return 1;
		}
	}
	return 0;
}

/* After a run of @size: did the WRITEs land? 0 or 1 (said why). */
int pt_check_dst(const struct pt_opts *o, const struct pt_env *e, uint32_t size)
{
	uint32_t p, np = o->test == PT_WRITE_LAT ? o->procs : 1;
	/* write_lat: the last WRITE's last byte was (iters - 1) % 255 + 1. */
	uint8_t last =
	    o->test == PT_WRITE_LAT ? (uint8_t)((o->iters - 1) % 255 + 1) : 0x5a;
	char whose[48];

	/* --peers: every peer's destination got every sender's WRITEs. */
	for (p = 0; p < o->npeers; p++) {
		snprintf(whose, sizeof(whose), " at %s", o->peers[p]);
		if (check_bytes(o, e->peer_dst[p].addr, size, last, whose))
			return 1;
	}
	/* Every sender's source holds 0x5a (write_lat: but its last byte). */
	for (p = 0; !o->npeers && p < np; p++)
		if (check_bytes(o, e->dst + (size_t)p * e->slot, size, last,
		                np > 1 ? " of a sender's slot" : ""))
			return 1;
	return 0;
}

int pt_check_recv(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                  const uint64_t *base, uint64_t sent)
{
	uint64_t got = 0, k, lo, a;
	struct ssq_recv_msg m = { 0 };
	double t0 = pt_now();
	uint32_t i, j;

	/* The pool's poller logs a message after the sender's CQE: wait for it. */
	do {
		for (got = 0, i = 0; i < e->nrq; i++)
			got += ssq_recv_arrived(e->rq[i]) - base[i];
	} while (got < sent && pt_now() - t0 < 10 && !usleep(1000));
	if (got != sent) {
		fprintf(stderr, "%s: the receive pool logged %llu of %llu SENDs\n",
		        o->tool, (unsigned long long)got, (unsigned long long)sent);
		return 1;
	}
	/* The newest depth messages of each queue are still there: check them. */
	for (i = 0; i < e->nrq; i++) {
		a = ssq_recv_arrived(e->rq[i]);
		lo = a - base[i] > ssq_recv_depth(e->rq[i]) ? a - ssq_recv_depth(e->rq[i])
		                                            : base[i];
		for (k = lo; k < a; k++) {
			const uint8_t *d;
			int bad = ssq_recv_peek(e->rq[i], k, &m) ||
			          m.status != IBV_WC_SUCCESS ||
			          m.opcode != MLX5_CQE_RESP_SEND || m.byte_len != size ||
			          !m.data;

			d = m.data;
			/* Sender s's payload: s + 1 (size >= 2), then 0x5a. */
			for (j = 0; !bad && j < size; j++)
				bad = j == 0 && size >= 2 ? d[0] < 1 || d[0] > o->procs
				                          : d[j] != 0x5a;
			if (bad || ssq_recv_check(e->rq[i], k)) {
				fprintf(
				    stderr,
				    "%s: queue q%u, received message %llu: status %u, "
				    "opcode 0x%x, %u bytes (want %u), payload byte %u "
				    "wrong or overwritten\n",
				    o->tool, i, (unsigned long long)k, m.status, m.opcode,
				    m.byte_len, size, j ? j - 1 : 0);
				return 1;
			}
		}
	}
	return 0;
}

/*
 * SEND: every queue's receive log, where its receiver keeps it (loopback
 * @c's queue itself, @q0 already open; --wire the listening ssqd's queue
 * of the same name), and a pool that takes what this run sends.
 */
int pt_open_recv_logs(const struct pt_opts *o, struct ssq_client *c,
                      struct ssq_client *cd, struct ssq_queue *q0, struct pt_env *e)
{
	uint32_t i, depth, bytes, top = pt_top_size(o);
	char name[16];

	pt_recv_pool(o, &depth, &bytes);
	e->nrq = pt_queues_needed(o);
	for (i = 0; i < e->nrq; i++) {
		snprintf(name, sizeof(name), "q%u", i);
		if (i == 0 && cd == c) {
			e->rq[i] = q0;
		} else if (ssq_queue_open(cd, name, &e->rq[i])) {
			fprintf(stderr, "%s: receive log of %s: %s\n", o->tool, name,
			        ssq_client_error(cd));
			return -1;
		}
	}
	if (!ssq_recv_depth(e->rq[0])) {
		fprintf(stderr,
		        "%s: the receiving ssqd has no receive pool (--recv-depth 0): "
		        "SEND needs one\n",
		        o->tool);
		return -1;
	}
	if (ssq_recv_size(e->rq[0]) < top) {
		fprintf(stderr,
		        "%s: -s %u: the receiving ssqd's buffers take %u bytes "
		        "(--recv-size)\n",
		        o->tool, top, ssq_recv_size(e->rq[0]));
		return -1;
	}
	if (ssq_recv_depth(e->rq[0]) < depth)
		printf("%s: the receive pool keeps %u posted, fewer than can be in "
		       "flight (%u): senders may wait out RNR timers\n",
		       o->tool, ssq_recv_depth(e->rq[0]), depth);
	return 0;
}
