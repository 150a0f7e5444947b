/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c): a combined WRITE accepted (0), then ssq_queue_close
 * (<ssq/combine.h>, <ssq/client.h>). ssqd on the emulated device, one
 * client, q0 opened twice (producers P and Q). Q holds the combiner role
 * (a combiner busy, or preempted, between C9 and its swap), so P's
 * ssq_post_write_combined hands its WRITE over and returns 0; P closes its
 * queue (a clean DETACH). Q then combines (swaps the bits, takes what is
 * POSTED) and lets the role go, as any combiner does. The WRITE must land
 * once, as a direct ssq_post_write followed by ssq_queue_close does (the
 * control case, first). ssq_queue_close does not settle P's last
 * combined request, and ssqd's DETACH marks the record dead, whose
 * ssq_ctl_mark_dead takes a POSTED request back, never to be posted.
 */
#define _GNU_SOURCE
#include <ssq/combine.h>
#include "ctrl_flow.h"

#define LEN 64u

/* Up to 5 s for @len bytes at @dst to read @v. */
static int lands(const struct ssq_buf *dst, uint8_t v)
{
	double t0 = now_s();
	unsigned k;

	while (now_s() - t0 < 5) {
		const volatile uint8_t *d = dst->addr;

		for (k = 0; k < LEN && d[k] == v; k++)
			;
		if (k == LEN)
			return 1;
		usleep(1000);
	}
	return 0;
}

int main(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL, *qp = NULL, *qq = NULL;
	struct ssq_buf src, dst;
	struct ssq_producer *p, *holder;
	struct ssq_ctl *ctl;
	pid_t d;
	int rc;

	t_need_ssqd();
	d = flow_start_q0("acl", &c, &q, &src, &dst);
	if (d < 0 || test_failures)
		goto out;
	CHECK(ssq_queue_open(c, "q0", &qp) == 0 && ssq_queue_open(c, "q0", &qq) == 0,
	      "q0 opened twice more: %s", ssq_client_error(c));
	if (!qp || !qq)
		goto out;
	p = ssq_queue_producer(qp);
	holder = ssq_queue_producer(qq);
	ctl = p->ctl;

	/* Control: a direct WRITE, then close: it lands. */
	memset(src.addr, 0x11, LEN);
	memset(dst.addr, 0, LEN);
	rc = ssq_post_write(p, src.iova, src.lkey, LEN, dst.remote_addr, dst.rkey, 1,
	                    SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "direct WRITE: %d", rc);
	CHECK(ssq_queue_close(qp) == 0, "close after the direct WRITE");
	qp = NULL;
	CHECK(lands(&dst, 0x11), "control: a direct WRITE then close did not land");
	printf("control: a direct WRITE, then ssq_queue_close: landed\n");

	/* A combined WRITE handed over to Q (the role Q's), then close. */
	CHECK(ssq_queue_open(c, "q0", &qp) == 0, "q0 again: %s", ssq_client_error(c));
	if (!qp)
		goto out;
	p = ssq_queue_producer(qp);
	memset(src.addr, 0x22, LEN);
	memset(dst.addr, 0, LEN);
	__atomic_store_n(&ctl->comb_role, holder->id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_write_combined(p, src.iova, src.lkey, LEN, dst.remote_addr,
	                             dst.rkey, 2, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "combined WRITE: %d", rc);
	CHECK((__atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE) & 3) ==
	          SSQ_HAND_POSTED,
	      "P's WRITE not handed over (state %u)",
	      (unsigned)(__atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE) & 3));
	CHECK(ssq_queue_close(qp) == 0, "close after the combined WRITE");
	qp = NULL;
	/* Q's pass, then C11, C12: what a combiner holding the role does next. */
	rc = ssq__combine(holder);
	CHECK(rc == 0, "Q's combine: %d", rc);
	(void)ssq_combine_flush(holder);
	CHECK(lands(&dst, 0x22),
	      "a combined WRITE accepted (0) and then ssq_queue_close never landed "
	      "(dst[0] 0x%02x; a direct one did)",
	      ((const volatile uint8_t *)dst.addr)[0]);
	printf("a combined WRITE handed over, then ssq_queue_close: %s\n",
	       ((const volatile uint8_t *)dst.addr)[0] == 0x22 ? "landed" : "lost");
out:
	if (qq)
		ssq_queue_close(qq);
	if (q)
		ssq_queue_close(q);
	if (c)
		ssq_client_close(c);
	if (d > 0)
		t_ssqd_kill(d, sock_path);
	return test_exit("ssq_combine_adv_close");
}
