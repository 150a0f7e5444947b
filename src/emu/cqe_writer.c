/* SPDX-License-Identifier: MIT */
/*
 * Write 64-byte CQEs as a ConnectX does: find room by the consumer index
 * the poller publishes, write the body, then op_own (opcode and owner bit)
 * last with release order, so a poller that sees the new owner bit
 * (ssq_cq_peek: owner load, then ssq_udma_from_device_barrier) sees the body.
 */
#include "emu/emu_pvt.h"

/*
 * A full CQ is a CQ overrun (PRM: CQ error event, the CQ stops): the device
 * cannot write, so the QPs that complete into it cannot make progress and
 * go to ERR. Lock held.
 */
static void cq_overrun(struct emu_cq *cq)
{
	struct emu_dev *dev = cq->dev;
	unsigned i;

	__atomic_store_n(&cq->overrun, 1, __ATOMIC_RELAXED);
	fprintf(
	    stderr,
	    "ssq_emu: CQ 0x%x overrun: %u CQEs written, consumer index %u, %u slots\n",
	    cq->cqn, cq->pi, be32toh(cq->dbrec[SSQ_CQ_SET_CI]) & 0xffffff, cq->cqe_cnt);
	if (dev->trace)
		fprintf(dev->trace, "CQ 0x%x overrun at pi %u\n", cq->cqn, cq->pi);
	emu_async_post(dev, IBV_EVENT_CQ_ERR, 0, cq->cqn);
	for (i = 0; i < dev->nqp; i++) {
		struct emu_qp *qp = dev->qps[i];

		if (qp && (qp->send_cq == cq || qp->recv_cq == cq) &&
		    qp->state != IBV_QPS_RESET)
			emu_qp_to_err(qp);
	}
}

/*
 * The slot for the next CQE, or NULL after an overrun. A CQ that ignores
 * overruns takes the next slot without looking at the consumer index.
 */
static struct mlx5_cqe64 *cq_slot(struct emu_cq *cq)
{
	uint32_t ci;

	if (ssq_unlikely(cq->overrun))
		return NULL;
	if (!cq->ignore_overrun) {
		/*
		 * A0: pairs with the poller's ssq_cq_update_ci store (after its
		 * CQE reads): once the device sees index ci, slots below it are
		 * free.
		 */
		ci = be32toh(
		         __atomic_load_n(&cq->dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE)) &
		     0xffffff;
		if (ssq_unlikely(((cq->pi - ci) & 0xffffff) >= cq->cqe_cnt)) {
			cq_overrun(cq);
			return NULL;
		}
	}
	return (struct mlx5_cqe64 *)(cq->buf +
	                             ((size_t)(cq->pi & (cq->cqe_cnt - 1)) << 6));
}

static void cq_publish(struct emu_cq *cq, struct mlx5_cqe64 *cqe, uint8_t opcode,
                       uint8_t fmt)
{
	uint8_t op_own = (uint8_t)(opcode << 4) | fmt | ((cq->pi / cq->cqe_cnt) & 1);

	/* R0: the body stores above become visible before the owner bit. */
	__atomic_store_n(&cqe->op_own, op_own, __ATOMIC_RELEASE);
	cq->pi++;
	if (cq->event_fn)
		emu_cq_event_due(cq);
	emu_cq_arm_written(cq);
	if (ssq_unlikely(cq->dev->trace != NULL))
		emu_trace_cqe(cq, cqe);
}

/*
 * A successful CQE: everything but op_own, then op_own. @scat (@byte_cnt
 * <= 32 bytes, or NULL): a payload scattered to the CQE, in its first 32
 * bytes, flagged MLX5_INLINE_SCATTER_32 in op_own's format bits, where
 * libmlx5's handle_responder finds it (providers/mlx5/cq.c: it hands the
 * CQE itself to mlx5_copy_to_recv_wqe for SCATTER_32).
 */
