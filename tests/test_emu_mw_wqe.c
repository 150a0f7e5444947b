/* SPDX-License-Identifier: MIT */
/*
 * A type-2 window bound and invalidated by WQEs on the responder's own send
 * queue (<ssq/wqe_mw.h>, libmlx5's IBV_WR_BIND_MW / IBV_WR_LOCAL_INV
 * bytes), as a ConnectX runs them: the bind's CQE (opcode UMR, its WQE
 * index), the window then open to the peer under the new key, closed again
 * by LOCAL_INV, bound again with the next key byte. And one test per
 * refusal: the bind's MLX5_CQE_SYNDROME_MW_BIND_ERR (a window bound to
 * another QP, not free, another PD, an MR without MW_BIND, remote write
 * over an MR without local write, outside the MR, over 2 GiB, a context
 * and KLM that disagree, key byte 0, a stale window key), the invalidate's
 * LOCAL_QP_OP_ERR (stale key, free window, another QP's window), a
 * malformed UMR's LOCAL_QP_OP_ERR; each leaves the QP in ERR and the
 * window as it was. A WQE after a UMR without the small fence is counted.
 * Before: the device knew no MLX5_OPCODE_UMR and completed every such WQE
 * with LOCAL_QP_OP_ERR.
 */
#include "helpers.h"
#include <unistd.h>
#include "emu/testbed_pvt.h"
#include "tb_flow.h"

#define BIND_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
#define REMOTE_RW   (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define WIN_OFF     4096u
#define WIN_LEN     4096u

static int setup(struct emu_tb *tb)
{
	struct emu_tb_opts o = { 0 };
	int ret;

	o.access = BIND_ACCESS;
	ret = emu_tb_init(tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (!ret) {
		memset(tb->s[0].mem, 0xaa, tb->o.mem_len);
		memset(tb->s[1].mem, 0x5b, tb->o.mem_len);
	}
	return ret;
}

/*
 * Who posts: @b binds (the responder, whose window it is), @a is its peer;
 * @devs are run while waiting (one device, or the two of a wire pair).
 */
struct rig {
	struct emu_dev *devs[2];
	int ndev;
	struct emu_tb_side *a, *b;
};

static struct rig local_rig(struct emu_tb *tb)
{
	struct rig r = { { tb->dev, NULL }, 1, &tb->s[0], &tb->s[1] };

	return r;
}

/* The next CQE of @cq: its syndrome (0: success), -1 for none. */
static int cqe_of(struct rig *r, struct ssq_cq *cq, struct ssq_cqe *c)
{
	int tries, i;

	for (tries = 0; tries < 4000; tries++) {
		if (ssq_cq_poll(cq, c, 1) == 1)
			return c->opcode == MLX5_CQE_REQ ? 0 : c->syndrome;
		for (i = 0; i < r->ndev; i++)
			emu_process(r->devs[i], 1024);
		if (tries > 100)
			usleep(100);
	}
	return -1;
}

/*
 * Post the @n WQEBBs of the UMR WQE (@what) at @pi on @r->b's SQ and wait
 * for its CQE. Returns the syndrome (0 for success, -1 for no CQE),
 * checking the CQE names the WQE and, on error, its opcode is UMR.
 */
static int ring_umr(struct rig *r, uint32_t pi, uint32_t n, const char *what)
{
	struct emu_tb_side *b = r->b;
	struct ssq_cqe c;
	int s;

	b->sq.pi += n;
	ssq_sq_ring_db(&b->sq, b->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&b->sq, pi));
	s = cqe_of(r, &b->scq_v, &c);
	if (s >= 0)
		CHECK(c.wqe_counter == (uint16_t)pi &&
		          (s == 0 || c.s_wqe_opcode == MLX5_OPCODE_UMR),
		      "%s CQE: wqe_counter %u want %u, opcode 0x%x", what, c.wqe_counter,
		      (uint16_t)pi, c.s_wqe_opcode);
	return s;
}

/*
 * A bind WQE on @r->b's SQ over [@addr, +@len) of @lkey, built by
 * ssq_prep_bind_mw; @patch may change its bytes before the doorbell.
 * Returns ring_umr's syndrome.
 */
