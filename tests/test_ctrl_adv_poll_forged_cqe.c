/* SPDX-License-Identifier: MIT */
/*
 * Adversary, receive poller with the device's events off (a ConnectX):
 * the receive CQ is in the arena every client maps read-write, so a
 * client can write a CQE the device never wrote. The poller logs it and
 * its consumer index passes the device's producer; from then on every arm
 * at that index (rx_arm) finds "a CQE past the index" and raises its
 * event at once, the poll finds nothing, and the next nap arms again: one
 * forged CQE had ssqd's poller spin on a core for as long as it ran, with
 * nobody sending or waiting. An event that brings nothing must cost a nap,
 * not end it.
 *
 * ssqd runs in this process: its poller idles (a small share of a core),
 * then one CQE is forged after the one the device writes next, a SEND
 * through q0 makes the device write that one, and the poller's share of a
 * core is measured again once it has logged both.
 */
#define _GNU_SOURCE
#include "poll_flow.h"

#define MAX_SHARE 0.2 /* an idle poller naps: a few percent */

int main(void)
{
	struct ssqd *d = poll_ssqd_up("forged");
	struct ssqd_recv_pool *p;
	struct mlx5_cqe64 *c;
	double share, deadline;
	uint64_t a0;
	uint32_t idx;
	int rc;

	if (!d)
		return test_exit("ctrl_adv_poll_forged_cqe");
	p = &d->queues[0].rx;
	usleep(300 * 1000); /* past its first naps */
	share = poll_cpu_share(d, 0.5);
	printf("idle poller: %.1f%% of a core\n", share * 100);
	CHECK(share < MAX_SHARE, "the idle poller used %.0f%% of a core", share * 100);

	/*
	 * A receive CQE right after the slot the device writes next, then a
	 * SEND through q0: the device's CQE raises the armed event, and the
	 * poller, woken, logs both; its consumer index is then one past the
	 * device's producer.
	 */
	a0 = pool_arrived(p);
	pthread_mutex_lock(&p->lock);
	idx = p->cq.ci + 1;
	c = (struct mlx5_cqe64 *)(p->cq.buf + ((size_t)(idx & (p->cq.cqe_cnt - 1)) << 6));
	memset(c, 0, sizeof(*c));
	c->byte_cnt = htobe32(1);
	c->wqe_counter = htobe16((uint16_t)idx);
	__atomic_store_n(&c->op_own,
	                 (uint8_t)(MLX5_CQE_RESP_SEND << 4 | !!(idx & p->cq.cqe_cnt)),
	                 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
	rc = ssq_post_send(&d->queues[0].prod, MLX5_OPCODE_SEND, d->own.data_iova,
	                   d->own.data_key, 64, 0, 1, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "a SEND through q0: %d", rc);
	deadline = poll_now() + 5;
	while (pool_arrived(p) < a0 + 2 && poll_now() < deadline)
		usleep(1000);
	CHECK(pool_arrived(p) == a0 + 2,
	      "the poller logged the SEND and the forged CQE (%llu)",
	      (unsigned long long)(pool_arrived(p) - a0));

	usleep(200 * 1000);
	share = poll_cpu_share(d, 1.0);
	printf("after one forged receive CQE: %.1f%% of a core\n", share * 100);
	CHECK(share < MAX_SHARE,
	      "one forged receive CQE had the poller use %.0f%% of a core, nobody "
	      "sending or waiting (an armed CQ behind its consumer index raises its "
	      "event at once, every nap)",
	      share * 100);
	poll_ssqd_down(d);
	return test_exit("ctrl_adv_poll_forged_cqe");
}
