/* SPDX-License-Identifier: MIT */
/* Turn a refused work request into a sentence that names the bad field. */
#include <stdio.h>
#include <ssq/ssq.h>

const char *ssq_wr_strerror(const struct ssq_sq *sq, const struct ssq_wr *wr, char *buf,
                            size_t len)
{
	unsigned ds = 0;
	uint64_t total = 0;
	uint32_t i;

	switch (ssq_wr_check(sq, wr, &ds)) {
	case SSQ_WR_OK:
		snprintf(buf, len, "ok");
		break;
	case SSQ_WR_BAD_OPCODE:
		snprintf(buf, len,
		         "opcode 0x%02x is not an RC send opcode ssq builds (NOP, SEND, "
		         "SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, "
		         "ATOMIC_FA)",
		         wr->opcode);
		break;
	case SSQ_WR_BAD_FLAGS:
		snprintf(buf, len,
		         "flags 0x%02x: only SSQ_WQE_SIGNALED, SSQ_WQE_SOLICITED and one "
		         "fence mode 0..4 (bits 7..5) are allowed",
		         wr->flags);
		break;
	case SSQ_WR_NULL_SG_LIST:
		snprintf(buf, len, "num_sge %u with a NULL sg_list", wr->num_sge);
		break;
	case SSQ_WR_TOO_MANY_SGE:
		snprintf(buf, len, "num_sge %u exceeds the QP's max_send_sge %u",
		         wr->num_sge, sq->max_sge);
		break;
	case SSQ_WR_INLINE_TOO_LONG:
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		snprintf(buf, len,
		         "inline data of %llu bytes exceeds the QP's max_inline_data %u",
		         (unsigned long long)total, sq->max_inline);
		break;
	case SSQ_WR_INLINE_NOT_ALLOWED:
		snprintf(buf, len, "inline_data is not allowed for %s: it returns data",
		         ssq_opcode_name(wr->opcode));
		break;
	case SSQ_WR_NOP_WITH_DATA:
		snprintf(buf, len, "a NOP carries no data (num_sge %u, inline_data %u)",
		         wr->num_sge, wr->inline_data);
		break;
	case SSQ_WR_ATOMIC_NOT_ONE_SGE:
		snprintf(buf, len,
		         "%s needs exactly one SGE for the returned value, got %u",
		         ssq_opcode_name(wr->opcode), wr->num_sge);
		break;
	case SSQ_WR_ATOMIC_BAD_LENGTH:
		snprintf(buf, len, "%s SGE length is %u; atomics are 8 bytes",
		         ssq_opcode_name(wr->opcode), wr->sg_list[0].length);
		break;
	case SSQ_WR_ATOMIC_UNALIGNED:
		snprintf(buf, len, "%s raddr 0x%llx is not 8-byte aligned",
		         ssq_opcode_name(wr->opcode), (unsigned long long)wr->raddr);
		break;
	case SSQ_WR_LARGER_THAN_RING:
		snprintf(buf, len, "the WQE needs more WQEBBs than the ring's %u",
		         sq->wqe_cnt);
		break;
	default:
		snprintf(buf, len, "unknown fault");
		break;
	}
	return buf;
}
