/* SPDX-License-Identifier: MIT */
/*
 * Adversary, completion events: the receive CQ a queue's receive pool
 * reaps lives in the arena every client maps read-write, and on the
 * emulated device ssqd reaps it from the device's own thread (the
 * backend's cq_event, rx_event in recv_pool.c), the thread that executes
 * every queue's WQEs. A client that forges CQEs after the one the device
 * writes next had that thread log (and re-post a receive for) up to
 * --recv-depth of them for each CQE the device wrote: 256 records and 256
 * WQEs by default, so one client, sending to itself and re-forging, could
 * make the shared device many times slower for every queue. The device
 * knows how many CQEs it wrote since the last call; the handler must take
 * no more than that, leaving the rest to the poller.
 *
 * ssqd runs in this process (ssqd_setup), its poller stopped so that only
 * the device's thread reaps: 100 CQEs forged after the device's next slot,
 * then one SEND through q0; the device's event must log one message, not
 * 101.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"

#define FORGED 100

/* Receive CQE @idx of @cq, owned by software in its lap, as a client may. */
static void forge(struct ssq_cq *cq, uint32_t idx)
{
	struct mlx5_cqe64 *c =
	    (struct mlx5_cqe64 *)(cq->buf + ((size_t)(idx & (cq->cqe_cnt - 1)) << 6));

	memset(c, 0, sizeof(*c));
	c->byte_cnt = htobe32(1);
	c->wqe_counter = htobe16((uint16_t)idx);
	__atomic_store_n(&c->op_own,
	                 (uint8_t)(MLX5_CQE_RESP_SEND << 4 | !!(idx & cq->cqe_cnt)),
	                 __ATOMIC_RELEASE);
}

int main(void)
{
	struct ssqd *d = ev_ssqd_new("budget");
	struct ssqd_recv_pool *p;
	struct ssqd_queue *q;
	uint64_t a0, a1;
	double deadline;
	uint32_t i;
	int rc;

	if (!d)
		return 1;
	if (ev_ssqd_start(d))
		return test_exit("ctrl_adv_events_forged_budget");
	q = &d->queues[0];
	p = &q->rx;
	CHECK(p->events, "q0's receive pool is reaped by the device's events");
	ssqd_recv_stop(d); /* only the device's thread reaps from here */

	a0 = pool_arrived(p);
	pthread_mutex_lock(&p->lock);
	for (i = 1; i <= FORGED; i++)
		forge(&p->cq, p->cq.ci + i); /* the device writes p->cq.ci next */
	pthread_mutex_unlock(&p->lock);

	rc = ssq_post_send(&q->prod, MLX5_OPCODE_SEND, d->own.data_iova, d->own.data_key,
	                   64, 0, 1, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "a SEND through q0: %d", rc);
	deadline = mono_now() + 5;
	while ((a1 = pool_arrived(p)) == a0 && mono_now() < deadline)
		usleep(1000);
	usleep(50 * 1000); /* a second event, if any, would come within this */
	a1 = pool_arrived(p);
	CHECK(a1 - a0 == 1,
	      "the device wrote one receive CQE and its thread logged %llu messages "
	      "(%d forged after it)",
	      (unsigned long long)(a1 - a0), FORGED);
	printf("the device's thread logged %llu messages for the one it received\n",
	       (unsigned long long)(a1 - a0));
	ev_ssqd_down(d);
	return test_exit("ctrl_adv_events_forged_budget");
}
