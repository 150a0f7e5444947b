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

/* Ranges a ConnectX (or the kernel before it) would refuse. */
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

/*
 * The address vector as mlx5_set_path (drivers/infiniband/hw/mlx5/qp.c)
 * takes it, on port @port (the QP's, as __mlx5_ib_modify_qp passes it): a
 * RoCE address (an Ethernet port: the core's rdma_ah_find_type makes it
 * RDMA_AH_ATTR_TYPE_ROCE) without IB_AH_GRH is -EINVAL; a GRH's sgid_index
 * at or past the port's gid_tbl_len is -EINVAL; an empty entry below it is
 * -ENODATA (rdma_fill_sgid_attr -> rdma_get_gid_attr,
 * drivers/infiniband/core/verbs.c and cache.c).
 */
static int av_check(struct emu_dev *dev, uint8_t port, const struct ibv_ah_attr *ah)
{
	struct ibv_gid_entry e;

	if (dev->link_layer == IBV_LINK_LAYER_ETHERNET && !ah->is_global)
		return -EINVAL;
	if (!ah->is_global)
		return 0;
	return emu_query_gid(dev, port, ah->grh.sgid_index, &e);
}

/* The values a ConnectX (or the kernel before it) would refuse: 0 or -errno. */
static int values_check(struct emu_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	uint8_t port = mask & IBV_QP_PORT ? a->port_num : qp->port;

	if (!values_ok(a, mask))
		return -EINVAL;
	/*
	 * mlx5_ib_modify_qp (validate_rd_atomic in later kernels) refuses
	 * max_rd_atomic above 1 << log_max_ra_res_qp and max_dest_rd_atomic
	 * above 1 << log_max_ra_req_qp: what ibv_query_device reports as
	 * max_qp_init_rd_atom and max_qp_rd_atom (mlx5_ib_query_device).
	 */
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > SSQ_EMU_MAX_QP_INIT_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > SSQ_EMU_MAX_QP_RD_ATOM)
		return -EINVAL;
	/*
	 * A path MTU above the port's active MTU. The kernel does not look
	 * (__mlx5_ib_modify_qp checks only IB_MTU_256..IB_MTU_4096 and writes
	 * it into the QP context); whether the firmware's INIT2RTR refuses
	 * it is not in any source we can read. On a fabric such a QP sends
	 * packets the link drops, which only a retry-exceeded error reports
	 * much later: the emulator refuses it here, where the mistake is.
	 */
	if ((mask & IBV_QP_PATH_MTU) && a->path_mtu > qp->dev->active_mtu)
		return -EINVAL;
	if (mask & IBV_QP_AV)
		return av_check(qp->dev, port, &a->ah_attr);
	return 0;
}

void emu_qp_to_err(struct emu_qp *qp)
{
	emu_wire_qp_state(qp, qp->state, IBV_QPS_ERR);
	qp->state = IBV_QPS_ERR;
	qp->rnr_tries = 0;
	qp->rnr_until_ns = 0;
	/* A message cut short: the flush completes its WQE in error. */
	qp->msg_off = 0;
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
	qp->msg_off = 0;
	qp->db_pending = 0;
	qp->umr_last = 0; /* no UMR before WQE 0 of the next life */
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
	if (!mask_ok(cur, next, attr_mask))
		goto out;
	ret = values_check(qp, attr, attr_mask);
	if (ret)
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
