/* SPDX-License-Identifier: MIT */
/*
 * The ConnectX backend's own objects, shared by its two files:
 * backend_mlx5.c (device, queues, events) and backend_mlx5_mem.c (MRs:
 * the data arena's, each buffer's, the clients'). Private to them.
 */
#ifndef SSQ_CTRL_BACKEND_MLX5_PVT_H
#define SSQ_CTRL_BACKEND_MLX5_PVT_H

#include <stdint.h>
#include <sys/types.h>
#include <infiniband/mlx5dv.h>
#include "ctrl/backend/backend.h"
#include "ctrl/proto/msg.h"

#define MAX_QUEUES (2 * SSQ_MAX_QUEUES) /* a loopback queue takes two QPs */

/* A CQ ssqd arms for completion events (rx_arm, tx_arm). */
struct cq_arm {
	struct ibv_cq *cq;
	struct mlx5dv_cq dv; /* the CQ through mlx5dv: what arming it needs */
	uint32_t sn;         /* its arm sequence (libmlx5's arm_sn) */
	int armed;           /* armed, its event not yet taken */
};

struct mlx5_queue {
	struct ibv_qp *qp;
	struct ibv_cq *cq;      /* sends */
	struct ibv_cq *rcq;     /* receives */
	uint32_t cqn, rcqn;     /* theirs, for CQ events */
	struct cq_arm rx, tx;   /* rcq's and cq's arming */
	struct ssqd_bqueue *bq; /* ssqd's handle, for tx_events_take */
	int no_atomics;         /* the device's atomic_cap is IBV_ATOMIC_NONE */
};

struct ssqd_backend {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct shm_arena *arena;
	struct mlx5_queue queues[MAX_QUEUES];
	unsigned nqueues;
	/*
	 * Receive CQs' completion events (rx_arm), non-blocking; NULL when
	 * it could not be made: the receive poller then naps blind.
	 */
	struct ibv_comp_channel *rx_chan;
	/* Send CQs' events (tx_arm), for ssq_wait's sleepers; NULL as above. */
	struct ibv_comp_channel *tx_chan;
	/*
	 * The handles of the per-buffer MRs ssqd holds (reg_buf), which a
	 * client must never hand back as its own (take_client_mr).
	 */
	uint32_t *buf_handles;
	size_t nbuf, capbuf;
};

static inline int buf_held(const struct ssqd_backend *b, uint32_t handle)
{
	size_t i;

	for (i = 0; i < b->nbuf; i++)
		if (b->buf_handles[i] == handle)
			return 1;
	return 0;
}

static inline int inside(const struct shm_arena *a, const void *p, size_t len)
{
	const uint8_t *b = (const uint8_t *)p;

	return b >= a->base && b + len <= a->base + a->len;
}

/* backend_mlx5_mem.c: the ops of the same names (backend.h). */
int mlx5_reg_buf(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                 int remote, void **mrp, uint32_t *key, char *why, size_t whylen);
void mlx5_dereg_buf(struct ssqd_backend *b, void *mrp);
int mlx5_reg_data(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                  int remote, uint32_t *key, char *why, size_t whylen);
int mlx5_reg_client(struct ssqd_backend *b, int kind, int fd, pid_t pid, uint64_t addr,
                    uint64_t len, uint64_t want_iova, int access, void **mrp,
                    uint32_t *lkey, uint32_t *rkey, uint64_t *iova, char *why,
                    size_t whylen);
void mlx5_dereg_client(struct ssqd_backend *b, void *mrp);
int mlx5_verbs_handles(struct ssqd_backend *b, int *cmd_fd, uint32_t *pd_handle);
/*
 * The MR of a reg_client registration; *@bindable 1 when it has
 * IBV_ACCESS_MW_BIND: ssqd registered it so (a file), or the client made
 * it and said it did (SSQ_MEM_VERBS with SSQ_MEM_VERBS_BINDABLE).
 */
struct ibv_mr *mlx5_client_mr_of(void *mrp, int *bindable);
/* backend_mlx5_mw.c: the ops of the same names (backend.h). */
int mlx5_grant_post(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mem, int client,
                    uint64_t iova, uint64_t len, int access, void **mwp, uint32_t *rkey,
                    uint64_t *wr_id, uint64_t *end, char *why, size_t whylen);
void mlx5_revoke(struct ssqd_backend *b, void *mw);

#endif /* SSQ_CTRL_BACKEND_MLX5_PVT_H */