static int cqe_good(struct emu_cq *cq, uint8_t opcode, uint32_t sop_drop_qpn,
                    uint16_t wqe_counter, uint32_t byte_cnt, __be32 imm,
                    const uint8_t *scat)
{
	struct mlx5_cqe64 *cqe = cq_slot(cq);

	if (ssq_unlikely(!cqe))
		return -EOVERFLOW;
	/* Everything but op_own: the poller may be reading op_own now. */
	memset(cqe, 0, offsetof(struct mlx5_cqe64, op_own));
	if (scat)
		memcpy(cqe, scat, byte_cnt);
	cqe->imm_inval_pkey = imm;
	cqe->byte_cnt = htobe32(byte_cnt);
	cqe->sop_drop_qpn = htobe32(sop_drop_qpn);
	cqe->wqe_counter = htobe16(wqe_counter);
	cq_publish(cq, cqe, opcode, scat ? MLX5_INLINE_SCATTER_32 : 0);
	return 0;
}

/*
 * A requester's CQE carries the WQE's opcode in sop_drop_qpn[31:24]:
 * libmlx5 picks the work completion's opcode (and IMM flag) from it and,
 * for RDMA_READ, takes the length from byte_cnt (providers/mlx5/cq.c,
 * handle_good_req; mlx5_ib's handle_good_req in drivers/infiniband/hw/
 * mlx5/cq.c reads the same bits). The extended CQ's read_byte_len returns
 * byte_cnt for any opcode (mlx5_cq_read_wc_byte_len): 8 for atomics.
 */
int emu_cqe_req(struct emu_cq *cq, uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter,
                uint32_t byte_cnt)
{
	return cqe_good(cq, MLX5_CQE_REQ, ((uint32_t)wqe_opcode << 24) | (qpn & 0xffffff),
	                wqe_counter, byte_cnt, 0, NULL);
}

int emu_cqe_resp(struct emu_cq *cq, uint8_t opcode, uint32_t qpn, uint16_t wqe_counter,
                 uint32_t byte_cnt, __be32 imm)
{
	return cqe_good(cq, opcode, qpn & 0xffffff, wqe_counter, byte_cnt, imm, NULL);
}

int emu_cqe_resp_scat(struct emu_cq *cq, uint8_t opcode, uint32_t qpn,
                      uint16_t wqe_counter, uint32_t byte_cnt, __be32 imm,
                      const uint8_t *data)
{
	if (byte_cnt > EMU_SCAT_CQE_MAX)
		return -EINVAL;
	return cqe_good(cq, opcode, qpn & 0xffffff, wqe_counter, byte_cnt, imm, data);
}

int emu_cqe_err(struct emu_cq *cq, uint8_t opcode, uint8_t syndrome, uint8_t vendor,
                uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter)
{
	struct mlx5_cqe64 *cqe = cq_slot(cq);
	struct mlx5_err_cqe *err = (struct mlx5_err_cqe *)cqe;

	if (ssq_unlikely(!cqe))
		return -EOVERFLOW;
	memset(cqe, 0, offsetof(struct mlx5_cqe64, op_own));
	err->vendor_err_synd = vendor;
	err->syndrome = syndrome;
	err->s_wqe_opcode_qpn = htobe32(((uint32_t)wqe_opcode << 24) | (qpn & 0xffffff));
	err->wqe_counter = htobe16(wqe_counter);
	cq_publish(cq, cqe, opcode, 0);
	return 0;
}

_Static_assert(sizeof(struct mlx5_cqe64) == 64, "CQE64 is 64 bytes");
_Static_assert(sizeof(struct mlx5_err_cqe) == 64, "error CQE is 64 bytes");
_Static_assert(offsetof(struct mlx5_cqe64, op_own) == 63, "op_own is the last byte");
_Static_assert(offsetof(struct mlx5_err_cqe, syndrome) == 55, "PRM: syndrome @55");
_Static_assert(offsetof(struct mlx5_cqe64, srqn_uidx) == EMU_SCAT_CQE_MAX,
               "a 32-byte scatter ends where srqn_uidx begins");
