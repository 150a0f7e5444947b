/* SPDX-License-Identifier: MIT */
/*
 * Address translation, as the NIC's memory translation does it: a QPN to
 * its QP, an lkey or rkey and an IOVA range to host memory through an MR of
 * the right PD with the right access, a WQE's gather or scatter list to host
 * pieces, and the copies between those pieces. Shared by the in-device
 * execution (execute.c) and the wire (wire_req.c, wire_resp.c); it calls
 * nothing else in the device.
 */
#include "emu/emu_pvt.h"

struct emu_qp *emu_qp_by_qpn(struct emu_dev *dev, uint32_t qpn)
{
	uint32_t i = qpn - SSQ_EMU_QPN_BASE;

	return i < SSQ_EMU_MAX_QP ? dev->qps[i] : NULL;
}

/*
 * Key table lookup; NULL unless @key names a live MR or window of @pd: a
 * key of another PD is no key here, as rxe's lookup_mr
 * (drivers/infiniband/sw/rxe/rxe_mr.c) refuses an MR whose PD is not the
 * QP's and a ConnectX checks the mkey context's pd (mlx5_ifc.h,
 * mlx5_ifc_mkc_bits) against the QP's (ssqd --tenants relies on it).
 */
static struct emu_mr *key_get(struct emu_dev *dev, const struct emu_pd *pd, uint32_t key)
{
	struct emu_mr *mr;

	if (ssq_unlikely((key >> 8) >= SSQ_EMU_MAX_MR))
		return NULL;
	mr = dev->mrs[key >> 8];
	if (ssq_unlikely(!mr || mr->key != key || mr->pd != pd))
		return NULL;
	return mr;
}

/* An lkey: an MR's only - a window's key is an R_Key (IB 10.6.7). */
static struct emu_mr *mr_get(struct emu_dev *dev, const struct emu_pd *pd, uint32_t key)
{
	struct emu_mr *mr = key_get(dev, pd, key);

	return mr && mr->type == EMU_KEY_MR ? mr : NULL;
}

/* [@iova, @iova + @len) inside @mr as the piece *@sg: 0, or -1 outside it. */
static int mr_piece(const struct emu_mr *mr, uint64_t iova, uint64_t len,
                    struct emu_sg *sg)
{
	if (ssq_unlikely(iova < mr->iova || len > mr->len ||
	                 iova - mr->iova > mr->len - len))
		return -1;
	sg->p = mr->addr + (iova - mr->iova);
	sg->len = (uint32_t)len;
	sg->fd = mr->fd;
	return 0;
}

int emu_sq_sg(const struct emu_qp *qp, size_t off, unsigned first, unsigned ds, int write,
              struct emu_sg *sg, uint64_t *total)
{
	struct emu_dev *dev = qp->dev;
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;
	unsigned i = first;
	int n = 0;

	*total = 0;
	while (i < ds) {
		const struct mlx5_wqe_data_seg *d =
		    (const struct mlx5_wqe_data_seg *)emu_wqe_seg(qp, off, i);
		uint32_t bc = be32toh(d->byte_count);

		if (bc & MLX5_INLINE_SEG) {
			uint32_t len = bc & ~(uint32_t)MLX5_INLINE_SEG;
			unsigned units =
			    (len + 4 + SSQ_WQE_DS_BYTES - 1) / SSQ_WQE_DS_BYTES;
			size_t start =
			    ((size_t)((const uint8_t *)d - qp->sq.buf) + 4) & (ring - 1);
			size_t room = ring - start;

			/* Inline data into memory the device writes is not a thing. */
			if (write || i + units > ds)
				return -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			if (len) {
				sg[n].p = qp->sq.buf + start;
				sg[n].len = (uint32_t)(len < room ? len : room);
				sg[n].fd = -1;
				if (len > room) {
					n++;
					sg[n].p = qp->sq.buf;
					sg[n].len = (uint32_t)(len - room);
					sg[n].fd = -1;
				}
				n++;
			}
			*total += len;
			i += units;
			continue;
		}
		{
			uint32_t lkey = be32toh(d->lkey);
			uint64_t addr = be64toh(d->addr);
			/* PRM: a byte_count of 0 in a send data segment means 2 GiB
			 * (libmlx5 never posts one: it skips empty SGEs). */
			uint64_t len = bc ? bc : 1ull << 31;
			struct emu_mr *mr = mr_get(dev, qp->pd, lkey);

			if (!mr || (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)) ||
			    mr_piece(mr, addr, len, &sg[n]))
				return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			*total += len;
			n++;
			i++;
		}
	}
	/* IB's largest message is 2^31 bytes. */
	if (*total > 1ull << 31)
		return -MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	return n;
}

