/* SPDX-License-Identifier: MIT */
/*
 * Adversary, per-buffer keys across an ssqd restart: "a freed buffer's key
 * reaches nothing". A client of bob exposes a 4 KiB buffer to alice (its
 * remote descriptor). bob is killed and started again, alice links to it
 * again, and another client of bob takes a 4 KiB buffer. The arena is laid
 * out the same way at the same IOVAs, first fit gives the same offset, and
 * the emulated device started its MR slots and 8-bit key tags afresh, so
 * the new buffer had the old one's key: alice's stale descriptor WROTE
 * into the new client's memory. On a ConnectX the tag (mkey_7_0) comes
 * from a counter of the device that outlives any process (the kernel's
 * assign_mkey_variant, drivers/infiniband/hw/mlx5/mr.c: dev->mkey_var), and
 * firmware picks the index: a restarted ssqd does not hand out its last
 * run's keys.
 * Fails while a descriptor taken before bob restarted reaches a buffer of
 * bob's next run.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	struct t_pair pair;
	struct ssq_client *a = NULL, *b = NULL, *b2 = NULL;
	struct ssq_buf old, fresh, src;
	struct ssq_queue *q = NULL;
	int s = -1, i;

	t_need_ssqd();
	CHECK(t_pair_start(&pair, "ak2r", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	a = pair.c[0];
	b = pair.c[1];
	if (!a || !b || ssq_buf_alloc(b, 4096, &old) || ssq_buf_alloc(a, 4096, &src))
		goto out;
	/* bob's run ends; its clients' buffers with it. */
	b2 = t_pair_restart(&pair, 1) ? NULL : pair.c[1];
	CHECK(b2 && wait_q0_ready(b2, 1, 10) >= 0 && wait_q0_ready(a, 1, 10) >= 0,
	      "bob again, linked to alice");
	if (!b2 || ssq_buf_alloc(b2, 4096, &fresh))
		goto out;
	memset(fresh.addr, 0, 64);
	fprintf(stderr, "before the restart: 0x%llx key 0x%x; after: 0x%llx key 0x%x\n",
	        (unsigned long long)old.remote_addr, old.rkey,
	        (unsigned long long)fresh.remote_addr, fresh.rkey);
	memset(src.addr, 0x5a, 64);
	for (i = 0; i < 50 && s != IBV_WC_SUCCESS && s != IBV_WC_REM_ACCESS_ERR; i++) {
		if (!q && ssq_queue_open(a, "bob/q0", &q)) {
			usleep(100 * 1000);
			continue;
		}
		s = cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, &src, 0, 64, &old, 0,
		           1 + i, 5, 1);
		if (s != IBV_WC_SUCCESS && s != IBV_WC_REM_ACCESS_ERR) {
			ssq_queue_recover(q);
			usleep(100 * 1000);
		}
	}
	fprintf(stderr, "alice's WRITE at the old descriptor: status %d (%s)\n", s,
	        s >= 0 ? ibv_wc_status_str((enum ibv_wc_status)s) : "none");
	CHECK(((uint8_t *)fresh.addr)[0] != 0x5a,
	      "a descriptor of bob's last run wrote into a buffer of its next");
	CHECK(s == IBV_WC_REM_ACCESS_ERR,
	      "the old descriptor is refused with a remote access error: %d", s);
out:
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_keys_after_restart");
}
