/* SPDX-License-Identifier: MIT */
/*
 * Every WQE ssq builds equals, byte for byte, the same WQE assembled field by
 * field from mlx5dv.h's own structs and helpers (mlx5dv_set_ctrl_seg,
 * mlx5dv_set_data_seg, struct mlx5_wqe_raddr_seg, struct
 * mlx5_wqe_atomic_seg, struct mlx5_wqe_inl_data_seg) following libmlx5's
 * layout rules: for every opcode x {gather list, inline} x {signaled, fenced,
 * plain} x several gather-list lengths x ring positions, including WQEs that
 * wrap the ring end. Bytes outside the WQE must be left untouched.
 *
 * The reference assembles each WQE linearly in a scratch buffer and then
 * copies it into the ring WQEBB by WQEBB modulo the ring size: a different
 * route to the wrap than ssq's segment-by-segment one.
 */
#include <ssq/ssq.h>
#include "helpers.h"

#define RING_WQEBBS 32u
#define RING_BYTES  (RING_WQEBBS * MLX5_SEND_WQE_BB)
#define QPN         0xabcdefu
#define MAX_INLINE  220u
#define MAX_SGE     13u
#define FILL        0xa5

static uint8_t ring_ssq[RING_BYTES] __attribute__((aligned(64)));
static uint8_t ring_ref[RING_BYTES] __attribute__((aligned(64)));
static uint8_t payload[1024];

static const uint8_t opcodes[] = {
	MLX5_OPCODE_NOP,        MLX5_OPCODE_SEND,           MLX5_OPCODE_SEND_IMM,
	MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_READ,
	MLX5_OPCODE_ATOMIC_CS,  MLX5_OPCODE_ATOMIC_FA,
};

static const uint8_t flag_sets[] = {
	0,                       /* plain */
	MLX5_WQE_CTRL_CQ_UPDATE, /* signaled */
	MLX5_WQE_CTRL_FENCE,     /* fenced (small and fence) */
	MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE | MLX5_WQE_CTRL_CQ_UPDATE |
	    MLX5_WQE_CTRL_SOLICITED,
};

static int has_raddr(uint8_t op)
{
	return op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       op == MLX5_OPCODE_RDMA_READ || op == MLX5_OPCODE_ATOMIC_CS ||
	       op == MLX5_OPCODE_ATOMIC_FA;
}

static int is_atomic(uint8_t op)
{
	return op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA;
}

/*
 * The reference: the WQE for @wr assembled from mlx5dv.h pieces into @out.
 * Returns its size in DS units.
 */
static unsigned ref_assemble(uint8_t *out, uint32_t pi, const struct ssq_wr *wr)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)out;
	uint8_t *p = out + sizeof(*ctrl);
	unsigned ds, i;
	uint32_t imm = 0;

	if (has_raddr(wr->opcode)) {
		struct mlx5_wqe_raddr_seg *r = (struct mlx5_wqe_raddr_seg *)p;

		r->raddr = htobe64(wr->raddr);
		r->rkey = htobe32(wr->rkey);
		r->reserved = 0;
		p += sizeof(*r);
	}
	if (is_atomic(wr->opcode)) {
		struct mlx5_wqe_atomic_seg *a = (struct mlx5_wqe_atomic_seg *)p;

		/* libmlx5 set_atomic_seg: CS puts swap, then compare; FA the addend. */
		if (wr->opcode == MLX5_OPCODE_ATOMIC_CS) {
			a->swap_add = htobe64(wr->swap);
			a->compare = htobe64(wr->compare_add);
		} else {
			a->swap_add = htobe64(wr->compare_add);
			a->compare = 0;
		}
		p += sizeof(*a);
	}
	if (wr->inline_data) {
		struct mlx5_wqe_inl_data_seg *inl = (struct mlx5_wqe_inl_data_seg *)p;
		uint32_t total = 0;
		uint8_t *d = p + sizeof(*inl);

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
			total += wr->sg_list[i].length;
		}
		if (total) {
			unsigned units = (total + sizeof(*inl) + 15) / 16;

			inl->byte_count = htobe32(total | MLX5_INLINE_SEG);
			memset(d, 0, units * 16 - total - sizeof(*inl));
			p += units * 16;
		}
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)p,
			                    wr->sg_list[i].length, wr->sg_list[i].lkey,
			                    wr->sg_list[i].addr);
			p += sizeof(struct mlx5_wqe_data_seg);
		}
	}
	ds = (unsigned)((p - out) / 16);
	if (wr->opcode == MLX5_OPCODE_SEND_IMM ||
	    wr->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)
		imm = wr->imm;
	mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, wr->opcode, 0, QPN, wr->flags,
	                    (uint8_t)ds, 0, imm);
	ctrl->dci_stream_channel_id = 0;
	return ds;
}