static int wqe_bind(struct rig *r, uint32_t mw_key, uint32_t new_key, uint32_t lkey,
                    uint64_t addr, uint64_t len, unsigned access,
                    void (*patch)(struct rig *, uint32_t pi))
{
	struct emu_tb_side *b = r->b;
	uint32_t pi = b->sq.pi;
	int n;

	n = ssq_prep_bind_mw(&b->sq, pi, mw_key, new_key, lkey, addr, len, access,
	                     SSQ_WQE_SIGNALED);
	CHECK(n == SSQ_WQE_BIND_MW_WQEBBS, "prep_bind_mw: %d", n);
	if (n < 0)
		return -1;
	if (patch)
		patch(r, pi);
	return ring_umr(r, pi, (uint32_t)n, "bind");
}

/* A LOCAL_INV WQE of @rkey on @r->b's SQ: ring_umr's syndrome. */
static int wqe_inv(struct rig *r, uint32_t rkey)
{
	struct emu_tb_side *b = r->b;
	uint32_t pi = b->sq.pi;
	int n;

	n = ssq_prep_local_inv(&b->sq, pi, rkey, SSQ_WQE_SIGNALED);
	CHECK(n == SSQ_WQE_LOCAL_INV_WQEBBS, "prep_local_inv: %d", n);
	if (n < 0)
		return -1;
	return ring_umr(r, pi, (uint32_t)n, "LOCAL_INV");
}

/* An 8-byte WRITE from @r->a to @raddr under @rkey: its syndrome. */
static int peer_write(struct rig *r, uint64_t raddr, uint32_t rkey)
{
	struct emu_tb_side *a = r->a;
	uint32_t pi = a->sq.pi;
	struct ssq_cqe c;

	a->sq.pi += ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 8, raddr, rkey,
	                                SSQ_WQE_SIGNALED);
	ssq_sq_ring_db(&a->sq, a->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a->sq, pi));
	return cqe_of(r, &a->scq_v, &c);
}

/* The next key byte, never 0 (emu_bind_mw's rule). */
static uint32_t next_key(uint32_t k)
{
	return (k & ~0xffu) | ((k & 0xff) % 255 + 1);
}

/* Bind, use, invalidate, refused, bind again: the window's whole life by WQEs. */
static void test_life(void)
{
	struct emu_tb tb;
	struct rig r;
	struct emu_mr *mw;
	uint32_t key, k1, k2;
	uint64_t at;
	int s;

	if (setup(&tb))
		return;
	r = local_rig(&tb);
	CHECK(emu_alloc_mw(tb.pd, &mw, &key) == 0, "alloc_mw");
	at = tb.s[1].iova + WIN_OFF;
	k1 = next_key(key);
	s = wqe_bind(&r, key, k1, tb.s[1].key, at, WIN_LEN, REMOTE_RW, NULL);
	CHECK(s == 0, "bind WQE: syndrome 0x%x", s);
	s = peer_write(&r, at + 16, k1);
	CHECK(s == 0, "WRITE through the bound window: 0x%x", s);
	CHECK(tb.s[1].mem[WIN_OFF + 16] == 0xaa && tb.s[1].mem[WIN_OFF + 24] == 0x5b,
	      "the WRITE landed wrong");
	s = wqe_inv(&r, k1);
	CHECK(s == 0, "LOCAL_INV WQE: syndrome 0x%x", s);
	/* The window free again: a bind through the API on the peer's QP takes it. */
	CHECK(emu_bind_mw(tb.s[0].qp, mw, tb.s[1].mr, at, 64, REMOTE_RW, k1) == 0,
	      "the window was not free after LOCAL_INV");
	CHECK(emu_invalidate_mw(mw) == 0, "invalidate");
	/* The next bind names the key the window has (libmlx5's mw->rkey). */
	k2 = next_key(k1);
	s = wqe_bind(&r, k1, k2, tb.s[1].key, at, WIN_LEN, IBV_ACCESS_REMOTE_READ, NULL);
	CHECK(s == 0, "second bind WQE: syndrome 0x%x", s);
	s = peer_write(&r, at, k2);
	CHECK(s == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
	      "WRITE through a read window: 0x%x", s);
	emu_tb_fini(&tb);
}

