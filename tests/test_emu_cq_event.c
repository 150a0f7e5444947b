/* SPDX-License-Identifier: MIT */
/*
 * Completion events (emu_cq_set_event): the handler of a receive CQ is
 * called once for a pass of emu_process that wrote CQEs into it, after the
 * device's lock is dropped (it polls the CQ and finds them), never for a
 * pass that wrote none or for a CQ without a handler; a NULL handler stops
 * the calls; the device thread calls it from its own thread. A device
 * opened with no_cq_events, like a ConnectX to a consumer without a
 * completion channel, refuses (-EOPNOTSUPP); SSQ_EMU_CQ_EVENTS takes 0 or
 * 1 and names anything else.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

struct seen {
	struct emu_tb *tb;
	unsigned calls;   /* atomic: the device thread calls too */
	unsigned cqes;    /* receive CQEs the handler polled */
	unsigned bad;     /* of them, not a 64-byte SEND's */
	unsigned told;    /* the CQEs the device said it wrote, all calls */
	pthread_t caller; /* the thread of the last call */
};

static void on_event(void *arg, unsigned cqes)
{
	struct seen *s = arg;

	s->told += cqes;
	struct ssq_cqe c[8];
	int n, i;

	s->caller = pthread_self();
	while ((n = ssq_cq_poll(&s->tb->s[1].rcq_v, c, 8)) > 0)
		for (i = 0; i < n; i++) {
			s->cqes++;
			s->bad += c[i].status != IBV_WC_SUCCESS || c[i].byte_len != 64;
		}
	__atomic_fetch_add(&s->calls, 1, __ATOMIC_RELEASE);
}

static void post_recvs(struct emu_tb_side *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { s->iova + 0x1000 + (uint64_t)i * 256, 256,
			               s->key };

		CHECK(ssq_rq_post_recv(&s->rq, &sge, 1) == 0, "post recv %d", i);
	}
	ssq_rq_ring(&s->rq);
}

/* @n signaled 64-byte SENDs from side 0, one doorbell. */
static void sends(struct emu_tb *tb, int n)
{
	struct emu_tb_side *a = &tb->s[0];
	int i;

	for (i = 0; i < n; i++)
		a->sq.pi += ssq_prep_send(&a->sq, a->sq.pi, MLX5_OPCODE_SEND, a->iova,
		                          a->key, 64, 0, SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, a->sq.pi - 1);
}

static void drain_send_cq(struct emu_tb *tb)
{
	struct ssq_cqe c[16];

	while (ssq_cq_poll(&tb->s[0].scq_v, c, 16) > 0)
		;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void in_process(struct emu_tb *tb, struct seen *s)
{
	CHECK(emu_cq_set_event(NULL, on_event, s) == -EINVAL, "NULL CQ");
	CHECK(emu_cq_set_event(tb->s[1].rcq, on_event, s) == 0, "set the handler");
	post_recvs(&tb->s[1], 16);

	sends(tb, 3);
	CHECK(emu_process(tb->dev, 1024) == 3, "three SENDs executed in one pass");
	CHECK(s->calls == 1, "one pass that wrote 3 CQEs: %u calls, want 1", s->calls);
	CHECK(s->cqes == 3 && !s->bad, "the handler found %u CQEs (%u bad), want 3 good",
	      s->cqes, s->bad);
	CHECK(s->told == 3, "the device said it wrote %u CQEs, want 3", s->told);
	CHECK(pthread_equal(s->caller, pthread_self()), "called by emu_process's caller");

	CHECK(emu_process(tb->dev, 1024) == 0, "nothing more to do");
	CHECK(s->calls == 1, "a pass that wrote no CQE called the handler (%u calls)",
	      s->calls);
	drain_send_cq(tb);

	CHECK(emu_cq_set_event(tb->s[1].rcq, NULL, NULL) == 0, "clear the handler");
	sends(tb, 1);
	emu_process(tb->dev, 1024);
	CHECK(s->calls == 1, "a cleared handler was called (%u calls)", s->calls);
	CHECK(s->cqes == 3, "a cleared handler polled (%u CQEs)", s->cqes);
	{
		struct ssq_cqe c;

		CHECK(ssq_cq_poll(&tb->s[1].rcq_v, &c, 1) == 1,
		      "the CQE is there to poll");
	}
	drain_send_cq(tb);
}

static void device_thread(struct emu_tb *tb, struct seen *s)
{
	unsigned calls0, cqes0 = s->cqes;
	double deadline;

	CHECK(emu_cq_set_event(tb->s[1].rcq, on_event, s) == 0, "set the handler again");
	CHECK(emu_start(tb->dev) == 0, "start the device thread");
	calls0 = __atomic_load_n(&s->calls, __ATOMIC_ACQUIRE);
	sends(tb, 2);
	deadline = now() + 5;
	while (now() < deadline &&
	       (__atomic_load_n(&s->calls, __ATOMIC_ACQUIRE) == calls0 ||
	        s->cqes < cqes0 + 2))
		usleep(100);
	CHECK(emu_stop(tb->dev) == 0, "stop the device thread");
	CHECK(s->cqes == cqes0 + 2 && !s->bad,
	      "the device thread's calls polled %u CQEs (%u bad), want 2 good",
	      s->cqes - cqes0, s->bad);
	CHECK(!pthread_equal(s->caller, pthread_self()), "called by the device thread");
	drain_send_cq(tb);
}

static void refused(void)
{
	struct emu_dev_attr a = { .ignore_env = 1, .no_cq_events = 1 };
	struct emu_tb_opts o = { .dev_attr = &a };
	struct emu_dev *dev = NULL;
	struct emu_tb tb;
	struct seen s = { .tb = &tb };

	CHECK(emu_tb_init(&tb, &o) == 0, "a testbed without completion events");
	CHECK(emu_cq_set_event(tb.s[1].rcq, on_event, &s) == -EOPNOTSUPP,
	      "no_cq_events: the handler is refused");
	emu_tb_fini(&tb);

	setenv("SSQ_EMU_CQ_EVENTS", "2", 1);
	CHECK(emu_open(&dev, NULL) == -EINVAL, "SSQ_EMU_CQ_EVENTS=2 refused");
	setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	CHECK(emu_open(&dev, NULL) == 0, "SSQ_EMU_CQ_EVENTS=0 taken");
	emu_close(dev);
	unsetenv("SSQ_EMU_CQ_EVENTS");
}

int main(void)
{
	struct emu_tb tb;
	struct seen s = { .tb = &tb };

	if (emu_tb_init(&tb, NULL)) {
		CHECK(0, "testbed");
		return test_exit("emu_cq_event");
	}
	in_process(&tb, &s);
	device_thread(&tb, &s);
	emu_tb_fini(&tb);
	refused();
	return test_exit("emu_cq_event");
}
