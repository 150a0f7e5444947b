/* SPDX-License-Identifier: MIT */
/*
 * Remote access as a capability on the emulated device (issue 28 item 1):
 * an MR registered with MW_BIND and no remote access is reached by no
 * peer; a type-2 window bound to the responder's QP opens its range, with
 * its access, to requests arriving at that QP only, until invalidated or
 * freed; every refused request counts as a guess on the responder QP
 * (emu_qp_access_errors), fails the requester with REMOTE_ACCESS_ERR and
 * moves the responder to ERR, and the target bytes are neither read nor
 * changed. Keys carry a random 8-bit variant, not a count.
 * Before: emu_alloc_mw did not exist, and keys went slot+1, tag+1 (the
 * next MR's key was the previous one + 0x101).
 */
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define BIND_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
#define REMOTE_RW   (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int setup(struct emu_tb *tb)
{
	struct emu_tb_opts o = { 0 };
	int ret;

	o.access = BIND_ACCESS; /* both sides' data MRs: local only */
	ret = emu_tb_init(tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	memset(tb->s[0].mem, 0xaa, tb->o.mem_len);
	memset(tb->s[1].mem, 0x5b, tb->o.mem_len);
	return ret;
}

/*
 * One signaled WQE from side 0 (@op: WRITE, READ or FETCH_ADD of 8 bytes
 * at side 0's mem[0] to @raddr under @rkey); its syndrome, 0 for success,
 * -1 for no CQE.
 */
static int post(struct emu_tb *tb, uint8_t op, uint64_t raddr, uint32_t rkey,
                uint32_t len)
{
	struct emu_tb_side *a = &tb->s[0];
	uint32_t pi = a->sq.pi;
	struct ssq_cqe c;

	if (op == MLX5_OPCODE_RDMA_WRITE)
		a->sq.pi += ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, len, raddr,
		                                rkey, SSQ_WQE_SIGNALED);
	else if (op == MLX5_OPCODE_RDMA_READ)
		a->sq.pi += ssq_prep_rdma_read(&a->sq, pi, a->iova, a->key, len, raddr,
		                               rkey, SSQ_WQE_SIGNALED);
	else
		a->sq.pi += ssq_prep_atomic(&a->sq, pi, op, a->iova, a->key, raddr, rkey,
		                            1, 0, SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, pi);
	if (emu_tb_poll(tb, &a->scq_v, &c, 1) != 1)
		return -1;
	return c.opcode == MLX5_CQE_REQ ? 0 : c.syndrome;
}

static int untouched(const struct emu_tb *tb)
{
	size_t i;

	for (i = 0; i < tb->o.mem_len; i++)
		if (tb->s[1].mem[i] != 0x5b || tb->s[0].mem[i] != 0xaa)
			return 0;
	return 1;
}

/* A refused request at side 1: the error, one guess counted, ERR, no byte moved. */
static void expect_refused(struct emu_tb *tb, uint8_t op, uint64_t raddr, uint32_t rkey,
                           const char *what)
{
	uint64_t before = emu_qp_access_errors(tb->s[1].qp);
	int s = post(tb, op, raddr, rkey, 8);

	CHECK(s == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "%s: syndrome %d, want 0x13",
	      what, s);
	CHECK(emu_qp_access_errors(tb->s[1].qp) == before + 1,
	      "%s: %llu guesses counted, want %llu", what,
	      (unsigned long long)emu_qp_access_errors(tb->s[1].qp),
	      (unsigned long long)before + 1);
	CHECK(emu_qp_state(tb->s[1].qp) == IBV_QPS_ERR, "%s: responder state %d", what,
	      emu_qp_state(tb->s[1].qp));
	CHECK(untouched(tb), "%s: bytes moved", what);
}

/* A window of side 1's MR over [mem + 4096, +4096), bound to @qp. */
static uint32_t bind_one(struct emu_tb *tb, struct emu_qp *qp, struct emu_mr **mw,
                         int access)
{
	uint32_t rkey;
	int rc;

	rc = emu_alloc_mw(tb->pd, mw, &rkey);
	CHECK(rc == 0, "alloc_mw: %d", rc);
	rkey = (rkey & ~0xffu) | (uint8_t)(((rkey & 0xff) + 0x35) % 255 + 1);
	rc = emu_bind_mw(qp, *mw, tb->s[1].mr, tb->s[1].iova + 4096, 4096, access, rkey);
	CHECK(rc == 0, "bind_mw: %d", rc);
	return rkey;
}

