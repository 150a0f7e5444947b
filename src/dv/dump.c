/* SPDX-License-Identifier: MIT */
/*
 * Decode WQEs and CQEs field by field, with the PRM / mlx5dv.h field names,
 * so a dump can be checked against the PRM by eye.
 */
#include <stdio.h>
#include <inttypes.h>
#include <ssq/ssq.h>

const char *ssq_opcode_name(uint8_t op)
{
	switch (op) {
	case MLX5_OPCODE_NOP:
		return "NOP";
	case MLX5_OPCODE_SEND_INVAL:
		return "SEND_INVAL";
	case MLX5_OPCODE_RDMA_WRITE:
		return "RDMA_WRITE";
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		return "RDMA_WRITE_IMM";
	case MLX5_OPCODE_SEND:
		return "SEND";
	case MLX5_OPCODE_SEND_IMM:
		return "SEND_IMM";
	case MLX5_OPCODE_RDMA_READ:
		return "RDMA_READ";
	case MLX5_OPCODE_ATOMIC_CS:
		return "ATOMIC_CS";
	case MLX5_OPCODE_ATOMIC_FA:
		return "ATOMIC_FA";
	case MLX5_OPCODE_ATOMIC_MASKED_CS:
		return "ATOMIC_MASKED_CS";
	case MLX5_OPCODE_ATOMIC_MASKED_FA:
		return "ATOMIC_MASKED_FA";
	case MLX5_OPCODE_LOCAL_INVAL:
		return "LOCAL_INVAL";
	case MLX5_OPCODE_UMR:
		return "UMR";
	default:
		return NULL;
	}
}

const char *ssq_cqe_opcode_name(uint8_t op)
{
	switch (op) {
	case MLX5_CQE_REQ:
		return "REQ";
	case MLX5_CQE_RESP_WR_IMM:
		return "RESP_WR_IMM";
	case MLX5_CQE_RESP_SEND:
		return "RESP_SEND";
	case MLX5_CQE_RESP_SEND_IMM:
		return "RESP_SEND_IMM";
	case MLX5_CQE_RESP_SEND_INV:
		return "RESP_SEND_INV";
	case MLX5_CQE_RESIZE_CQ:
		return "RESIZE_CQ";
	case MLX5_CQE_REQ_ERR:
		return "REQ_ERR";
	case MLX5_CQE_RESP_ERR:
		return "RESP_ERR";
	case MLX5_CQE_INVALID:
		return "INVALID";
	default:
		return NULL;
	}
}

const char *ssq_syndrome_name(uint8_t s)
{
	switch (s) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return "LOCAL_LENGTH_ERR";
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return "LOCAL_QP_OP_ERR";
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
		return "LOCAL_PROT_ERR";
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
		return "WR_FLUSH_ERR";
	case MLX5_CQE_SYNDROME_MW_BIND_ERR:
		return "MW_BIND_ERR";
	case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
		return "BAD_RESP_ERR";
	case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return "LOCAL_ACCESS_ERR";
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return "REMOTE_INVAL_REQ_ERR";
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return "REMOTE_ACCESS_ERR";
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
		return "REMOTE_OP_ERR";
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return "TRANSPORT_RETRY_EXC_ERR";
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return "RNR_RETRY_EXC_ERR";
	case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return "REMOTE_ABORTED_ERR";
	default:
		return NULL;
	}
}

void ssq_hexdump(FILE *out, const void *p, size_t len)
{
	const uint8_t *b = (const uint8_t *)p;
	size_t i;

	for (i = 0; i < len; i++)
		fprintf(out, "%s%02x%s", i % 16 ? "" : "    ", b[i],
		        i % 16 == 15 || i + 1 == len ? "\n" : (i % 4 == 3 ? "  " : " "));
}

static const char *fence_name(uint8_t fm)
{
	static const char *const names[] = { "none", "initiator_small", "fence",
		                             "strong_ordering", "small_and_fence" };

	return fm < 5 ? names[fm] : "reserved";
}

static void dump_ctrl(FILE *out, const struct mlx5_wqe_ctrl_seg *c)
{
	uint32_t w0 = be32toh(c->opmod_idx_opcode), w1 = be32toh(c->qpn_ds);
	const char *name = ssq_opcode_name(w0 & 0xff);

	fprintf(out, "  ctrl   opmod=%u wqe_index=%u opcode=0x%02x (%s)\n", w0 >> 24,
	        (w0 >> 8) & 0xffff, w0 & 0xff, name ? name : "unknown");
	fprintf(
	    out,
	    "         qpn=0x%06x ds=%u signature=0x%02x fm_ce_se=0x%02x"
	    " (fence=%s%s%s) imm=0x%08x\n",
	    w1 >> 8, w1 & 0x3f, c->signature, c->fm_ce_se, fence_name(c->fm_ce_se >> 5),
	    c->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE ? " signaled" : "",
	    c->fm_ce_se & MLX5_WQE_CTRL_SOLICITED ? " solicited" : "", be32toh(c->imm));
}

