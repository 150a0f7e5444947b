/* SPDX-License-Identifier: MIT */
/*
 * RC QP bring-up, shared by the mlx5 and the emulated backend: the same
 * attributes and masks go to ibv_modify_qp and to emu_modify_qp, so the
 * emulator's mask checks test exactly what a ConnectX will be sent.
 */
#include <stdio.h>
#include <string.h>
#include "ctrl/backend/backend.h"

void ssqd_qp_attr_reset(struct ibv_qp_attr *attr, int *mask)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IBV_QPS_RESET;
	*mask = IBV_QP_STATE;
}

/* RESET -> INIT: the kernel requires PKEY_INDEX, PORT and ACCESS_FLAGS. */
void ssqd_qp_attr_init(struct ibv_qp_attr *attr, int *mask, uint8_t port)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IBV_QPS_INIT;
	attr->pkey_index = 0;
	attr->port_num = port;
	attr->qp_access_flags = SSQD_ACCESS_ALL;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

/*
 * INIT -> RTR: the path to the peer (AV), MTU, the peer's QPN and first
 * PSN, how many READs/atomics the peer may have outstanding here, and the
 * RNR NAK timer. With a GRH (every RoCE address, as mlx5_set_path wants;
 * InfiniBand across subnets) the hop limit is SSQD_GRH_HOP_LIMIT, so a
 * routed RoCE v2 path works.
 */
void ssqd_qp_attr_rtr(struct ibv_qp_attr *attr, int *mask, uint8_t port,
                      const struct ssqd_qp_remote *remote)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IBV_QPS_RTR;
	attr->path_mtu = remote->mtu;
	attr->dest_qp_num = remote->qpn;
	attr->rq_psn = remote->psn;
	attr->max_dest_rd_atomic = remote->max_dest_rd_atomic;
	attr->min_rnr_timer = 12; /* 0.64 ms, rc_pingpong's value */
	attr->ah_attr.is_global = 0;
	attr->ah_attr.dlid = remote->lid;
	attr->ah_attr.sl = 0;
	attr->ah_attr.src_path_bits = 0;
	attr->ah_attr.port_num = port;
	if (remote->sgid_index >= 0) {
		attr->ah_attr.is_global = 1;
		attr->ah_attr.grh.hop_limit = SSQD_GRH_HOP_LIMIT;
		memcpy(attr->ah_attr.grh.dgid.raw, remote->gid, 16);
		attr->ah_attr.grh.sgid_index = (uint8_t)remote->sgid_index;
	}
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

/*
 * RTR -> RTS: the local ACK timeout @timeout (4.096 us * 2^timeout, 0 for
 * none: ibv_modify_qp(3) of rdma-core, libibverbs/man/ibv_modify_qp.3;
 * ssqd --qp-timeout, 14 = 67 ms by default, perftest's DEF_QP_TIME),
 * retry counts (7 for RNR means forever), our first PSN, outstanding
 * READs/atomics we issue.
 */
void ssqd_qp_attr_rts(struct ibv_qp_attr *attr, int *mask, uint32_t sq_psn,
                      uint8_t max_rd_atomic, uint8_t timeout)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = IBV_QPS_RTS;
	attr->timeout = timeout;
	attr->retry_cnt = 7;
	attr->rnr_retry = 7;
	attr->sq_psn = sq_psn;
	attr->max_rd_atomic = max_rd_atomic;
	*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
}

int ssqd_qp_connect(const struct ssqd_backend_ops *ops, struct ssqd_backend *b,
                    struct ssqd_bqueue *q, uint32_t sq_psn,
                    const struct ssqd_qp_remote *remote, char *why, size_t whylen)
{
	struct ibv_qp_attr attr;
	int mask, rc;

	ssqd_qp_attr_init(&attr, &mask, q->port);
	rc = ops->modify_qp(b, q, &attr, mask);
	if (rc) {
		snprintf(why, whylen, "QP 0x%x RESET->INIT: %s", q->qpn, strerror(-rc));
		return rc;
	}
	ssqd_qp_attr_rtr(&attr, &mask, q->port, remote);
	rc = ops->modify_qp(b, q, &attr, mask);
	if (rc) {
		char grh[48];

		if (remote->sgid_index >= 0)
			snprintf(grh, sizeof(grh), "a GRH from GID index %d",
			         remote->sgid_index);
		else
			snprintf(grh, sizeof(grh), "no GRH (an Ethernet port needs one)");
		snprintf(why, whylen,
		         "QP 0x%x INIT->RTR (to QPN 0x%x; path MTU %u, %s, responder "
		         "depth %u): %s",
		         q->qpn, remote->qpn, 128u << remote->mtu, grh,
		         remote->max_dest_rd_atomic, strerror(-rc));
		return rc;
	}
	ssqd_qp_attr_rts(&attr, &mask, sq_psn, remote->max_rd_atomic, remote->timeout);
	rc = ops->modify_qp(b, q, &attr, mask);
	if (rc) {
		snprintf(why, whylen, "QP 0x%x RTR->RTS (initiator depth %u): %s", q->qpn,
		         remote->max_rd_atomic, strerror(-rc));
		return rc;
	}
	return 0;
}
