/* SPDX-License-Identifier: MIT */
/*
 * ssq/cq.h - poll an mlx5 completion queue of 64-byte CQEs.
 *
 * The NIC writes CQE n into slot n & (cqe_cnt - 1) and sets its owner bit
 * to the parity of the pass, (n / cqe_cnt) & 1, last. A slot holds a new
 * CQE when its opcode is not MLX5_CQE_INVALID (libmlx5 fills a fresh CQ with
 * op_own = INVALID << 4) and its owner bit equals !!(ci & cqe_cnt). After
 * consuming, the consumer index goes to dbrec[SSQ_CQ_SET_CI] so the NIC
 * knows the slots are free again (or it reports a CQ overrun).
 *
 * Concurrency: one poller at a time per CQ (the shared queue hands a lease
 * around); the struct ssq_cq holds that poller's consumer index.
 */
#ifndef SSQ_CQ_H
#define SSQ_CQ_H

#include <ssq/common.h>
#include <ssq/barrier.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The CQ doorbell record is two words: the consumer index (word 0) and the
 * arm word (word 1). libmlx5 names them MLX5_CQ_SET_CI / MLX5_CQ_ARM_DB in
 * its private headers; mlx5dv.h does not export them.
 */
enum {
	SSQ_CQ_SET_CI = 0,
	SSQ_CQ_ARM_DB = 1,
};

struct ssq_cq {
	uint8_t *buf;     /* CQE 0 (mlx5dv_cq.buf) */
	__be32 *dbrec;    /* dbrec[SSQ_CQ_SET_CI] takes the consumer index */
	uint32_t cqe_cnt; /* a power of two */
	uint32_t cqn;
	uint32_t ci; /* consumer index: CQEs consumed, free-running */
};

/* One completion, decoded. */
struct ssq_cqe {
	uint8_t opcode;       /* MLX5_CQE_REQ, _RESP_SEND, ..., _REQ_ERR, _RESP_ERR */
	uint8_t syndrome;     /* error CQEs: MLX5_CQE_SYNDROME_*; else 0 */
	uint8_t vendor_err;   /* error CQEs: vendor_err_synd; else 0 */
	uint8_t s_wqe_opcode; /* REQ_ERR: the MLX5_OPCODE_* of the failed WQE */
	enum ibv_wc_status status; /* as libmlx5 reports it */
	uint16_t wqe_counter;      /* requester: index of the completed WQE */
	uint32_t qpn;
	uint32_t byte_len; /* responder: bytes received; READ/atomic: bytes read */
	__be32 imm;        /* RESP_WR_IMM / RESP_SEND_IMM: network order */
};

/*
 * ssq_cqe_status - the ibv_wc_status libmlx5 gives an error CQE of
 * @syndrome (mlx5_handle_error_cqe): one to one for the syndromes the PRM
 * defines, IBV_WC_GENERAL_ERR for any other.
 */
SSQ_INLINE enum ibv_wc_status ssq_cqe_status(uint8_t syndrome)
{
	switch (syndrome) {
	case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case MLX5_CQE_SYNDROME_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case MLX5_CQE_SYNDROME_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return IBV_WC_REM_ABORT_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

/*
 * ssq_cq_peek - the CQE at the consumer index if the NIC has written it in
 * this pass, else NULL. Does not consume it.
 */
SSQ_INLINE struct mlx5_cqe64 *ssq_cq_peek(const struct ssq_cq *cq)
{
	struct mlx5_cqe64 *cqe =
	    (struct mlx5_cqe64 *)(cq->buf + ((size_t)(cq->ci & (cq->cqe_cnt - 1)) << 6));
	/*
	 * An acquire load as well as the barrier below: the barrier orders the
	 * NIC's DMA writes; the acquire pairs with the emulated device's release
	 * store of op_own in C11's (and ThreadSanitizer's) terms. On x86-64 it
	 * is the same byte load.
	 */
	uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

	if ((op_own >> 4) == MLX5_CQE_INVALID ||
	    (op_own & MLX5_CQE_OWNER_MASK) != !!(cq->ci & cq->cqe_cnt))
		return NULL;
	/* The owner byte is read; only now may the body be read. */
	ssq_udma_from_device_barrier();
	return cqe;
}

/*
 * ssq_cqe_decode - fill @out from @cqe. Error CQEs (REQ_ERR, RESP_ERR) are
 * read through struct mlx5_err_cqe: syndrome, vendor syndrome and the
 * failed WQE's opcode; successful ones get IBV_WC_SUCCESS.
 */
SSQ_INLINE void ssq_cqe_decode(const struct mlx5_cqe64 *cqe, struct ssq_cqe *out)
{
	uint8_t opcode = __atomic_load_n(&cqe->op_own, __ATOMIC_RELAXED) >> 4;

	out->opcode = opcode;
	out->wqe_counter = be16toh(cqe->wqe_counter);
	out->imm = 0;
	if (ssq_unlikely(opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR)) {
		const struct mlx5_err_cqe *err = (const struct mlx5_err_cqe *)cqe;
		uint32_t op_qpn = be32toh(err->s_wqe_opcode_qpn);

		out->syndrome = err->syndrome;
		out->vendor_err = err->vendor_err_synd;
		out->s_wqe_opcode = (uint8_t)(op_qpn >> 24);
		out->qpn = op_qpn & 0xffffff;
		out->byte_len = 0;
		out->status = ssq_cqe_status(err->syndrome);
		return;
	}
	out->syndrome = 0;
	out->vendor_err = 0;
	out->s_wqe_opcode = 0;
	out->qpn = be32toh(cqe->sop_drop_qpn) & 0xffffff;
	out->byte_len = be32toh(cqe->byte_cnt);
	out->status = IBV_WC_SUCCESS;
	if (opcode == MLX5_CQE_RESP_WR_IMM || opcode == MLX5_CQE_RESP_SEND_IMM)
		out->imm = cqe->imm_inval_pkey;
}

/*
 * ssq_cq_update_ci - tell the NIC the CQEs below the consumer index are
 * free. The CQE reads must be done before the NIC may overwrite the slots.
 */
SSQ_INLINE void ssq_cq_update_ci(struct ssq_cq *cq)
{
	ssq_udma_to_device_barrier();
	/* Atomic for the emulated device's sake (a CPU reader); one plain store. */
	__atomic_store_n(&cq->dbrec[SSQ_CQ_SET_CI], htobe32(cq->ci & 0xffffff),
	                 __ATOMIC_RELAXED);
}

/*
 * ssq_cq_poll - decode up to @max new CQEs into @out, consume them and
 * update the consumer-index doorbell record once. Returns how many (0: the
 * CQ is empty). One poller at a time per @cq.
 */
SSQ_INLINE int ssq_cq_poll(struct ssq_cq *cq, struct ssq_cqe *out, int max)
{
	int n;

	for (n = 0; n < max; n++) {
		struct mlx5_cqe64 *cqe = ssq_cq_peek(cq);

		if (!cqe)
			break;
		ssq_cqe_decode(cqe, &out[n]);
		cq->ci++;
	}
	if (n)
		ssq_cq_update_ci(cq);
	return n;
}

/*
 * ssq_cq_init - describe a CQ from what mlx5dv_init_obj returns. Only
 * 64-byte CQEs are supported. Returns 0, or -EINVAL for a NULL buffer or
 * doorbell record, a cqe_size other than 64, or a cqe_cnt that is not a
 * power of two. Starts at consumer index 0.
 */
int ssq_cq_init(struct ssq_cq *cq, const struct mlx5dv_cq *dv);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_CQ_H */
