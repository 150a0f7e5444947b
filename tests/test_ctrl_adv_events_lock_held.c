/* SPDX-License-Identifier: MIT */
/*
 * Adversary, completion events: on the emulated device ssqd logs a queue's
 * receives from the device's own thread (rx_event in recv_pool.c), under
 * the receive pool's mutex, which the poller and the control thread take
 * too (each pass; arming, with its drain and log line; pausing). A thread
 * holding it can be descheduled for milliseconds on a loaded machine, and
 * the control thread's drain reads CQEs clients can write: the device's
 * thread, which runs every queue's WQEs, must not wait for that mutex, or
 * every queue stops while one pool's lock is held. Where it is held, the
 * event leaves the CQEs to the poller.
 *
 * ssqd runs in this process (ssqd_setup) with two queues, its poller
 * stopped; this thread holds q0's pool mutex, a SEND through q0 makes the
 * device call q0's event, then a WRITE through q1 must complete while the
 * mutex is still held. Before, the device's thread waited in q0's event and
 * q1's WRITE completed only once the mutex was let go.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"

/* Seconds until CQE @idx of @q's send CQ lands (nobody routes), or -1. */
static double cqe_lands(const struct ssqd_queue *q, uint32_t idx, double limit)
{
	const struct ssq_cq *cq = &q->prod.cq;
	const struct mlx5_cqe64 *cqe =
	    (const struct mlx5_cqe64 *)(cq->buf +
	                                ((size_t)(idx & (cq->cqe_cnt - 1)) << 6));
	double t0 = mono_now();

	while (mono_now() - t0 < limit) {
		uint8_t op = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

		if ((op >> 4) != MLX5_CQE_INVALID && (op & 1) == !!(idx & cq->cqe_cnt))
			return mono_now() - t0;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct ssqd *d = ev_ssqd_new("lock");
	struct ssqd_queue *q0, *q1;
	double took;
	int rc;

	if (!d)
		return 1;
	d->opt.nqueues = 2;
	d->opt.signal_every = 1;
	if (ev_ssqd_start(d))
		return test_exit("ctrl_adv_events_lock_held");
	q0 = &d->queues[0];
	q1 = &d->queues[1];
	CHECK(q0->rx.events, "q0's receive pool is logged by the device's events");
	ssqd_recv_stop(d);

	/* Held, as by a poller or a control thread descheduled in it. */
	pthread_mutex_lock(&q0->rx.lock);
	rc = ssq_post_send(&q0->prod, MLX5_OPCODE_SEND, d->own.data_iova, d->own.data_key,
	                   64, 0, 1, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "a SEND through q0: %d", rc);
	took = cqe_lands(q0, q0->ctl->cq_ci, 5);
	CHECK(took >= 0, "q0's SEND completed");
	usleep(20000); /* the device's thread is in q0's event by now */
	rc =
	    ssq_post_write(&q1->prod, d->own.data_iova, d->own.data_key, 64,
	                   d->own.data_iova + 4096, d->own.data_key, 2, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "a WRITE through q1: %d", rc);
	took = cqe_lands(q1, q1->ctl->cq_ci, 1);
	CHECK(took >= 0 && took < 0.5,
	      "q1's WRITE completed %.0f ms after its post while q0's pool mutex was "
	      "held (-1000: not within 1 s)",
	      took * 1e3);
	printf("q1's WRITE: %.1f ms with q0's pool mutex held\n", took * 1e3);
	pthread_mutex_unlock(&q0->rx.lock);
	took = cqe_lands(q1, q1->ctl->cq_ci, 5);
	CHECK(took >= 0, "q1's WRITE completed once the mutex was let go");

	ev_ssqd_down(d);
	return test_exit("ctrl_adv_events_lock_held");
}
