/* SPDX-License-Identifier: MIT */
/*
 * ssq/rq_pvt.h - internals of <ssq/rq.h>'s inline receive posts.
 * Do not include directly: include <ssq/rq.h> (or <ssq/ssq.h>). It is
 * installed because the inline API needs it; nothing here is API.
 */
#ifndef SSQ_RQ_PVT_H
#define SSQ_RQ_PVT_H

#ifndef SSQ_RQ_H
#error "include <ssq/rq.h>, not <ssq/rq_pvt.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write @num_sge data segments at @scat (room for @max), skipping empty
 * ones, then the invalid-lkey terminator if room remains.
 */
SSQ_INLINE void ssq__set_scatter(struct mlx5_wqe_data_seg *scat, uint32_t max,
                                 const struct ibv_sge *sg, uint32_t num_sge)
{
	uint32_t i, j = 0;

	for (i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		scat[j].byte_count = htobe32(sg[i].length);
		scat[j].lkey = htobe32(sg[i].lkey);
		scat[j].addr = htobe64(sg[i].addr);
		j++;
	}
	if (j < max) {
		scat[j].byte_count = 0;
		scat[j].lkey = htobe32(MLX5_INVALID_LKEY);
		scat[j].addr = 0;
	}
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_RQ_PVT_H */
