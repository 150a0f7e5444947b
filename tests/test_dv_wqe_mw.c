/* SPDX-License-Identifier: MIT */
/*
 * The type-2 window WQEs (ssq_prep_bind_mw, ssq_prep_local_inv) against
 * the bytes libmlx5 writes for IBV_WR_BIND_MW and IBV_WR_LOCAL_INV
 * (rdma-core v44 providers/mlx5/qp.c: _mlx5_post_send's cases, set_bind_wr,
 * set_umr_control_seg, set_umr_mkey_seg, set_umr_data_seg), two ways:
 *
 *  - field by field, at fixed offsets, against constants worked out by hand
 *    from those functions and mlx5dv.h's enums (the comments show the sums);
 *  - byte by byte, against ref_*() below, which follow libmlx5's functions
 *    statement for statement on a linear buffer, placed into the ring
 *    WQEBB by WQEBB modulo its size. The reference runs twice, over a
 *    buffer of 0x00 and one of 0xff: a byte equal in both is one libmlx5
 *    writes, and ssq's must equal it; a byte that differs is one libmlx5
 *    leaves as the ring held it (most of the mkey context), and ssq's
 *    must be 0.
 *
 * At ring positions that wrap, with every flag set; bytes outside the WQE
 * stay untouched; every refusal writes nothing.
 */
#include <assert.h>
#include <ssq/ssq.h>
#include "helpers.h"

#define RING_WQEBBS 16u
#define RING_BYTES  (RING_WQEBBS * MLX5_SEND_WQE_BB)
#define QPN         0x00abcdu
#define FILL        0x5a

static_assert(sizeof(struct mlx5_wqe_umr_ctrl_seg) == 48, "umr ctrl: 3 DS");
static_assert(sizeof(struct mlx5_wqe_mkey_context_seg) == 64, "mkey context: 4 DS");
static_assert(sizeof(struct mlx5_wqe_umr_klm_seg) == 16, "KLM: 1 DS (of a 64-byte unit)");

static uint8_t ring[RING_BYTES] __attribute__((aligned(64)));

/* ---- the reference: libmlx5's statements, on a linear WQE ---- */

/* get_klm_octo: ALIGN(nentries, 3) / 2, big-endian. */
static __be16 ref_klm_octo(int n)
{
	return htobe16((uint16_t)((((n) + 7) & ~7) / 2));
}

/* set_umr_control_seg for IBV_MW_TYPE_2. */
static void ref_umr_ctrl(struct mlx5_wqe_umr_ctrl_seg *ctrl, uint64_t length)
{
	ctrl->flags =
	    MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | MLX5_WQE_UMR_CTRL_FLAG_INLINE;
	ctrl->mkey_mask =
	    htobe64(MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE | MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY);
	ctrl->translation_offset = 0;
	memset(ctrl->rsvd0, 0, sizeof(ctrl->rsvd0));
	memset(ctrl->rsvd1, 0, sizeof(ctrl->rsvd1));
	ctrl->mkey_mask |= htobe64(MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN);
	if (length) {
		ctrl->klm_octowords = ref_klm_octo(1);
		ctrl->flags |= MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
		ctrl->mkey_mask |=
		    htobe64(MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN |
		            MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR |
		            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE |
		            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ |
		            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE |
		            MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC);
	} else {
		ctrl->klm_octowords = ref_klm_octo(0);
		ctrl->flags |= MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
	}
}

/* set_umr_mkey_seg for IBV_MW_TYPE_2, not zero-based. */
static void ref_umr_mkey(struct mlx5_wqe_mkey_context_seg *mkey, uint32_t rkey,
                         uint32_t qpn, uint64_t addr, uint64_t length, int access)
{
	mkey->qpn_mkey = htobe32((rkey & 0xFF) | (!length ? 0xFFFFFF00 : qpn << 8));
	if (length) {
		mkey->access_flags = 0;
		mkey->free = 0;
		if (access & IBV_ACCESS_LOCAL_WRITE)
			mkey->access_flags |=
			    MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE;
		if (access & IBV_ACCESS_REMOTE_WRITE)
			mkey->access_flags |=
			    MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE;
		if (access & IBV_ACCESS_REMOTE_READ)
			mkey->access_flags |=
			    MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ;
		if (access & IBV_ACCESS_REMOTE_ATOMIC)
			mkey->access_flags |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC;
		mkey->start_addr = htobe64(addr);
		mkey->len = htobe64(length);
	} else {
		mkey->free = MLX5_WQE_MKEY_CONTEXT_FREE;
	}
}

