/* SPDX-License-Identifier: MIT */
/*
 * post_wr.h - verbs work-request lists on a shared queue: ssq_post_wr()
 * takes the struct ibv_send_wr lists ibv_post_send() takes, so an existing
 * verbs sender ports by changing one call. Include <ssq/ssq.h>.
 */
#ifndef SSQ_POST_WR_H
#define SSQ_POST_WR_H

#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <ssq/queue.h>
#include <ssq/wqe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The send flags ssq_post_wr takes: everything else is -EOPNOTSUPP. */
#define SSQ_VERBS_SEND_FLAGS                                                             \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/*
 * ssq_wr_from_verbs - the ssq_wr for verbs work request @v (its sg_list
 * is shared, not copied). Opcodes: RDMA_WRITE(_WITH_IMM), SEND(_WITH_IMM),
 * RDMA_READ, ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, to the MLX5_OPCODE_*
 * the kernel's mlx5_ib_opcode[] (drivers/infiniband/hw/mlx5/wr.c) and
 * libmlx5's post_send (rdma-core providers/mlx5/qp.c) use; flags: SIGNALED,
 * SOLICITED, INLINE, FENCE (libmlx5's: MLX5_WQE_CTRL_FENCE, the
 * small-and-fence mode). Returns 0, -EOPNOTSUPP for any other opcode or
 * flag (LOCAL_INV, BIND_MW, SEND_WITH_INV, TSO, IP_CSUM...), or -EINVAL for
 * a negative num_sge.
 */