/* ---- refusals: one testbed each ---- */

enum refusal {
	R_OTHER_QPN,
	R_NOT_FREE,
	R_OTHER_PD,
	R_NO_MW_BIND,
	R_WRITE_NO_LOCAL_WRITE,
	R_OUTSIDE_MR,
	R_OVER_2G,
	R_CTX_KLM_DIFFER,
	R_KEY_BYTE_0,
	R_STALE_MW_KEY,
	R_BAD_UMR_FLAGS,
	R_COUNT
};

static const char *const refusal_names[R_COUNT] = {
	"context names another QP",
	"window not free",
	"MR of another PD",
	"MR without MW_BIND",
	"write, MR read-only",
	"outside the MR",
	"over 2 GiB",
	"context and KLM differ",
	"key byte 0",
	"stale window key",
	"unknown UMR flags",
};

static void patch_qpn(struct rig *r, uint32_t pi)
{
	struct mlx5_wqe_mkey_context_seg *m =
	    (struct mlx5_wqe_mkey_context_seg *)ssq_sq_wqebb(&r->b->sq, pi + 1);

	m->qpn_mkey = htobe32(r->a->qpn << 8 | (be32toh(m->qpn_mkey) & 0xff));
}

static void patch_over_2g(struct rig *r, uint32_t pi)
{
	struct mlx5_wqe_mkey_context_seg *m =
	    (struct mlx5_wqe_mkey_context_seg *)ssq_sq_wqebb(&r->b->sq, pi + 1);
	struct mlx5_wqe_umr_klm_seg *k =
	    (struct mlx5_wqe_umr_klm_seg *)ssq_sq_wqebb(&r->b->sq, pi + 2);

	m->len = htobe64((1ull << 31) + 8);
	k->byte_count = htobe32((1u << 31) + 8);
}

static void patch_klm_len(struct rig *r, uint32_t pi)
{
	struct mlx5_wqe_umr_klm_seg *k =
	    (struct mlx5_wqe_umr_klm_seg *)ssq_sq_wqebb(&r->b->sq, pi + 2);

	k->byte_count = htobe32(be32toh(k->byte_count) - 8);
}

