/* SPDX-License-Identifier: MIT */
/*
 * From ssq_post_wr's error path, one documented call gives the sentence
 * (issue 30, newcomer review F6: -EINVAL came with ssq_client_error() ""
 * and the sentence only through the undocumented ssq_wr_from_verbs +
 * ssq_wr_strerror pair). For each refused WR - a 4-byte FETCH_ADD, a
 * LOCAL_INV, an IP_CSUM send flag, a negative num_sge, more SGEs than the
 * QP takes - and for -EAGAIN, -EIO, -ENOTCONN and 0,
 * ssq_post_wr_strerror(p, bad, rc, ...) must name the WR by wr_id and the
 * field at fault; a 4-byte buffer gets a NUL-terminated prefix.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "emu/testbed_pvt.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_producer prod;

/* Post @w alone; want @want_rc and a sentence holding @a and @b. */
static void refused(struct ibv_send_wr *w, int want_rc, const char *a, const char *b)
{
	struct ibv_send_wr *bad = NULL;
	char why[256];
	int rc = ssq_post_wr(&prod, w, &bad);

	CHECK(rc == want_rc && bad == w, "wr_id %llu: rc %d, want %d; bad %s",
	      (unsigned long long)w->wr_id, rc, want_rc, bad == w ? "right" : "wrong");
	ssq_post_wr_strerror(&prod, bad ? bad : w, rc, why, sizeof(why));
	CHECK(strstr(why, a) && strstr(why, b), "wr_id %llu: '%s' lacks '%s' or '%s'",
	      (unsigned long long)w->wr_id, why, a, b);
	printf("rc %d: %s\n", rc, why);
}

int main(void)
{
	struct emu_tb_opts o = { 0 };
	struct emu_tb_side *a, *b;
	struct ssq_ctl *ctl;
	struct ibv_sge s4, s8[32];
	struct ibv_send_wr w;
	char why[256], tiny[4];
	int rc, i;

	o.sq_cnt = RING;
	o.mem_len = 64 * 1024;
	rc = emu_tb_init(&tb, &o);
	if (rc)
		SKIP("emulated device testbed: %d", rc);
	a = &tb.s[0];
	b = &tb.s[1];
	ctl = aligned_alloc(64, (ssq_ctl_size(RING) + 63) & ~(size_t)63);
	CHECK(ctl && ssq_ctl_init(ctl, RING, EVERY) == 0, "ssq_ctl_init");
	CHECK(ssq_producer_init(&prod, ctl, 0, &a->sq, &a->scq_v, (uint32_t)getpid()) ==
	          0,
	      "producer");

	s4 = (struct ibv_sge){ a->iova, 4, a->key };
	memset(&w, 0, sizeof(w));
	w.wr_id = 21;
	w.sg_list = &s4;
	w.num_sge = 1;
	w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	w.wr.atomic.remote_addr = b->iova;
	w.wr.atomic.rkey = b->key;
	refused(&w, -EINVAL, "wr_id 21:", "atomics are 8 bytes");

	w.wr_id = 22;
	w.opcode = IBV_WR_LOCAL_INV;
	refused(&w, -EOPNOTSUPP, "wr_id 22:", "IBV_WR_LOCAL_INV");

	w.wr_id = 23;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_IP_CSUM;
	refused(&w, -EOPNOTSUPP, "wr_id 23:", "send_flags 0x");

	w.wr_id = 24;
	w.send_flags = 0;
	w.num_sge = -1;
	refused(&w, -EINVAL, "wr_id 24:", "num_sge -1 is negative");

	for (i = 0; i < 32; i++)
		s8[i] = (struct ibv_sge){ a->iova + (uint64_t)i * 8, 8, a->key };
	w.wr_id = 25;
	w.sg_list = s8;
	w.num_sge = 32;
	CHECK((int)a->sq.max_sge < 32, "the testbed's max_sge %u is under 32",
	      a->sq.max_sge);
	refused(&w, -E2BIG, "wr_id 25:", "max_send_sge");

	CHECK(!strcmp(ssq_post_wr_strerror(&prod, NULL, 0, why, sizeof(why)), "ok"),
	      "0: '%s'", why);
	CHECK(strstr(ssq_post_wr_strerror(&prod, &w, -EAGAIN, why, sizeof(why)),
	             "ssq_poll"),
	      "-EAGAIN: '%s'", why);
	CHECK(strstr(ssq_post_wr_strerror(&prod, &w, -EIO, why, sizeof(why)),
	             "ssq_queue_recover"),
	      "-EIO: '%s'", why);
	CHECK(
	    strstr(ssq_post_wr_strerror(&prod, &w, -ENOTCONN, why, sizeof(why)), "ssqd"),
	    "-ENOTCONN: '%s'", why);
	memset(tiny, 'x', sizeof(tiny));
	ssq_post_wr_strerror(&prod, &w, -E2BIG, tiny, sizeof(tiny));
	CHECK(tiny[3] == '\0' && !strncmp(tiny, "wr_", 3), "4-byte buffer: '%.4s'", tiny);
	CHECK(!strcmp(ssq_post_wr_strerror(&prod, &w, -EIO, NULL, 0), ""), "NULL buffer");

	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_post_wr_strerror");
}