/* set_umr_data_seg: the KLM in a 64-byte unit, the rest zeroed. */
static void ref_umr_data(uint8_t *seg, uint32_t lkey, uint64_t addr, uint64_t length)
{
	struct mlx5_wqe_umr_klm_seg *klm = (struct mlx5_wqe_umr_klm_seg *)seg;

	klm->byte_count = htobe32((uint32_t)length);
	klm->mkey = htobe32(lkey);
	klm->address = htobe64(addr);
	memset(klm + 1, 0, 64 - sizeof(*klm));
}

/*
 * _mlx5_post_send for one BIND_MW (@length > 0) or LOCAL_INV (@length 0)
 * on an RC QP, into @out prefilled with @fill. @imm_key is the window's
 * current rkey (bind_mw.mw->rkey) or invalidate_rkey, @new_rkey
 * bind_mw.rkey (set_bind_wr's rkey, 0 for LOCAL_INV). Returns the DS count.
 */
static unsigned ref_wqe(uint8_t *out, uint8_t fill, uint32_t pi, uint8_t fm_ce_se,
                        uint32_t imm_key, uint32_t new_rkey, uint32_t lkey, uint64_t addr,
                        uint64_t length, int access)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)out;
	uint8_t *seg = out + sizeof(*ctrl);
	unsigned size = sizeof(*ctrl) / 16;

	memset(out, fill, 4 * MLX5_SEND_WQE_BB);
	/* *(uint32_t *)(seg + 8) = 0: signature, dci_stream_channel_id, fm_ce_se */
	memset(out + 8, 0, 4);
	ctrl->imm = htobe32(imm_key);
	ctrl->fm_ce_se = fm_ce_se;
	ref_umr_ctrl((struct mlx5_wqe_umr_ctrl_seg *)seg, length);
	seg += sizeof(struct mlx5_wqe_umr_ctrl_seg);
	size += sizeof(struct mlx5_wqe_umr_ctrl_seg) / 16;
	ref_umr_mkey((struct mlx5_wqe_mkey_context_seg *)seg, new_rkey, QPN, addr, length,
	             access);
	seg += sizeof(struct mlx5_wqe_mkey_context_seg);
	size += sizeof(struct mlx5_wqe_mkey_context_seg) / 16;
	if (length) {
		ref_umr_data(seg, lkey, addr, length);
		size += 64 / 16;
	}
	ctrl->opmod_idx_opcode =
	    htobe32(((pi & 0xffff) << 8) | MLX5_OPCODE_UMR | (0 << 24));
	ctrl->qpn_ds = htobe32(size | (QPN << 8));
	return size;
}

/* ---- checks ---- */

static void init_sq(struct ssq_sq *sq, uint32_t wqebbs, __be32 *dbrec)
{
	struct mlx5dv_qp dv = { 0 };

	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = wqebbs;
	dv.sq.stride = MLX5_SEND_WQE_BB;
	if (ssq_sq_init(sq, &dv, QPN, 64, 4)) {
		fprintf(stderr, "ssq_sq_init failed\n");
		exit(1);
	}
}

/* The WQE at @pi read back from the ring into @out, linear. */
static void unplace(uint8_t *out, uint32_t pi, unsigned wqebbs)
{
	unsigned i;

	for (i = 0; i < wqebbs; i++)
		memcpy(out + i * MLX5_SEND_WQE_BB,
		       ring + ((pi + i) & (RING_WQEBBS - 1)) * MLX5_SEND_WQE_BB,
		       MLX5_SEND_WQE_BB);
}