static void patch_flags(struct rig *r, uint32_t pi)
{
	struct mlx5_wqe_umr_ctrl_seg *u =
	    (struct mlx5_wqe_umr_ctrl_seg *)((struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(
	                                         &r->b->sq, pi) +
	                                     1);

	u->flags &= (uint8_t)~MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
}

static void test_bind_refusal(enum refusal r)
{
	const char *what = refusal_names[r];
	struct emu_tb tb;
	struct rig rig;
	struct emu_pd *pd2 = NULL;
	struct emu_mr *mw, *mr2 = NULL;
	uint32_t key, k1, lkey, mw_key;
	uint64_t at, len = WIN_LEN;
	void (*patch)(struct rig *, uint32_t) = NULL;
	unsigned access = REMOTE_RW;
	int s, want = MLX5_CQE_SYNDROME_MW_BIND_ERR, free_after = 1, rc;

	if (setup(&tb))
		return;
	rig = local_rig(&tb);
	CHECK(emu_alloc_mw(tb.pd, &mw, &key) == 0, "%s: alloc_mw", what);
	at = tb.s[1].iova + WIN_OFF;
	lkey = tb.s[1].key;
	k1 = next_key(key);
	mw_key = key;
	switch (r) {
	case R_OTHER_QPN:
		patch = patch_qpn;
		break;
	case R_NOT_FREE:
		CHECK(emu_bind_mw(tb.s[1].qp, mw, tb.s[1].mr, at, 64, REMOTE_RW, k1) == 0,
		      "%s: API bind", what);
		mw_key = k1;
		k1 = next_key(k1);
		free_after = 0;
		break;
	case R_OTHER_PD:
		CHECK(emu_alloc_pd(tb.dev, &pd2) == 0, "%s: pd", what);
		CHECK(emu_reg_mr(pd2, tb.s[1].mem, tb.o.mem_len, 0x40000000, BIND_ACCESS,
		                 &mr2, &lkey) == 0,
		      "%s: MR", what);
		at = 0x40000000 + WIN_OFF;
		break;
	case R_NO_MW_BIND:
	case R_WRITE_NO_LOCAL_WRITE:
		CHECK(emu_reg_mr(tb.pd, tb.s[1].mem, tb.o.mem_len, 0x40000000,
		                 r == R_NO_MW_BIND ? IBV_ACCESS_LOCAL_WRITE
		                                   : IBV_ACCESS_MW_BIND,
		                 &mr2, &lkey) == 0,
		      "%s: MR", what);
		at = 0x40000000 + WIN_OFF;
		access = IBV_ACCESS_REMOTE_WRITE;
		break;
	case R_OUTSIDE_MR:
		at = tb.s[1].iova + tb.o.mem_len - 64;
		break;
	case R_OVER_2G:
		len = 1ull << 31;
		patch = patch_over_2g;
		break;
	case R_CTX_KLM_DIFFER:
		patch = patch_klm_len;
		break;
	case R_KEY_BYTE_0:
		k1 = key & ~0xffu;
		break;
	case R_STALE_MW_KEY:
		mw_key = next_key(key); /* a key the window never had */
		break;
	case R_BAD_UMR_FLAGS:
		patch = patch_flags;
		want = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	default:
		break;
	}
	s = wqe_bind(&rig, mw_key, k1, lkey, at, len, access, patch);
	CHECK(s == want, "%s: syndrome 0x%x, want 0x%x", what, s, want);
	CHECK(emu_qp_state(tb.s[1].qp) == IBV_QPS_ERR, "%s: QP state %d, want ERR", what,
	      emu_qp_state(tb.s[1].qp));
	/* The window as it was: free (the API binds it on the other QP) or still bound.
	 */
	rc = emu_bind_mw(tb.s[0].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW,
	                 next_key(k1));
	CHECK(rc == (free_after ? 0 : -EBUSY), "%s: window %s after the refusal (%d)",
	      what, free_after ? "not free" : "not bound", rc);
	CHECK(emu_dealloc_mw(mw) == 0, "%s: dealloc", what);
	if (mr2)
		CHECK(emu_dereg_mr(mr2) == 0, "%s: dereg", what);
	if (pd2)
		CHECK(emu_dealloc_pd(pd2) == 0, "%s: dealloc_pd", what);
	emu_tb_fini(&tb);
}

/* LOCAL_INV: a stale key, a free window, another QP's window. */
static void test_inv_refusal(int which)
{
	static const char *const names[] = { "stale key", "free window",
		                             "another QP's window" };
	struct emu_tb tb;
	struct rig r;
	struct emu_mr *mw;
	uint32_t key, k1;
	int s, rc;

	if (setup(&tb))
		return;
	r = local_rig(&tb);
	CHECK(emu_alloc_mw(tb.pd, &mw, &key) == 0, "alloc_mw");
	k1 = next_key(key);
	if (which != 1)
		CHECK(emu_bind_mw(which == 2 ? tb.s[0].qp : tb.s[1].qp, mw, tb.s[1].mr,
		                  tb.s[1].iova, 64, REMOTE_RW, k1) == 0,
		      "API bind");
	s = wqe_inv(&r, which == 0 ? next_key(k1) : which == 1 ? key : k1);
	CHECK(s == MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "LOCAL_INV, %s: syndrome 0x%x",
	      names[which], s);
	CHECK(emu_qp_state(tb.s[1].qp) == IBV_QPS_ERR, "LOCAL_INV, %s: QP state %d",
	      names[which], emu_qp_state(tb.s[1].qp));
	/* Still bound where it was (free stays free). */
	rc = emu_bind_mw(tb.s[0].qp, mw, tb.s[1].mr, tb.s[1].iova, 64, REMOTE_RW,
	                 next_key(k1));
	CHECK(rc == (which == 1 ? 0 : -EBUSY), "LOCAL_INV, %s: window changed (%d)",
	      names[which], rc);
	emu_tb_fini(&tb);
}

/* The WQE after a bind, with and without the initiator small fence. */
static void test_fence(void)
{
	struct emu_tb tb;
	struct rig r;
	struct emu_tb_side *b;
	struct emu_mr *mw;
	uint32_t key, k1, pi;
	struct ssq_cqe c;
	unsigned fenced;

	for (fenced = 0; fenced < 2; fenced++) {
		if (setup(&tb))
			return;
		b = &tb.s[1];
		r = local_rig(&tb);
		CHECK(emu_alloc_mw(tb.pd, &mw, &key) == 0, "alloc_mw");
		k1 = next_key(key);
		CHECK(wqe_bind(&r, key, k1, b->key, b->iova, 64, REMOTE_RW, NULL) == 0,
		      "bind");
		pi = b->sq.pi;
		b->sq.pi += ssq_prep_nop(
		    &b->sq, pi,
		    SSQ_WQE_SIGNALED | (fenced ? SSQ_WQE_FENCE_INITIATOR_SMALL : 0));
		emu_tb_ring(&tb, 1, pi);
		CHECK(cqe_of(&r, &b->scq_v, &c) == 0, "NOP after the bind");
		CHECK(emu_qp_umr_unfenced(b->qp) == !fenced, "%s: %llu counted",
		      fenced ? "fenced" : "unfenced",
		      (unsigned long long)emu_qp_umr_unfenced(b->qp));
		emu_tb_fini(&tb);
	}
}

/* Over the wire (the responder's QP has a remote peer): the same bytes, the same life. */
static void test_wire(void)
{
	struct emu_tb h[2];
	struct emu_mr *mr, *mw;
	uint32_t lkey, key, k1;
	uint64_t at = 0x50000000 + WIN_OFF;
	struct rig r;
	int s;

	if (tb_wire_up(h))
		return;
	r.devs[0] = h[0].dev;
	r.devs[1] = h[1].dev;
	r.ndev = 2;
	r.a = &h[0].s[0];
	r.b = &h[1].s[0];
	memset(r.b->mem, 0x5b, h[1].o.mem_len);
	memset(r.a->mem, 0xaa, h[0].o.mem_len);
	CHECK(emu_reg_mr(h[1].pd, r.b->mem, h[1].o.mem_len, 0x50000000, BIND_ACCESS, &mr,
	                 &lkey) == 0,
	      "wire: MR with MW_BIND");
	CHECK(emu_alloc_mw(h[1].pd, &mw, &key) == 0, "wire: alloc_mw");
	k1 = next_key(key);
	s = wqe_bind(&r, key, k1, lkey, at, WIN_LEN, REMOTE_RW, NULL);
	CHECK(s == 0, "wire: bind WQE: syndrome 0x%x", s);
	s = peer_write(&r, at + 32, k1);
	CHECK(s == 0, "wire: WRITE through the window: 0x%x", s);
	CHECK(r.b->mem[WIN_OFF + 32] == 0xaa && r.b->mem[WIN_OFF + 40] == 0x5b,
	      "wire: the WRITE landed wrong");
	s = wqe_inv(&r, k1);
	CHECK(s == 0, "wire: LOCAL_INV WQE: syndrome 0x%x", s);
	s = peer_write(&r, at + 32, k1);
	CHECK(s == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
	      "wire: WRITE after LOCAL_INV: syndrome 0x%x", s);
	CHECK(emu_dealloc_mw(mw) == 0, "wire: dealloc_mw");
	CHECK(emu_dereg_mr(mr) == 0, "wire: dereg_mr");
	tb_wire_down(h);
}

int main(void)
{
	int r;

	test_life();
	for (r = 0; r < R_COUNT; r++)
		test_bind_refusal((enum refusal)r);
	for (r = 0; r < 3; r++)
		test_inv_refusal(r);
	test_fence();
	test_wire();
	return test_exit("emu_mw_wqe");
}
