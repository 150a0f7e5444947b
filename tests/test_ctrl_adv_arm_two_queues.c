/* SPDX-License-Identifier: MIT */
/*
 * Adversary, ssq_wait's send-CQ arm path with the device's events off (the
 * emulated device with SSQ_EMU_CQ_EVENTS=0): sleepers on two queues at
 * once, several rounds. Each round stops the device, posts a WRITE on each
 * queue, starts a sleeper on each (ssq_wait, 3 s) and waits until ssqd armed
 * both send CQs; then the device runs again. Each sleeper must get its
 * completion, and ssqd must take an event on each queue (an event taken
 * for the wrong queue, or an arm of one queue lost to the other's event,
 * leaves that queue's sleeper to its slice's end and its CQ unarmed). An
 * arm count bound checks the threads do not arm either CQ over and over.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"
#include "dv/queue_wait.h"

#define ROUNDS 20

static struct ssqd *d;
static uint64_t next_id = 1;

struct sleeper {
	pthread_t t;
	struct ssqd_queue *q;
	int rc;
};

static int write1(struct ssqd_queue *q)
{
	uint64_t laddr = d->own.data_iova;

	return ssq_post_write(&q->prod, laddr, d->own.data_key, 64, laddr + 4096,
	                      d->own.data_key, next_id++, SSQ_WQE_SIGNALED);
}

static void *sleep_main(void *arg)
{
	struct sleeper *s = arg;

	s->rc = ssq_wait(&s->q->prod, 1, 3000000000ull);
	return NULL;
}

/* Take one completion of @q, a success. */
static void reap(struct ssqd_queue *q)
{
	struct ssq_completion c;
	double deadline = mono_now() + 5;
	int got = 0;

	while (deadline > mono_now() && (got = ssq_poll(&q->prod, &c, 1)) == 0)
		usleep(100);
	CHECK(got == 1 && c.status == IBV_WC_SUCCESS, "completion: %d, status %d", got,
	      got == 1 ? c.status : -1);
}

static void round_two(int r)
{
	struct sleeper s[2];
	uint64_t e0[2];
	double deadline = mono_now() + 3;
	int i;

	d->ops->stop(d->backend);
	for (i = 0; i < 2; i++) {
		s[i].q = &d->queues[i];
		e0[i] = s[i].q->txa.events;
		CHECK(write1(s[i].q) == 0, "round %d: WRITE on q%d", r, i);
		CHECK(pthread_create(&s[i].t, NULL, sleep_main, &s[i]) == 0, "sleeper");
	}
	while ((!__atomic_load_n(&s[0].q->txa.armed, __ATOMIC_ACQUIRE) ||
	        !__atomic_load_n(&s[1].q->txa.armed, __ATOMIC_ACQUIRE)) &&
	       mono_now() < deadline)
		usleep(200);
	CHECK(s[0].q->txa.armed && s[1].q->txa.armed,
	      "round %d: two sleepers asked, armed q0 %d q1 %d", r, s[0].q->txa.armed,
	      s[1].q->txa.armed);
	CHECK(d->ops->start(d->backend) == 0, "the device again");
	for (i = 0; i < 2; i++) {
		pthread_join(s[i].t, NULL);
		CHECK(s[i].rc == 1, "round %d: ssq_wait on q%d: %d, want 1", r, i,
		      s[i].rc);
		deadline = mono_now() + 3;
		while (__atomic_load_n(&s[i].q->txa.events, __ATOMIC_ACQUIRE) == e0[i] &&
		       mono_now() < deadline)
			usleep(200);
		CHECK(s[i].q->txa.events != e0[i], "round %d: q%d's CQE came, no event",
		      r, i);
		reap(s[i].q);
	}
}

int main(void)
{
	char why[512] = "";
	int rc, r;

	d = ev_ssqd_new("arm2q");
	if (!d)
		return 1;
	d->opt.nqueues = 2;
	d->opt.recv_depth = 0;
	d->opt.signal_every = 1;
	d->opt.arena_rkey = 1;
	setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	rc = ssqd_setup(d, why, sizeof(why));
	CHECK(rc == 0, "ssqd_setup: %d (%s)", rc, why);
	if (rc)
		return test_exit("ctrl_adv_arm_two_queues");
	CHECK(d->txa.running && d->queues[0].txa.on && d->queues[1].txa.on,
	      "events off: both queues' sleepers ask for arms");
	for (r = 0; r < 2; r++)
		d->queues[r].prod.arm_seq = &d->hdr->tx_arm_seq;
	for (r = 0; r < ROUNDS && !test_failures; r++)
		round_two(r);
	for (r = 0; r < 2; r++) {
		printf("q%d: %llu arm(s), %llu event(s) in %d rounds\n", r,
		       (unsigned long long)d->queues[r].txa.arms,
		       (unsigned long long)d->queues[r].txa.events, ROUNDS);
		CHECK(d->queues[r].txa.arms <= 4 * ROUNDS, "q%d armed %llu times", r,
		      (unsigned long long)d->queues[r].txa.arms);
	}
	ev_ssqd_down(d);
	return test_exit("ctrl_adv_arm_two_queues");
}
