/* SPDX-License-Identifier: MIT */
/*
 * ssq_post_wr posts verbs work-request lists (struct ibv_send_wr) on a
 * shared queue as ibv_post_send would, on the emulated device:
 *  1. a mixed list - a 2-SGE WRITE, an inline WRITE, FETCH_ADD, CMP_SWAP
 *     and a READ - lands its data, fetches the atomics' old values, and
 *     gives the signaled WRs' completions in list order with their wr_ids;
 *  2. a bad WR in the middle (too many SGEs), an opcode ssq does not build
 *     (LOCAL_INV), a send flag it does not (IP_CSUM), a negative num_sge and
 *     an inline WR with more SGEs than max_sge (it read past sg_list): the
 *     error, *bad at that WR, the WRs before it posted and none of it or
 *     after;
 *  3. a list longer than half the ring (100 WRITEs on 64 WQEBBs) goes out
 *     in several reservations, reposted from *bad on -EAGAIN, all of it in
 *     order.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u
#define LONG  100u

static struct emu_tb tb;
static struct ssq_producer prod;

static void mixed_list(void)
{
	const struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	uint64_t v0 = 0x0102030405060708ull, got;
	struct ibv_sge sa[2] = { { a->iova + 0, 8, a->key },
		                 { a->iova + 64, 8, a->key } };
	struct ibv_sge inl = { (uint64_t)(uintptr_t) "inline--16bytes", 16, 0 };
	struct ibv_sge fa = { a->iova + 1024, 8, a->key },
	               cs = { a->iova + 1032, 8, a->key };
	struct ibv_sge rd = { a->iova + 2048, 16, a->key };
	struct ibv_send_wr w[5], *bad = NULL;
	struct ssq_completion c[8];
	int i, n;

	memset(w, 0, sizeof(w));
	memcpy(a->mem + 0, "AAAAAAAA", 8);
	memcpy(a->mem + 64, "BBBBBBBB", 8);
	memcpy(b->mem + 512, &v0, 8);
	w[0] = (struct ibv_send_wr){ .wr_id = 1,
		                     .sg_list = sa,
		                     .num_sge = 2,
		                     .opcode = IBV_WR_RDMA_WRITE,
		                     .send_flags = IBV_SEND_SIGNALED };
	w[0].wr.rdma.remote_addr = b->iova;
	w[0].wr.rdma.rkey = b->key;
	w[1] = (struct ibv_send_wr){ .wr_id = 2,
		                     .sg_list = &inl,
		                     .num_sge = 1,
		                     .opcode = IBV_WR_RDMA_WRITE,
		                     .send_flags = IBV_SEND_INLINE };
	w[1].wr.rdma.remote_addr = b->iova + 100;
	w[1].wr.rdma.rkey = b->key;
	w[2] = (struct ibv_send_wr){ .wr_id = 3,
		                     .sg_list = &fa,
		                     .num_sge = 1,
		                     .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		                     .send_flags = IBV_SEND_SIGNALED };
	w[2].wr.atomic.remote_addr = b->iova + 512;
	w[2].wr.atomic.compare_add = 5;
	w[2].wr.atomic.rkey = b->key;
	w[3] = (struct ibv_send_wr){ .wr_id = 4,
		                     .sg_list = &cs,
		                     .num_sge = 1,
		                     .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
		                     .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE };
	w[3].wr.atomic.remote_addr = b->iova + 512;
	w[3].wr.atomic.compare_add = v0 + 5;
	w[3].wr.atomic.swap = 42;
	w[3].wr.atomic.rkey = b->key;
	w[4] = (struct ibv_send_wr){ .wr_id = 5,
		                     .sg_list = &rd,
		                     .num_sge = 1,
		                     .opcode = IBV_WR_RDMA_READ,
		                     .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE };
	w[4].wr.rdma.remote_addr = b->iova;
	w[4].wr.rdma.rkey = b->key;
	for (i = 0; i < 4; i++)
		w[i].next = &w[i + 1];

	CHECK(ssq_post_wr(&prod, w, &bad) == 0 && bad == NULL, "mixed list posted");
	n = tb_wait_comps(&prod, c, 4, 1.0);
	CHECK(n == 4, "mixed list: %d of 4 completions", n);
	for (i = 0; i < n; i++)
		CHECK(c[i].status == IBV_WC_SUCCESS &&
		          c[i].wr_id == (uint64_t)(i ? i + 2 : 1),
		      "mixed list completion %d: wr_id %llu status %d", i,
		      (unsigned long long)c[i].wr_id, c[i].status);
	CHECK(!memcmp(b->mem, "AAAAAAAABBBBBBBB", 16), "2-SGE WRITE: '%.16s'", b->mem);
	CHECK(!memcmp(b->mem + 100, "inline--16bytes", 16), "inline WRITE: '%.16s'",
	      b->mem + 100);
	memcpy(&got, a->mem + 1024, 8);
	CHECK(got == v0, "FETCH_ADD fetched 0x%llx", (unsigned long long)got);
	memcpy(&got, a->mem + 1032, 8);
	CHECK(got == v0 + 5, "CMP_SWAP fetched 0x%llx", (unsigned long long)got);
	memcpy(&got, b->mem + 512, 8);
	CHECK(got == 42, "CMP_SWAP left 0x%llx", (unsigned long long)got);
	CHECK(!memcmp(a->mem + 2048, "AAAAAAAABBBBBBBB", 16), "READ back: '%.16s'",
	      a->mem + 2048);
}

/* One signaled 8-byte WRITE of @val to b + @off, as a list of one; 0 or -1. */
static int marker(uint64_t off, uint64_t wr_id)
{
	const struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	struct ibv_sge s = { a->iova + 3500, 8, a->key };
	struct ibv_send_wr w = { .wr_id = wr_id,
		                 .sg_list = &s,
		                 .num_sge = 1,
		                 .opcode = IBV_WR_RDMA_WRITE,
		                 .send_flags = IBV_SEND_SIGNALED };
	struct ssq_completion c;

	w.wr.rdma.remote_addr = b->iova + off;
	w.wr.rdma.rkey = b->key;
	return ssq_post_wr(&prod, &w, NULL) == 0 &&
	               tb_wait_comps(&prod, &c, 1, 1.0) == 1 && c.wr_id == wr_id &&
	               c.status == IBV_WC_SUCCESS
	           ? 0
	           : -1;
}