/* The MR's own key, and guesses near it, reach nothing. */
static void test_mr_key_refused(void)
{
	static const uint32_t delta[] = { 0, 0x101, 0x100, 0x1, 0x201 };
	unsigned i;

	for (i = 0; i < sizeof(delta) / sizeof(delta[0]); i++) {
		struct emu_tb tb;
		char what[64];

		if (setup(&tb))
			return;
		snprintf(what, sizeof(what), "MR key + 0x%x", delta[i]);
		expect_refused(&tb, MLX5_OPCODE_RDMA_WRITE, tb.s[1].iova,
		               tb.s[1].key + delta[i], what);
		emu_tb_fini(&tb);
	}
}

/* A bound window works at its QP, for its range and access, and only there. */
static void test_window(void)
{
	struct emu_tb tb;
	struct emu_mr *mw;
	uint32_t rkey;
	uint64_t at;
	int s, which;

	if (setup(&tb))
		return;
	rkey = bind_one(&tb, tb.s[1].qp, &mw, REMOTE_RW);
	at = tb.s[1].iova + 4096;
	s = post(&tb, MLX5_OPCODE_RDMA_WRITE, at + 8, rkey, 8);
	CHECK(s == 0, "WRITE through the window: syndrome %d", s);
	CHECK(tb.s[1].mem[4096 + 8] == 0xaa && tb.s[1].mem[4096 + 16] == 0x5b,
	      "WRITE landed wrong");
	tb.s[1].mem[4096 + 100] = 0x77;
	s = post(&tb, MLX5_OPCODE_RDMA_READ, at + 100, rkey, 1);
	CHECK(s == 0 && tb.s[0].mem[0] == 0x77, "READ through the window: %d, 0x%x", s,
	      tb.s[0].mem[0]);
	CHECK(emu_qp_access_errors(tb.s[1].qp) == 0, "no guesses yet");
	emu_tb_fini(&tb);

	for (which = 0; which < 7; which++) {
		static const char *const names[] = {
			"below the window",    "past the window", "atomic without access",
			"wrong variant",       "invalidated",     "freed",
			"bound to another QP",
		};
		if (setup(&tb))
			return;
		rkey =
		    bind_one(&tb, which == 6 ? tb.s[0].qp : tb.s[1].qp, &mw, REMOTE_RW);
		at = tb.s[1].iova + 4096;
		switch (which) {
		case 0:
			expect_refused(&tb, MLX5_OPCODE_RDMA_WRITE, at - 8, rkey,
			               names[which]);
			break;
		case 1:
			expect_refused(&tb, MLX5_OPCODE_RDMA_READ, at + 4092, rkey,
			               names[which]);
			break;
		case 2:
			expect_refused(&tb, MLX5_OPCODE_ATOMIC_FA, at, rkey,
			               names[which]);
			break;
		case 3:
			expect_refused(&tb, MLX5_OPCODE_RDMA_WRITE, at,
			               (rkey & ~0xffu) | (uint8_t)(rkey + 1),
			               names[which]);
			break;
		case 4:
			CHECK(emu_invalidate_mw(mw) == 0, "invalidate");
			expect_refused(&tb, MLX5_OPCODE_RDMA_WRITE, at, rkey,
			               names[which]);
			break;
		case 5:
			CHECK(emu_dealloc_mw(mw) == 0, "dealloc");
			expect_refused(&tb, MLX5_OPCODE_RDMA_READ, at, rkey,
			               names[which]);
			break;
		case 6:
			expect_refused(&tb, MLX5_OPCODE_RDMA_WRITE, at, rkey,
			               names[which]);
			break;
		}
		emu_tb_fini(&tb);
	}
}