/* Copy a linear WQE into the ring at @pi, continuing at WQEBB 0 past the end. */
static void ref_place(uint8_t *ring, uint32_t pi, const uint8_t *wqe, unsigned ds)
{
	unsigned bytes = ds * 16, off = 0;
	uint32_t bb = pi;

	while (off < bytes) {
		unsigned n =
		    bytes - off < MLX5_SEND_WQE_BB ? bytes - off : MLX5_SEND_WQE_BB;

		memcpy(ring + (bb & (RING_WQEBBS - 1)) * MLX5_SEND_WQE_BB, wqe + off, n);
		off += n;
		bb++;
	}
}

static void init_sq(struct ssq_sq *sq, uint8_t *ring, __be32 *dbrec)
{
	struct mlx5dv_qp dv = { 0 };

	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING_WQEBBS;
	dv.sq.stride = MLX5_SEND_WQE_BB;
	if (ssq_sq_init(sq, &dv, QPN, MAX_INLINE, MAX_SGE)) {
		fprintf(stderr, "ssq_sq_init failed\n");
		exit(1);
	}
}

static unsigned first_diff(const uint8_t *a, const uint8_t *b, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

/* Build @wr both ways at @pi and compare the whole ring. */
static void compare_one(struct ssq_sq *sq, uint32_t pi, const struct ssq_wr *wr,
                        const char *what)
{
	static uint8_t linear[1024];
	unsigned ds, diff;
	int n;

	memset(ring_ssq, FILL, RING_BYTES);
	memset(ring_ref, FILL, RING_BYTES);
	memset(linear, 0, sizeof(linear));
	ds = ref_assemble(linear, pi, wr);
	ref_place(ring_ref, pi, linear, ds);

	n = ssq_wqe_build(sq, pi, wr);
	CHECK(n == (int)((ds * 16 + 63) / 64),
	      "%s at pi %u: returned %d, reference %u DS", what, pi, n, ds);
	diff = first_diff(ring_ssq, ring_ref, RING_BYTES);
	CHECK(diff == RING_BYTES,
	      "%s at pi %u: ring differs at byte %u (ssq %02x, ref %02x)", what, pi, diff,
	      diff < RING_BYTES ? ring_ssq[diff] : 0,
	      diff < RING_BYTES ? ring_ref[diff] : 0);
}

/* The one-buffer preps must write what ssq_wqe_build writes. */
static void compare_prep(struct ssq_sq *sq, uint32_t pi, const struct ssq_wr *wr)
{
	const struct ibv_sge *s = wr->sg_list;
	int n = -1, m;

	memset(ring_ssq, FILL, RING_BYTES);
	memset(ring_ref, FILL, RING_BYTES);
	switch (wr->opcode) {
	case MLX5_OPCODE_NOP:
		n = ssq_prep_nop(sq, pi, wr->flags);
		break;
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		n = ssq_prep_send(sq, pi, wr->opcode, s->addr, s->lkey, s->length,
		                  wr->imm, wr->flags);
		break;
	case MLX5_OPCODE_RDMA_WRITE:
		n = ssq_prep_rdma_write(sq, pi, s->addr, s->lkey, s->length, wr->raddr,
		                        wr->rkey, wr->flags);
		break;
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		n = ssq_prep_rdma_write_imm(sq, pi, s->addr, s->lkey, s->length,
		                            wr->raddr, wr->rkey, wr->imm, wr->flags);
		break;
	case MLX5_OPCODE_RDMA_READ:
		n = ssq_prep_rdma_read(sq, pi, s->addr, s->lkey, s->length, wr->raddr,
		                       wr->rkey, wr->flags);
		break;
	default:
		n = ssq_prep_atomic(sq, pi, wr->opcode, s->addr, s->lkey, wr->raddr,
		                    wr->rkey, wr->compare_add, wr->swap, wr->flags);
		break;
	}
	memcpy(ring_ref, ring_ssq, RING_BYTES);
	memset(ring_ssq, FILL, RING_BYTES);
	m = ssq_wqe_build(sq, pi, wr);
	CHECK(n == 1 && m == 1, "prep of opcode 0x%02x returned %d, build %d", wr->opcode,
	      n, m);
	CHECK(!memcmp(ring_ssq, ring_ref, RING_BYTES),
	      "prep of opcode 0x%02x differs from build", wr->opcode);
}

int main(void)
{
	static const uint32_t positions[] = { 0,
		                              1,
		                              17,
		                              RING_WQEBBS - 1,
		                              RING_WQEBBS - 2,
		                              RING_WQEBBS - 3,
		                              65535,
		                              65536 + 30,
		                              0xfffffffe };
	static const uint32_t sge_counts[] = { 1, 2, 3, 4, 7, MAX_SGE };
	static const uint32_t inline_lens[] = {
		0, 1, 12, 13, 28, 60, 61, 100, MAX_INLINE
	};
	struct ibv_sge sge[MAX_SGE];
	struct ssq_sq sq;
	__be32 dbrec[2];
	char what[128];
	unsigned o, f, k, p, i, wraps = 0;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	init_sq(&sq, ring_ssq, dbrec);

	for (o = 0; o < sizeof(opcodes); o++) {
		uint8_t op = opcodes[o];

		for (f = 0; f < sizeof(flag_sets); f++) {
			for (p = 0; p < sizeof(positions) / sizeof(positions[0]); p++) {
				uint32_t pi = positions[p];
				struct ssq_wr wr = { 0 };

				wr.opcode = op;
				wr.flags = flag_sets[f];
				wr.imm = htobe32(0x01020304u + o);
				wr.raddr = 0x7f1234567000ull + 8 * p;
				wr.rkey = 0x00beef00u + f;
				wr.compare_add = 0x1111222233334444ull + p;
				wr.swap = 0x5555666677778888ull + f;
				wr.sg_list = sge;

				if (op == MLX5_OPCODE_NOP) {
					snprintf(what, sizeof(what), "NOP flags %02x",
					         wr.flags);
					compare_one(&sq, pi, &wr, what);
					compare_prep(&sq, pi, &wr);
					continue;
				}
				if (is_atomic(op)) {
					sge[0] =
					    (struct ibv_sge){ 0x10000 + p * 8, 8, 0x77 };
					wr.num_sge = 1;
					snprintf(what, sizeof(what), "op %02x flags %02x",
					         op, wr.flags);
					compare_one(&sq, pi, &wr, what);
					compare_prep(&sq, pi, &wr);
					continue;
				}
				/* gather lists */
				for (k = 0;
				     k < sizeof(sge_counts) / sizeof(sge_counts[0]);
				     k++) {
					for (i = 0; i < sge_counts[k]; i++)
						sge[i] = (struct ibv_sge){
							0x200000ull + i * 4096 + p,
							100 + i, 0x1000 + i
						};
					wr.num_sge = sge_counts[k];
					snprintf(what, sizeof(what),
					         "op %02x flags %02x %u SGEs", op,
					         wr.flags, wr.num_sge);
					compare_one(&sq, pi, &wr, what);
					if ((pi & (RING_WQEBBS - 1)) +
					        SSQ_DS_TO_WQEBBS(2 + wr.num_sge) >
					    RING_WQEBBS)
						wraps++;
				}
				/* zero SGEs: a zero-length SEND / WRITE */
				wr.num_sge = 0;
				snprintf(what, sizeof(what), "op %02x flags %02x no SGE",
				         op, wr.flags);
				compare_one(&sq, pi, &wr, what);
				/* one SGE: the prep path too */
				sge[0] = (struct ibv_sge){ 0x300000ull + p, 64, 0x4242 };
				wr.num_sge = 1;
				compare_prep(&sq, pi, &wr);
				if (op == MLX5_OPCODE_RDMA_READ)
					continue; /* inline READ: test_dv_wqe_errors */
				/* inline, one and three pieces */
				wr.inline_data = 1;
				for (k = 0;
				     k < sizeof(inline_lens) / sizeof(inline_lens[0]);
				     k++) {
					uint32_t len = inline_lens[k], a = len / 3,
					         b = len / 2;

					sge[0] = (struct ibv_sge){ (uintptr_t)payload + p,
						                   len, 0 };
					wr.num_sge = 1;
					snprintf(what, sizeof(what),
					         "op %02x flags %02x inline %u", op,
					         wr.flags, len);
					compare_one(&sq, pi, &wr, what);
					sge[0] = (struct ibv_sge){ (uintptr_t)payload + 1,
						                   a, 0 };
					sge[1] =
					    (struct ibv_sge){ (uintptr_t)payload + 300,
						              b - a, 0 };
					sge[2] =
					    (struct ibv_sge){ (uintptr_t)payload + 600,
						              len - b, 0 };
					wr.num_sge = 3;
					snprintf(
					    what, sizeof(what),
					    "op %02x flags %02x inline %u in 3 pieces",
					    op, wr.flags, len);
					compare_one(&sq, pi, &wr, what);
				}
			}
		}
	}
	/* The matrix must have exercised the ring-end wrap. */
	CHECK(wraps > 50, "only %u gather-list WQEs wrapped the ring end", wraps);
	return test_exit("dv_wqe_bytes");
}
