/* SPDX-License-Identifier: MIT */
/* One signaled work request, filled as the tests post it (tlib.h). */
#include <string.h>
#include "tlib.h"

void t_wr_one(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
              uint64_t id, uint64_t raddr, uint32_t rkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = op;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = rkey;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
	}
}