/* A window's key is no lkey. */
static void test_window_not_lkey(void)
{
	struct emu_tb tb;
	struct emu_mr *mw;
	struct ssq_cqe c;
	uint32_t rkey, pi;
	struct emu_tb_side *b;

	if (setup(&tb))
		return;
	b = &tb.s[1];
	rkey = bind_one(&tb, b->qp, &mw, REMOTE_RW);
	pi = b->sq.pi;
	b->sq.pi += ssq_prep_rdma_write(&b->sq, pi, b->iova + 4096, rkey, 8, tb.s[0].iova,
	                                tb.s[0].key, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 1, pi);
	CHECK(emu_tb_poll(&tb, &b->scq_v, &c, 1) == 1 &&
	          c.syndrome == MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
	      "window key as lkey: syndrome 0x%x", c.syndrome);
	emu_tb_fini(&tb);
}

/* What a bind refuses, as ConnectX and the IB spec do. */
static void test_bind_rules(void)
{
	struct emu_tb tb;
	struct emu_mr *mw, *plain, *ro;
	uint32_t rkey, k, pk, rk;
	int rc;

	if (setup(&tb))
		return;
	CHECK(emu_alloc_mw(tb.pd, &mw, &rkey) == 0, "alloc");
	k = (rkey & ~0xffu) | 0x42;
	CHECK(emu_reg_mr(tb.pd, tb.s[1].mem, 4096, 0x5000000, IBV_ACCESS_LOCAL_WRITE,
	                 &plain, &pk) == 0,
	      "plain MR");
	CHECK(emu_reg_mr(tb.pd, tb.s[1].mem, 4096, 0x6000000, IBV_ACCESS_MW_BIND, &ro,
	                 &rk) == 0,
	      "read-only MR");
	rc = emu_bind_mw(tb.s[1].qp, mw, plain, 0x5000000, 64, REMOTE_RW, k);
	CHECK(rc == -EACCES, "MR without MW_BIND: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, ro, 0x6000000, 64, IBV_ACCESS_REMOTE_WRITE, k);
	CHECK(rc == -EACCES, "remote write over an MR without local write: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, ro, 0x6000000, 64, IBV_ACCESS_REMOTE_READ, k);
	CHECK(rc == 0, "remote read over a read-only MR: %d", rc);
	CHECK(emu_invalidate_mw(mw) == 0, "invalidate");
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW,
	                 k & ~0xffu);
	CHECK(rc == -EINVAL, "variant 0: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW,
	                 k + 0x100);
	CHECK(rc == -EINVAL, "another index: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova + tb.o.mem_len - 8, 64,
	                 REMOTE_RW, k);
	CHECK(rc == -ERANGE, "past the MR: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova, 0, REMOTE_RW, k);
	CHECK(rc == -EINVAL, "empty range: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW, k);
	CHECK(rc == 0, "bind: %d", rc);
	rc = emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW, k ^ 1);
	CHECK(rc == -EBUSY, "bound twice: %d", rc);
	CHECK(emu_dereg_mr(tb.s[1].mr) == -EBUSY, "dereg of an MR with a window bound");
	CHECK(emu_dealloc_mw(mw) == 0, "dealloc");
	CHECK(emu_dereg_mr(tb.s[1].mr) == 0, "dereg once the window is gone");
	tb.s[1].mr = NULL;
	emu_tb_fini(&tb);
}

/* Keys in turn carry random variants: no +0x101 walk from one to the next. */
static void test_random_variants(void)
{
	struct emu_tb tb;
	uint32_t key[64];
	unsigned i, walk = 0, seen[256] = { 0 }, distinct = 0;

	if (setup(&tb))
		return;
	for (i = 0; i < 64; i++) {
		struct emu_mr *mr;

		CHECK(emu_reg_mr(tb.pd, tb.s[1].mem, 64, 0x20000000 + i * 64ull,
		                 IBV_ACCESS_LOCAL_WRITE, &mr, &key[i]) == 0,
		      "reg %u", i);
		CHECK((key[i] & 0xff) != 0, "variant 0");
		if (!seen[key[i] & 0xff]++)
			distinct++;
		if (i && key[i] - key[i - 1] == 0x101)
			walk++;
	}
	/* A count gives 63 steps of 0x101; chance gives each 1/255. */
	CHECK(walk < 8, "%u of 63 keys were the previous + 0x101", walk);
	CHECK(distinct > 32, "only %u distinct variants in 64 keys", distinct);
	emu_tb_fini(&tb);
}

int main(void)
{
	test_mr_key_refused();
	test_window();
	test_window_not_lkey();
	test_bind_rules();
	test_random_variants();
	return test_exit("emu_mw");
}