int emu_rq_sg(const struct emu_qp *qp, const uint8_t *wqe, unsigned nseg,
              struct emu_sg *sg, uint64_t *cap)
{
	const struct mlx5_wqe_data_seg *d = (const struct mlx5_wqe_data_seg *)wqe;
	unsigned i;
	int n = 0;

	*cap = 0;
	for (i = 0; i < nseg; i++) {
		uint32_t lkey = be32toh(d[i].lkey), len = be32toh(d[i].byte_count);
		struct emu_mr *mr;

		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (!len)
			continue;
		mr = mr_get(qp->dev, qp->pd, lkey);
		if (!mr || !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
		    mr_piece(mr, be64toh(d[i].addr), len, &sg[n]))
			return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		*cap += len;
		n++;
	}
	return n;
}

int emu_remote_sg(struct emu_qp *qp, uint64_t raddr, uint32_t rkey, uint64_t len,
                  int need, struct emu_sg *out)
{
	struct emu_mr *mr = key_get(qp->dev, qp->pd, rkey);

	/*
	 * A window reaches memory only through the QP it is bound to, while
	 * bound (rxe_lookup_mw: type 2 and mw->qp != qp, or not VALID, fails).
	 * Whatever fails here is a peer using a key not given to it: counted
	 * once per request (a QP already in error drops the rest).
	 */
	if (!mr || (mr->type == EMU_KEY_MW && (!mr->bound || mr->qp != qp)) ||
	    (mr->access & need) != need || (qp->access & need) != need ||
	    mr_piece(mr, raddr, len, out)) {
		if (qp->state != IBV_QPS_ERR)
			qp->access_errors++;
		return -1;
	}
	return 0;
}

/* Step *@sg / *@at past @off bytes of a scatter/gather list. */
static void sg_skip(const struct emu_sg **sg, uint32_t *at, uint64_t off)
{
	while (off >= (*sg)->len) {
		off -= (*sg)->len;
		(*sg)++;
	}
	*at = (uint32_t)off;
}

int emu_sg_copy_at(const struct emu_sg *dst, const struct emu_sg *src, uint64_t off,
                   uint64_t total)
{
	uint32_t so = 0, doff = 0;
	int rc;

	if (!total)
		return 0;
	sg_skip(&src, &so, off);
	sg_skip(&dst, &doff, off);
	while (total) {
		uint32_t n = src->len - so;

		if (dst->len - doff < n)
			n = dst->len - doff;
		if (n > total)
			n = (uint32_t)total;
		rc = emu_piece_move(dst, doff, src, so, n);
		if (rc)
			return rc;
		total -= n;
		so += n;
		doff += n;
		if (so == src->len) {
			src++;
			so = 0;
		}
		if (doff == dst->len) {
			dst++;
			doff = 0;
		}
	}
	return 0;
}

int emu_sg_copy(const struct emu_sg *dst, const struct emu_sg *src, uint64_t total)
{
	return emu_sg_copy_at(dst, src, 0, total);
}

/* The one walk of a scatter/gather list: from @off on, @len bytes. 0 or -EFAULT. */
static int sg_walk(const struct emu_sg *sg, uint64_t off, uint8_t *out, const uint8_t *in,
                   uint32_t len)
{
	while (off >= sg->len) {
		off -= sg->len;
		sg++;
	}
	while (len) {
		uint32_t n = sg->len - (uint32_t)off;

		if (n > len)
			n = len;
		if (in) {
			if (emu_piece_write(sg, off, in, n))
				return -EFAULT;
			in += n;
		} else {
			if (emu_piece_read(sg, off, out, n))
				return -EFAULT;
			out += n;
		}
		len -= n;
		off = 0;
		sg++;
	}
	return 0;
}

int emu_sg_scatter(const struct emu_sg *sg, uint64_t off, const uint8_t *src,
                   uint32_t len)
{
	return sg_walk(sg, off, NULL, src, len);
}

int emu_sg_gather(uint8_t *dst, const struct emu_sg *sg, uint64_t off, uint32_t len)
{
	return sg_walk(sg, off, dst, NULL, len);
}