int ssq_wqe_dump(FILE *out, const struct ssq_sq *sq, uint32_t pi)
{
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);
	uint8_t opcode = be32toh(ctrl->opmod_idx_opcode) & 0xff;
	unsigned ds = be32toh(ctrl->qpn_ds) & 0x3f, i = 1;
	void *seg = (void *)(ctrl + 1);

	if (!ds)
		return -EINVAL;
	fprintf(out, "WQE at pi %u (WQEBB %u), %u DS, %u WQEBB\n", pi,
	        pi & (sq->wqe_cnt - 1), ds, SSQ_DS_TO_WQEBBS(ds));
	dump_ctrl(out, ctrl);
	if (opcode == MLX5_OPCODE_RDMA_WRITE || opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
	    opcode == MLX5_OPCODE_RDMA_READ || opcode == MLX5_OPCODE_ATOMIC_CS ||
	    opcode == MLX5_OPCODE_ATOMIC_FA) {
		const struct mlx5_wqe_raddr_seg *r =
		    (const struct mlx5_wqe_raddr_seg *)seg;

		if (i++ >= ds)
			goto short_wqe;
		fprintf(
		    out, "  raddr  raddr=0x%016" PRIx64 " rkey=0x%08x reserved=0x%08x\n",
		    (uint64_t)be64toh(r->raddr), be32toh(r->rkey), be32toh(r->reserved));
		seg = ssq_sq_next_seg(sq, seg);
	}
	if (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA) {
		const struct mlx5_wqe_atomic_seg *a =
		    (const struct mlx5_wqe_atomic_seg *)seg;

		if (i++ >= ds)
			goto short_wqe;
		fprintf(out,
		        "  atomic swap_add=0x%016" PRIx64 " compare=0x%016" PRIx64 "\n",
		        (uint64_t)be64toh(a->swap_add), (uint64_t)be64toh(a->compare));
		seg = ssq_sq_next_seg(sq, seg);
	}
	while (i < ds) {
		const struct mlx5_wqe_data_seg *d = (const struct mlx5_wqe_data_seg *)seg;
		uint32_t bc = be32toh(d->byte_count);

		if (bc & MLX5_INLINE_SEG) {
			uint32_t len = bc & ~(uint32_t)MLX5_INLINE_SEG;
			unsigned units = (len + 4 + 15) / 16;
			const uint8_t *p = (const uint8_t *)seg + 4;
			uint32_t k;

			fprintf(out, "  inline byte_count=%u (0x%08x), %u DS:", len, bc,
			        units);
			for (k = 0; k < len && k < 64; k++) {
				if (p == sq->buf_end)
					p = sq->buf;
				fprintf(out, "%s%02x", k % 16 ? " " : "\n         ",
				        *p++);
			}
			fprintf(out, "%s\n", len > 64 ? " ..." : "");
			while (units-- && i < ds) {
				seg = ssq_sq_next_seg(sq, seg);
				i++;
			}
			continue;
		}
		fprintf(out, "  data   byte_count=%u lkey=0x%08x addr=0x%016" PRIx64 "\n",
		        bc, be32toh(d->lkey), (uint64_t)be64toh(d->addr));
		seg = ssq_sq_next_seg(sq, seg);
		i++;
	}
	return (int)SSQ_DS_TO_WQEBBS(ds);
short_wqe:
	fprintf(out, "  (ds=%u is too small for a %s WQE)\n", ds,
	        ssq_opcode_name(opcode));
	return (int)SSQ_DS_TO_WQEBBS(ds);
}

void ssq_cqe_dump(FILE *out, const struct mlx5_cqe64 *cqe)
{
	struct ssq_cqe d;
	const char *name, *syn;

	ssq_cqe_decode(cqe, &d);
	name = ssq_cqe_opcode_name(d.opcode);
	fprintf(out, "CQE opcode=%u (%s) owner=%u wqe_counter=%u qpn=0x%06x", d.opcode,
	        name ? name : "unknown", cqe->op_own & MLX5_CQE_OWNER_MASK, d.wqe_counter,
	        d.qpn);
	if (d.opcode == MLX5_CQE_REQ_ERR || d.opcode == MLX5_CQE_RESP_ERR) {
		syn = ssq_syndrome_name(d.syndrome);
		fprintf(out,
		        " syndrome=0x%02x (%s) vendor_err_synd=0x%02x "
		        "s_wqe_opcode=0x%02x -> %s\n",
		        d.syndrome, syn ? syn : "unknown", d.vendor_err, d.s_wqe_opcode,
		        ibv_wc_status_str(d.status));
		return;
	}
	fprintf(out, " byte_cnt=%u imm_inval_pkey=0x%08x -> %s\n", d.byte_len,
	        be32toh(cqe->imm_inval_pkey), ibv_wc_status_str(d.status));
}
