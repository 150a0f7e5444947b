/* SPDX-License-Identifier: MIT */
/*
 * The sentence behind an ssq_post_wr() error: what was wrong with the WR
 * *bad points at, or what the queue's state asks the caller to do.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/ssq.h>

static const char *verbs_opcode_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return "IBV_WR_RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "IBV_WR_RDMA_WRITE_WITH_IMM";
	case IBV_WR_SEND:
		return "IBV_WR_SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "IBV_WR_SEND_WITH_IMM";
	case IBV_WR_RDMA_READ:
		return "IBV_WR_RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "IBV_WR_ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "IBV_WR_ATOMIC_FETCH_AND_ADD";
	case IBV_WR_LOCAL_INV:
		return "IBV_WR_LOCAL_INV";
	case IBV_WR_BIND_MW:
		return "IBV_WR_BIND_MW";
	case IBV_WR_SEND_WITH_INV:
		return "IBV_WR_SEND_WITH_INV";
	case IBV_WR_TSO:
		return "IBV_WR_TSO";
	default:
		return "opcode";
	}
}

/* The sentence for a WR ssq_wr_from_verbs() or ssq_wr_check() refused. */
static void refused_wr(const struct ssq_producer *p, const struct ibv_send_wr *v,
                       char *buf, size_t len)
{
	struct ssq_wr w;
	unsigned ds = 0;
	int n = snprintf(buf, len, "wr_id %llu: ", (unsigned long long)v->wr_id);
	/* A prefix that filled @buf leaves the rest out, NUL-terminated. */
	size_t at = n > 0 && (size_t)n < len ? (size_t)n : len - 1;

	if (ssq_wr_from_verbs(v, &w) == -EOPNOTSUPP) {
		struct ibv_send_wr plain = *v;

		/* Refused for its flags alone, or for its opcode? */
		plain.send_flags &= (unsigned)SSQ_VERBS_SEND_FLAGS;
		if (ssq_wr_from_verbs(&plain, &w) != -EOPNOTSUPP)
			snprintf(
			    buf + at, len - at,
			    "send_flags 0x%x: ssq_post_wr takes only IBV_SEND_FENCE, "
			    "_SIGNALED, _SOLICITED and _INLINE",
			    v->send_flags);
		else
			snprintf(
			    buf + at, len - at,
			    "%s (%d) is not an opcode ssq builds (RDMA_WRITE(_WITH_IMM), "
			    "SEND(_WITH_IMM), RDMA_READ, ATOMIC_CMP_AND_SWP, "
			    "ATOMIC_FETCH_AND_ADD)",
			    verbs_opcode_name(v->opcode), (int)v->opcode);
		return;
	}
	if (v->num_sge < 0) {
		snprintf(buf + at, len - at, "num_sge %d is negative", v->num_sge);
		return;
	}
	if (ssq_wr_check(&p->sq, &w, &ds) != SSQ_WR_OK) {
		ssq_wr_strerror(&p->sq, &w, buf + at, len - at);
		return;
	}
	snprintf(
	    buf + at, len - at,
	    "the WR takes %u WQEBBs, more than half the ring's %u (one reservation's "
	    "most)",
	    SSQ_DS_TO_WQEBBS(ds), p->slot_mask + 1);
}

const char *ssq_post_wr_strerror(const struct ssq_producer *p,
                                 const struct ibv_send_wr *bad, int err, char *buf,
                                 size_t len)
{
	if (!buf || !len)
		return "";
	switch (err) {
	case 0:
		snprintf(buf, len, "ok");
		break;
	case -EOPNOTSUPP:
	case -EINVAL:
	case -E2BIG:
	case -EMSGSIZE:
	case -ENOSPC:
		if (p && bad)
			refused_wr(p, bad, buf, len);
		else
			snprintf(buf, len, "the WR *bad points at is refused (%s)",
			         strerror(-err));
		break;
	case -EAGAIN:
		snprintf(
		    buf, len,
		    "the queue has no room now: take completions (ssq_poll) and post "
		    "again from *bad");
		break;
	case -EIO:
		snprintf(
		    buf, len,
		    "the queue is in error after a failed request (its completion says "
		    "which): ssq_queue_recover(), then post again from *bad");
		break;
	case -ENOTCONN:
		snprintf(buf, len,
		         "ssqd is gone (this process's connection to it hung up): "
		         "ssq_client_connect() again once it is back");
		break;
	default:
		snprintf(buf, len, "%s",
		         err < 0 ? strerror(-err) : "not an ssq_post_wr() return");
		break;
	}
	return buf;
}
