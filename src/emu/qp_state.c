/* SPDX-License-Identifier: MIT */
/*
 * The RC QP state machine, with the attribute masks the kernel checks
 * (drivers/infiniband/core/verbs.c, qp_state_table and ib_modify_qp_is_ok),
 * so the daemon's one (attr, mask) builder is held to the same rules by the
 * emulator as by ibv_modify_qp on hardware.
 */
#include "emu/emu_pvt.h"

/* The states the emulator models: IBV_QPS_RESET .. IBV_QPS_ERR. */
#define EMU_NSTATES (IBV_QPS_ERR + 1)

struct emu_trans {
	uint8_t valid;
	int req;
	int opt;
};

/*
 * The RC column of the kernel's qp_state_table; SQD and SQE are absent.
 * RESET goes only to RESET or INIT: the kernel's table has no RESET -> ERR
 * entry, so ib_modify_qp_is_ok refuses it (ibv_modify_qp: EINVAL), while
 * every other state may go to RESET or ERR.
 */
static const struct emu_trans trans[EMU_NSTATES][EMU_NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { 1, 0, 0 },
		[IBV_QPS_INIT] = { 1, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0 },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { 1, 0, 0 },
		[IBV_QPS_ERR] = { 1, 0, 0 },
		[IBV_QPS_INIT] = { 1, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
		[IBV_QPS_RTR] = { 1,
				  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				  IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { 1, 0, 0 },
		[IBV_QPS_ERR] = { 1, 0, 0 },
		[IBV_QPS_RTS] = { 1,
				  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				  IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { 1, 0, 0 },
		[IBV_QPS_ERR] = { 1, 0, 0 },
		[IBV_QPS_RTS] = { 1, 0,
				  IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					  IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER },
	},
	[IBV_QPS_SQD] = { { 0 } },
	[IBV_QPS_SQE] = { { 0 } },
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { 1, 0, 0 },
		[IBV_QPS_ERR] = { 1, 0, 0 },
	},
};

#define EMU_QP_ACCESS                                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |     \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* ib_modify_qp_is_ok, for RC. */
static int mask_ok(enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	const struct emu_trans *t;

	if ((unsigned)cur >= EMU_NSTATES || (unsigned)next >= EMU_NSTATES)
		return 0;
	/* The kernel lets CUR_STATE through only from RTR, RTS, SQD, SQE. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return 0;
	t = &trans[cur][next];
	if (!t->valid)
		return 0;
	if ((mask & t->req) != t->req)
		return 0;
	if (mask & ~(t->req | t->opt | IBV_QP_STATE))
		return 0;
	return 1;
}

/* The values a ConnectX (or the kernel before it) would refuse. */
static int values_ok(const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > SSQ_EMU_PORTS))
		return 0;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return 0;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~EMU_QP_ACCESS))
		return 0;
	if ((mask & IBV_QP_AV) &&
	    (a->ah_attr.port_num < 1 || a->ah_attr.port_num > SSQ_EMU_PORTS))
		return 0;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return 0;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return 0;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff)
		return 0;
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff)
		return 0;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return 0;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return 0;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return 0;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return 0;
	return 1;
}

void emu_qp_to_err(struct emu_qp *qp)
{
	emu_wire_qp_state(qp, qp->state, IBV_QPS_ERR);
	qp->state = IBV_QPS_ERR;
	qp->rnr_tries = 0;
	qp->rnr_until_ns = 0;
}

void emu_qp_to_err_event(struct emu_qp *qp, enum ibv_event_type type)
{
	emu_qp_to_err(qp);
	emu_async_post(qp->dev, type, qp->qpn, 0);
}

/*
 * libmlx5 zeroes the doorbell records and restarts its producer counters at
 * 0 when a QP goes to RESET; the device forgets its consumers too, so both
 * sides start again at WQE index 0.
 */
static void qp_reset(struct emu_qp *qp)
{
	__atomic_store_n(&qp->dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->dbrec[MLX5_SND_DBR], 0, __ATOMIC_RELAXED);
	qp->sq_cc = 0;
	qp->last_dbr = 0;
	qp->dbr_bad = 0;
	/* Doorbells of the last life are forgotten: the UAR halves too. */
	qp->db_rung = 0;
	qp->db_last = 0;
	__atomic_store_n((uint64_t *)qp->bf_reg, 0, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(qp->bf_reg + SSQ_EMU_BF_SIZE), 0, __ATOMIC_RELAXED);
	qp->rq_cc = 0;
	qp->rnr_tries = 0;
	qp->rnr_until_ns = 0;
	qp->db_pending = 0;
}

int emu_modify_qp(struct emu_qp *qp, const struct ibv_qp_attr *attr, int attr_mask)
{
	enum ibv_qp_state cur, next;
	int ret = -EINVAL;

	if (!qp || !attr)
		return -EINVAL;
	pthread_mutex_lock(&qp->dev->lock);
	cur = qp->state;
	next = attr_mask & IBV_QP_STATE ? attr->qp_state : cur;
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		goto out;
	if (!mask_ok(cur, next, attr_mask) || !values_ok(attr, attr_mask))
		goto out;

	if (attr_mask & IBV_QP_PORT)
		qp->port = attr->port_num;
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (attr_mask & IBV_QP_PATH_MTU)
		qp->mtu = attr->path_mtu;
	if (attr_mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (attr_mask & IBV_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn;
	if (attr_mask & IBV_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	if (attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IBV_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (attr_mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (attr_mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;

	if (next == IBV_QPS_RESET)
		qp_reset(qp);
	if (next == IBV_QPS_ERR) {
		emu_qp_to_err(qp);
	} else {
		emu_wire_qp_state(qp, cur, next);
		qp->state = next;
	}
	ret = 0;
out:
	pthread_mutex_unlock(&qp->dev->lock);
	return ret;
}