SSQ_INLINE int ssq_wr_from_verbs(const struct ibv_send_wr *v, struct ssq_wr *w)
{
	memset(w, 0, sizeof(*w));
	switch (v->opcode) {
	case IBV_WR_RDMA_WRITE:
		w->opcode = MLX5_OPCODE_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		w->opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
		break;
	case IBV_WR_SEND:
		w->opcode = MLX5_OPCODE_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		w->opcode = MLX5_OPCODE_SEND_IMM;
		break;
	case IBV_WR_RDMA_READ:
		w->opcode = MLX5_OPCODE_RDMA_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		w->opcode = MLX5_OPCODE_ATOMIC_CS;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->opcode = MLX5_OPCODE_ATOMIC_FA;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (v->send_flags & ~(unsigned)SSQ_VERBS_SEND_FLAGS)
		return -EOPNOTSUPP;
	if (v->send_flags & IBV_SEND_SIGNALED)
		w->flags |= SSQ_WQE_SIGNALED;
	if (v->send_flags & IBV_SEND_SOLICITED)
		w->flags |= SSQ_WQE_SOLICITED;
	if (v->send_flags & IBV_SEND_FENCE)
		w->flags |= SSQ_WQE_FENCE_SMALL_AND_FENCE;
	w->inline_data = !!(v->send_flags & IBV_SEND_INLINE);
	if (v->num_sge < 0)
		return -EINVAL;
	w->num_sge = (uint32_t)v->num_sge;
	w->sg_list = v->sg_list;
	if (w->opcode == MLX5_OPCODE_SEND_IMM || w->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)
		w->imm = v->imm_data;
	if (w->opcode == MLX5_OPCODE_ATOMIC_CS || w->opcode == MLX5_OPCODE_ATOMIC_FA) {
		w->raddr = v->wr.atomic.remote_addr;
		w->rkey = v->wr.atomic.rkey;
		w->compare_add = v->wr.atomic.compare_add;
		w->swap = v->wr.atomic.swap;
	} else if (w->opcode != MLX5_OPCODE_SEND && w->opcode != MLX5_OPCODE_SEND_IMM) {
		w->raddr = v->wr.rdma.remote_addr;
		w->rkey = v->wr.rdma.rkey;
	}
	return 0;
}

/* @v's WQEBBs on @p's ring, or a negative errno: it is refused. */
SSQ_INLINE int ssq__verbs_wqebbs(const struct ssq_producer *p,
                                 const struct ibv_send_wr *v, struct ssq_wr *w)
{
	enum ssq_wr_fault f;
	unsigned ds;
	int rc = ssq_wr_from_verbs(v, w);

	if (ssq_unlikely(rc))
		return rc;
	f = ssq_wr_check(&p->sq, w, &ds);
	if (ssq_unlikely(f != SSQ_WR_OK))
		return ssq_wr_fault_errno(f);
	/* A reservation is at most half the ring (ssq_reserve). */
	if (ssq_unlikely(SSQ_DS_TO_WQEBBS(ds) > (p->slot_mask + 1) / 2))
		return -ENOSPC;
	return (int)SSQ_DS_TO_WQEBBS(ds);
}

/*
 * Build checked @w at @pi: one gathered entry of a WRITE or READ, the
 * common case, by the one-buffer prep the hot path uses; the rest by
 * ssq_wqe_build. Returns its WQEBBs.
 */
SSQ_INLINE int ssq__build_verbs(const struct ssq_sq *sq, uint32_t pi,
                                const struct ssq_wr *w)
{
	if (w->num_sge == 1 && !w->inline_data &&
	    (w->opcode == MLX5_OPCODE_RDMA_WRITE ||
	     w->opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
	     w->opcode == MLX5_OPCODE_RDMA_READ))
		return ssq__prep_rdma_1sge(sq, pi, w->opcode, w->flags, w->imm,
		                           w->sg_list[0].addr, w->sg_list[0].lkey,
		                           w->sg_list[0].length, w->raddr, w->rkey);
	return ssq_wqe_build(sq, pi, w);
}

/*
 * ssq_post_wr_strerror - the sentence for what ssq_post_wr() returned: for a
 * refused WR (-EOPNOTSUPP, -EINVAL, -E2BIG, -EMSGSIZE, -ENOSPC) what is
 * wrong with *@bad, naming the field and the limit ("wr_id 21:
 * ATOMIC_FA SGE length is 4; atomics are 8 bytes"); for -EAGAIN, -EIO and
 * -ENOTCONN what the queue's state asks of the caller; "ok" for 0. Call it
 * on the error path with the same @p, the *bad ssq_post_wr() set and its
 * return @err, before changing the WR. Writes at most @len bytes into @buf,
 * NUL-terminated (256 hold every sentence), and returns @buf ("" if @buf is
 * NULL or @len 0). Reads @p's geometry only: any thread. Out of line
 * (src/dv/post_wr_strerror.c): the post itself stays as fast.
 */
const char *ssq_post_wr_strerror(const struct ssq_producer *p,
                                 const struct ibv_send_wr *bad, int err, char *buf,
                                 size_t len);

/*
 * ssq_post_wr - post the verbs work-request list @wr, as ibv_post_send()
 * does on a QP of one's own: in list order, each WR's completion (if
 * IBV_SEND_SIGNALED, or if it fails) back through ssq_poll() with its
 * wr_id. One reservation per run of WRs that fits half the ring (a list
 * longer than that takes several) and one ssq_submit - one doorbell - per
 * run.
 * Returns 0, or a negative errno with *@bad (if @bad is not NULL) at the
 * first WR not posted: the WRs before it are posted, it and those after
 * are not, as ibv_post_send. The errno says why:
 *   -EOPNOTSUPP  an opcode or send flag ssq does not build
 *                (ssq_wr_from_verbs)
 *   -EINVAL, -E2BIG, -EMSGSIZE
 *                the WR is refused, as ssq_wqe_build() says
 *   -ENOSPC      the WR needs more than half the ring
 *   -EAGAIN      no room now: poll completions, post again from *@bad
 *   -EIO, -ENOTCONN
 *                as ssq_reserve (the queue in error or restarted, ssqd
 *                gone)
 * ssq_post_wr_strerror(p, *bad, err, buf, len) gives the sentence. Errors
 * are negative, where ibv_post_send's are positive: strerror(-err).
 */
SSQ_INLINE int ssq_post_wr(struct ssq_producer *p, struct ibv_send_wr *wr,
                           struct ibv_send_wr **bad)
{
	const uint64_t half = ((uint64_t)p->slot_mask + 1) / 2;
	struct ibv_send_wr *v, *end;
	struct ssq_wr w;
	uint64_t pos, total;
	int rc = 0, n, posted = 0;

	while (wr) {
		/* A run of WRs that pass, no more than half the ring. */
		for (total = 0, end = wr; end; end = end->next) {
			n = ssq__verbs_wqebbs(p, end, &w);
			if (n < 0) {
				rc = n;
				break;
			}
			if (total + (uint64_t)n > half)
				break;
			total += (uint64_t)n;
		}
		if (total) {
			int r;

			/*
			 * A run after the first: ring what the last run
			 * published, or this reserve may wait for room on our
			 * own unrung WQEs.
			 */
			if (posted)
				ssq_submit(p);
			r = ssq_reserve(p, (unsigned)total, &pos);

			if (r) {
				rc = r;
				end = wr;
				break;
			}
			for (v = wr; v != end; v = v->next) {
				/*
				 * Passed above: translated again and built, which
				 * sizes it; ssq_publish adds the signal the queue
				 * forces at this position.
				 */
				(void)ssq_wr_from_verbs(v, &w);
				n = ssq__build_verbs(&p->sq, (uint32_t)pos, &w);
				r = ssq_publish(p, pos, (unsigned)n, v->wr_id, w.flags);
				if (ssq_unlikely(r)) {
					/*
					 * -EIO: ssqd restarted the queue, the rest
					 * is void; -EINVAL: the WR changed while we
					 * posted it (the caller's list is its own).
					 */
					rc = r;
					end = v;
					break;
				}
				posted = 1;
				pos += (uint64_t)n;
			}
		}
		if (rc)
			break;
		wr = end;
	}
	if (posted)
		ssq_submit(p);
	if (rc && bad)
		*bad = end;
	return rc;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_POST_WR_H */