static void refused(void)
{
	const struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	struct ibv_sge s = { a->iova + 3500, 8, a->key };
	struct ibv_send_wr w[3], *bad = NULL;
	struct ssq_completion c[4];
	uint64_t reserved;
	int i, rc, n;

	memcpy(a->mem + 3500, "MMMMMMMM", 8);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w[i].wr_id = 10 + (uint64_t)i;
		w[i].sg_list = &s;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].wr.rdma.remote_addr = b->iova + 3000 + 100 * (uint64_t)i;
		w[i].wr.rdma.rkey = b->key;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].num_sge = 100; /* more than the QP's max_send_sge */
	rc = ssq_post_wr(&prod, w, &bad);
	CHECK(rc == -E2BIG && bad == &w[1], "too many SGEs in the middle: %d, bad %s", rc,
	      bad == &w[1] ? "at it" : "elsewhere");
	n = tb_wait_comps(&prod, c, 2, 1.0);
	CHECK(n == 1 && c[0].wr_id == 10 && c[0].status == IBV_WC_SUCCESS,
	      "the WR before the bad one: %d completions, first wr_id %llu", n,
	      (unsigned long long)c[0].wr_id);
	CHECK(marker(3500, 99) == 0, "a marker WRITE after the refused list");
	CHECK(!memcmp(b->mem + 3000, "MMMMMMMM", 8), "the WR before the bad one landed");
	CHECK(b->mem[3100] == 0 && b->mem[3200] == 0,
	      "the bad WR or the one after it was posted");

	reserved = ssq_ctl_reserved(prod.ctl);
	w[0].opcode = IBV_WR_LOCAL_INV;
	bad = NULL;
	rc = ssq_post_wr(&prod, w, &bad);
	CHECK(rc == -EOPNOTSUPP && bad == &w[0], "LOCAL_INV first: %d", rc);
	w[0].opcode = IBV_WR_RDMA_WRITE;
	w[0].send_flags |= IBV_SEND_IP_CSUM;
	rc = ssq_post_wr(&prod, w, &bad);
	CHECK(rc == -EOPNOTSUPP && bad == &w[0], "IP_CSUM first: %d", rc);
	/* Counts verbs would not take: negative, or over max_sge while inline. */
	w[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w[0].num_sge = -1;
	rc = ssq_post_wr(&prod, w, &bad);
	CHECK(rc == -EINVAL && bad == &w[0], "num_sge -1, inline: %d", rc);
	w[0].num_sge = 100;
	rc = ssq_post_wr(&prod, w, &bad);
	CHECK(rc == -E2BIG && bad == &w[0], "num_sge 100 > max_sge, inline: %d", rc);
	CHECK(ssq_ctl_reserved(prod.ctl) == reserved,
	      "a list refused at its first WR reserved %llu WQEBBs",
	      (unsigned long long)(ssq_ctl_reserved(prod.ctl) - reserved));
}