/* The ring outside the WQEBBs [@pi, @pi + @wqebbs) still holds FILL. */
static int outside_untouched(uint32_t pi, unsigned wqebbs)
{
	unsigned bb, i;

	for (bb = 0; bb < RING_WQEBBS; bb++) {
		if (((bb - pi) & (RING_WQEBBS - 1)) < wqebbs)
			continue;
		for (i = 0; i < MLX5_SEND_WQE_BB; i++)
			if (ring[bb * MLX5_SEND_WQE_BB + i] != FILL)
				return 0;
	}
	return 1;
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t be64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static int all_zero(const uint8_t *p, unsigned n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* ssq's bytes against the reference's, as the header comment says. */
static void check_against_ref(const uint8_t *got, unsigned wqebbs, uint32_t pi,
                              uint8_t fm, uint32_t imm_key, uint32_t new_rkey,
                              uint32_t lkey, uint64_t addr, uint64_t len, int access,
                              const char *what)
{
	uint8_t r0[4 * MLX5_SEND_WQE_BB], r1[4 * MLX5_SEND_WQE_BB];
	unsigned ds0, ds1, i, bad = ~0u;

	ds0 = ref_wqe(r0, 0x00, pi, fm, imm_key, new_rkey, lkey, addr, len, access);
	ds1 = ref_wqe(r1, 0xff, pi, fm, imm_key, new_rkey, lkey, addr, len, access);
	CHECK(ds0 == ds1 && SSQ_DS_TO_WQEBBS(ds0) == wqebbs, "%s: ds %u", what, ds0);
	for (i = 0; i < wqebbs * MLX5_SEND_WQE_BB && bad == ~0u; i++)
		if (r0[i] == r1[i] ? got[i] != r0[i] : got[i] != 0)
			bad = i;
	CHECK(bad == ~0u, "%s: byte %u is %#x, libmlx5 %s %#x", what, bad,
	      bad == ~0u ? 0 : got[bad],
	      bad != ~0u && r0[bad] == r1[bad] ? "writes" : "leaves it; want",
	      bad == ~0u ? 0 : (r0[bad] == r1[bad] ? r0[bad] : 0));
}

/* Field by field, offsets within the linear WQE. */
static void check_bind_fields(const uint8_t *w, uint32_t pi, uint8_t fm, uint32_t mw_rkey,
                              uint32_t new_rkey, uint32_t lkey, uint64_t addr,
                              uint64_t len, uint8_t want_access, const char *what)
{
	/* ctrl: idx << 8 | UMR (0x25), opmod 0; qpn << 8 | 12 DS. */
	CHECK(be32_at(w + 0) == ((pi & 0xffff) << 8 | 0x25), "%s: opmod_idx_opcode",
	      what);
	CHECK(be32_at(w + 4) == (QPN << 8 | 12), "%s: qpn_ds", what);
	CHECK(w[8] == 0 && w[9] == 0 && w[10] == 0 && w[11] == fm,
	      "%s: signature, dci stream, fm_ce_se", what);
	/* ctrl->imm = htobe32(wr->bind_mw.mw->rkey): the window's current key. */
	CHECK(be32_at(w + 12) == mw_rkey, "%s: imm", what);
	/* umr ctrl: INLINE 0x80 | CHECK_FREE 0x20 | TRNSLATION_OFFSET 0x10. */
	CHECK(w[16] == 0xb0, "%s: umr flags %#x", what, w[16]);
	CHECK(all_zero(w + 17, 3), "%s: umr rsvd0", what);
	/* get_klm_octo(1) = ALIGN(1, 3) / 2 = 4. */
	CHECK(w[20] == 0 && w[21] == 4, "%s: klm_octowords", what);
	CHECK(w[22] == 0 && w[23] == 0, "%s: translation_offset", what);
	/*
	 * FREE 1<<29 | QPN 1<<14 | MKEY 1<<13 | ATOMIC 1<<21 | REMOTE_WRITE
	 * 1<<20 | REMOTE_READ 1<<19 | LOCAL_WRITE 1<<18 | START_ADDR 1<<6 |
	 * LEN 1<<0 = 0x203c6041.
	 */
	CHECK(be64_at(w + 24) == 0x203c6041ull, "%s: mkey_mask %#llx", what,
	      (unsigned long long)be64_at(w + 24));
	CHECK(all_zero(w + 32, 32), "%s: umr rsvd1", what);
	/* mkey context: free 0, access, qpn << 8 | new key byte, start, len. */
	CHECK(w[64] == 0, "%s: free", what);
	CHECK(w[66] == want_access, "%s: access_flags %#x want %#x", what, w[66],
	      want_access);
	CHECK(be32_at(w + 68) == (QPN << 8 | (new_rkey & 0xff)), "%s: qpn_mkey", what);
	CHECK(be64_at(w + 80) == addr, "%s: start_addr", what);
	CHECK(be64_at(w + 88) == len, "%s: len", what);
	CHECK(w[65] == 0 && w[67] == 0 && all_zero(w + 72, 8) && all_zero(w + 96, 32),
	      "%s: mkey context fields outside the mask are 0", what);
	/* KLM: byte_count, the MR's lkey, the address; 48 bytes of zero. */
	CHECK(be32_at(w + 128) == (uint32_t)len, "%s: klm byte_count", what);
	CHECK(be32_at(w + 132) == lkey, "%s: klm mkey", what);
	CHECK(be64_at(w + 136) == addr, "%s: klm address", what);
	CHECK(all_zero(w + 144, 48), "%s: klm padding", what);
}

static void check_inv_fields(const uint8_t *w, uint32_t pi, uint8_t fm, uint32_t rkey,
                             const char *what)
{
	CHECK(be32_at(w + 0) == ((pi & 0xffff) << 8 | 0x25), "%s: opmod_idx_opcode",
	      what);
	CHECK(be32_at(w + 4) == (QPN << 8 | 8), "%s: qpn_ds", what);
	CHECK(w[11] == fm && !w[8] && !w[9] && !w[10], "%s: fm_ce_se", what);
	/* ctrl->imm = htobe32(wr->invalidate_rkey). */
	CHECK(be32_at(w + 12) == rkey, "%s: imm", what);
	/* INLINE 0x80 | TRNSLATION_OFFSET 0x10 | CHECK_QPN 0x08. */
	CHECK(w[16] == 0x98, "%s: umr flags %#x", what, w[16]);
	/* get_klm_octo(0) = 0. */
	CHECK(w[20] == 0 && w[21] == 0, "%s: klm_octowords", what);
	/* FREE 1<<29 | QPN 1<<14 | MKEY 1<<13 = 0x20006000. */
	CHECK(be64_at(w + 24) == 0x20006000ull, "%s: mkey_mask", what);
	CHECK(all_zero(w + 17, 3) && all_zero(w + 22, 2) && all_zero(w + 32, 32),
	      "%s: umr reserved", what);
	/* MLX5_WQE_MKEY_CONTEXT_FREE (1 << 6); qpn_mkey 0xffffff00 | (0 & 0xff). */
	CHECK(w[64] == 0x40, "%s: free %#x", what, w[64]);
	CHECK(be32_at(w + 68) == 0xffffff00u, "%s: qpn_mkey", what);
	CHECK(w[65] == 0 && w[66] == 0 && w[67] == 0 && all_zero(w + 72, 56),
	      "%s: mkey context fields outside the mask are 0", what);
}

static void check_refusals(struct ssq_sq *sq)
{
	static const struct {
		uint32_t new_rkey;
		uint64_t len;
		unsigned access, fm;
		int want;
	} bad[] = {
		{ 0x123457, 4096, IBV_ACCESS_REMOTE_WRITE, 0xff, -EINVAL }, /* flags */
		{ 0x123457, 4096, IBV_ACCESS_REMOTE_WRITE, 0xa0, -EINVAL }, /* fm 5 */
		{ 0x123457, 0, IBV_ACCESS_REMOTE_WRITE, 0, -EINVAL },       /* len 0 */
		{ 0x123457, 4096, 0, 0, -EINVAL },                          /* access 0 */
		{ 0x123457, 4096, IBV_ACCESS_LOCAL_WRITE, 0, -EINVAL },     /* local */
		{ 0x123457, 4096, IBV_ACCESS_MW_BIND, 0, -EINVAL }, /* not an access */
		{ 0x124457, 4096, IBV_ACCESS_REMOTE_READ, 0, -EINVAL }, /* other index */
		{ 0x123457, (1ull << 31) + 1, IBV_ACCESS_REMOTE_READ, 0, -EOPNOTSUPP },
	};
	unsigned i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(ring, FILL, sizeof(ring));
		rc = ssq_prep_bind_mw(sq, 5, 0x123456, bad[i].new_rkey, 0x777, 0x1000,
		                      bad[i].len, bad[i].access, bad[i].fm);
		CHECK(rc == bad[i].want, "refusal %u: %d, want %d", i, rc, bad[i].want);
		CHECK(outside_untouched(0, 0), "refusal %u wrote into the ring", i);
	}
	memset(ring, FILL, sizeof(ring));
	rc = ssq_prep_local_inv(sq, 5, 0x123456, 0xe0);
	CHECK(rc == -EINVAL && outside_untouched(0, 0), "LOCAL_INV, fm 7: %d", rc);
}

int main(void)
{
	static const uint32_t positions[] = {
		0,     1,         7, RING_WQEBBS - 1, RING_WQEBBS - 2, RING_WQEBBS - 3,
		65535, 0xfffffffe
	};
	static const uint8_t fms[] = { 0, MLX5_WQE_CTRL_CQ_UPDATE,
		                       MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_CQ_UPDATE,
		                       MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE |
		                           MLX5_WQE_CTRL_SOLICITED };
	static const struct {
		unsigned access;
		uint8_t flags; /* the mkey context's access_flags, from mlx5dv.h */
	} accesses[] = {
		{ IBV_ACCESS_REMOTE_WRITE, 0x20 },
		{ IBV_ACCESS_REMOTE_READ, 0x10 },
		{ IBV_ACCESS_REMOTE_ATOMIC, 0x40 },
		{ IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_ATOMIC,
		  0x70 },
	};
	static const uint64_t lens[] = { 1, 4096, 0x7fffffff, 1ull << 31 };
	uint8_t got[4 * MLX5_SEND_WQE_BB];
	struct ssq_sq sq;
	__be32 dbrec[2];
	char what[160];
	unsigned p, f, a, l, wraps = 0;
	int rc;

	init_sq(&sq, RING_WQEBBS, dbrec);
	for (p = 0; p < sizeof(positions) / sizeof(positions[0]); p++)
		for (f = 0; f < sizeof(fms); f++)
			for (a = 0; a < sizeof(accesses) / sizeof(accesses[0]); a++)
				for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
					uint32_t pi = positions[p],
					         mw = 0xc0ffee00u | (pi & 0xff);
					uint32_t nk = (mw & ~0xffu) | ((mw + 1) & 0xff);
					uint64_t addr = 0x7f0012345000ull + pi * 64;

					snprintf(what, sizeof(what),
					         "bind pi %u fm %#x access %#x len %#llx",
					         pi, fms[f], accesses[a].access,
					         (unsigned long long)lens[l]);
					memset(ring, FILL, sizeof(ring));
					rc = ssq_prep_bind_mw(&sq, pi, mw, nk, 0x1234567,
					                      addr, lens[l],
					                      accesses[a].access, fms[f]);
					CHECK(rc == 3, "%s: returned %d", what, rc);
					if (rc != 3)
						continue;
					wraps +=
					    (pi & (RING_WQEBBS - 1)) + 3 > RING_WQEBBS;
					CHECK(outside_untouched(pi, 3),
					      "%s: wrote outside", what);
					unplace(got, pi, 3);
					check_bind_fields(got, pi, fms[f], mw, nk,
					                  0x1234567, addr, lens[l],
					                  accesses[a].flags, what);
					check_against_ref(got, 3, pi, fms[f], mw, nk,
					                  0x1234567, addr, lens[l],
					                  (int)accesses[a].access, what);
				}
	for (p = 0; p < sizeof(positions) / sizeof(positions[0]); p++)
		for (f = 0; f < sizeof(fms); f++) {
			uint32_t pi = positions[p], rkey = 0x00beef00u | (pi & 0xff);

			snprintf(what, sizeof(what), "local_inv pi %u fm %#x", pi,
			         fms[f]);
			memset(ring, FILL, sizeof(ring));
			rc = ssq_prep_local_inv(&sq, pi, rkey, fms[f]);
			CHECK(rc == 2, "%s: returned %d", what, rc);
			if (rc != 2)
				continue;
			wraps += (pi & (RING_WQEBBS - 1)) + 2 > RING_WQEBBS;
			CHECK(outside_untouched(pi, 2), "%s: wrote outside", what);
			unplace(got, pi, 2);
			check_inv_fields(got, pi, fms[f], rkey, what);
			check_against_ref(got, 2, pi, fms[f], rkey, 0, 0, 0, 0, 0, what);
		}
	CHECK(wraps > 0, "no case wrapped the ring end");
	check_refusals(&sq);

	/* A ring smaller than the WQE. */
	init_sq(&sq, 2, dbrec);
	memset(ring, FILL, sizeof(ring));
	rc = ssq_prep_bind_mw(&sq, 0, 0x100, 0x101, 1, 0x1000, 64, IBV_ACCESS_REMOTE_READ,
	                      0);
	CHECK(rc == -ENOSPC && outside_untouched(0, 0), "bind on 2 WQEBBs: %d", rc);
	CHECK(ssq_prep_local_inv(&sq, 0, 0x100, 0) == 2, "LOCAL_INV fits 2 WQEBBs");
	init_sq(&sq, 1, dbrec);
	memset(ring, FILL, sizeof(ring));
	rc = ssq_prep_local_inv(&sq, 0, 0x100, 0);
	CHECK(rc == -ENOSPC && outside_untouched(0, 0), "LOCAL_INV on 1 WQEBB: %d", rc);
	return test_exit("dv_wqe_mw");
}
