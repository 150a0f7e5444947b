/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv8b): a full batch accepted (SSQ_HAND_REQS combined
 * WRITEs, each 0), then ssq_queue_close (<ssq/combine.h>,
 * <ssq/client.h>). ssqd on the emulated device, one client, q0 opened
 * twice (producers P and Q). Q holds the combiner role (busy, or
 * preempted, between C9 and its swap), so each of P's
 * ssq_post_write_combined appends to one batch, POSTED(seq, K). P closes
 * its queue; then Q combines and lets the role go, as any combiner does.
 * Every WRITE of the batch must land (8 bytes each, their own bytes, their
 * own place): closing settles the whole batch, and ssqd's DETACH (which
 * takes a POSTED batch back, never to be posted) finds nothing left.
 */
#define _GNU_SOURCE
#include <ssq/combine.h>
#include "ctrl_flow.h"

#define K SSQ_HAND_REQS

/* Up to 5 s for each of the K words of @dst to read its value: how many did. */
static unsigned landed(const struct ssq_buf *dst)
{
	double t0 = now_s();
	unsigned k, n = 0;

	while (now_s() - t0 < 5) {
		const volatile uint64_t *d = dst->addr;

		for (k = 0, n = 0; k < K; k++)
			n += d[k] == 0x0101010101010101ull * (k + 1);
		if (n == K)
			break;
		usleep(1000);
	}
	return n;
}

int main(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL, *qp = NULL, *qq = NULL;
	struct ssq_buf src, dst;
	struct ssq_producer *p, *holder;
	struct ssq_ctl *ctl;
	uint64_t w;
	unsigned k, n;
	pid_t d;
	int rc;

	t_need_ssqd();
	d = flow_start_q0("a8c", &c, &q, &src, &dst);
	if (d < 0 || test_failures)
		goto out;
	CHECK(ssq_queue_open(c, "q0", &qp) == 0 && ssq_queue_open(c, "q0", &qq) == 0,
	      "q0 opened twice more: %s", ssq_client_error(c));
	if (!qp || !qq)
		goto out;
	p = ssq_queue_producer(qp);
	holder = ssq_queue_producer(qq);
	ctl = p->ctl;
	for (k = 0; k < K; k++)
		((uint64_t *)src.addr)[k] = 0x0101010101010101ull * (k + 1);
	memset(dst.addr, 0, 8 * K);
	__atomic_store_n(&ctl->comb_role, holder->id + 1, __ATOMIC_SEQ_CST);
	for (k = 0; k < K; k++) {
		rc = ssq_post_write_combined(p, src.iova + 8 * k, src.lkey, 8,
		                             dst.remote_addr + 8 * k, dst.rkey, k,
		                             k == K - 1 ? SSQ_WQE_SIGNALED : 0);
		CHECK(rc == 0, "combined WRITE %u: %d", k, rc);
	}
	w = __atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE);
	CHECK((w & 3) == SSQ_HAND_POSTED && ssq__hand_n(w) == K,
	      "P's WRITEs not one batch of %u: word %llx", K, (unsigned long long)w);
	CHECK(ssq_queue_close(qp) == 0, "close after the batch");
	qp = NULL;
	/* Q's pass, then C11, C12: what a combiner holding the role does next. */
	rc = ssq__combine(holder);
	CHECK(rc == 0, "Q's combine: %d", rc);
	(void)ssq_combine_flush(holder);
	n = landed(&dst);
	CHECK(n == K,
	      "a batch of %u combined WRITEs accepted, then ssq_queue_close: %u landed",
	      K, n);
	printf("a batch of %u combined WRITEs, then ssq_queue_close: %u landed\n", K, n);
out:
	if (qq)
		ssq_queue_close(qq);
	if (q)
		ssq_queue_close(q);
	if (c)
		ssq_client_close(c);
	if (d > 0)
		t_ssqd_kill(d, sock_path);
	return test_exit("adv8b_close_batch");
}