static void long_list(void)
{
	const struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	static struct ibv_send_wr w[LONG];
	static struct ibv_sge s[LONG];
	struct ibv_send_wr *head = w, *bad;
	struct ssq_completion c[LONG];
	unsigned i, got = 0, again = 0;
	double t0 = now_s();
	int rc, n;

	memset(w, 0, sizeof(w));
	for (i = 0; i < LONG; i++) {
		uint64_t v = 0x5500000000000000ull | i;

		memcpy(a->mem + 8192 + 8 * i, &v, 8);
		s[i] = (struct ibv_sge){ a->iova + 8192 + 8 * i, 8, a->key };
		w[i].wr_id = 1000 + i;
		w[i].sg_list = &s[i];
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].send_flags = i % 10 == 9 ? IBV_SEND_SIGNALED : 0;
		w[i].wr.rdma.remote_addr = b->iova + 8192 + 8 * i;
		w[i].wr.rdma.rkey = b->key;
		w[i].next = i + 1 < LONG ? &w[i + 1] : NULL;
	}
	while ((rc = ssq_post_wr(&prod, head, &bad)) == -EAGAIN && now_s() - t0 < 2.0) {
		again++;
		head = bad;
		n = ssq_poll(&prod, c + got, (int)(LONG - got));
		got += n > 0 ? (unsigned)n : 0;
	}
	CHECK(rc == 0, "the long list: %d after %u retries", rc, again);
	got += (unsigned)tb_wait_comps(&prod, c + got, (int)(LONG / 10 - got), 1.0);
	CHECK(got == LONG / 10, "the long list: %u of %u completions", got, LONG / 10);
	for (i = 0; i < got; i++)
		CHECK(c[i].wr_id == 1000 + 10 * i + 9 && c[i].status == IBV_WC_SUCCESS,
		      "long list completion %u: wr_id %llu status %d", i,
		      (unsigned long long)c[i].wr_id, c[i].status);
	for (i = 0; i < LONG; i++)
		if (memcmp(b->mem + 8192 + 8 * i, a->mem + 8192 + 8 * i, 8)) {
			CHECK(0, "long list WRITE %u did not land", i);
			break;
		}
	printf("a list of %u WRITEs on a %u-WQEBB ring: %u -EAGAIN retries\n", LONG, RING,
	       again);
}

int main(void)
{
	struct ssq_ctl *ctl = tb_one_up(&tb, &prod, RING, EVERY);

	mixed_list();
	refused();
	long_list();
	tb_one_down(&tb, ctl);
	return test_exit("ssq_post_wr");
}
