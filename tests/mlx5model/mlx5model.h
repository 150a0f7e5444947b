/* SPDX-License-Identifier: MIT */
/*
 * mlx5model - a TEST DOUBLE of libibverbs + libmlx5 44 over mlx5_ib, whose
 * queues the emulated device (src/emu) executes. It is not hardware and
 * never pretends to be: it is built only with the tests, never installed,
 * and does nothing unless both
 *	LD_PRELOAD=.../libssq_mlx5model.so   and   SSQ_MLX5MODEL=1
 * are set; then every ibv_* / mlx5dv_* entry point ssq calls resolves here
 * instead of the real libibverbs / libmlx5 (an unversioned definition in a
 * preloaded object wins over ibv_open_device@IBVERBS_1.1 and friends), and
 * opening a device prints
 *	mlx5model: <name> is a software model of a ConnectX (libmlx5 44 +
 *	mlx5_ib), not hardware
 * on stderr. Without SSQ_MLX5MODEL=1 each entry point hands over to the
 * real library (dlsym RTLD_NEXT).
 *
 * Why: ssqd's ConnectX backend (src/ctrl/backend/backend_mlx5.c) and the
 * client's verbs path (client_mem.c, the UAR mmap in client.c) run
 * unchanged on it in CI, through the calls where a ConnectX differs from
 * what ssq would like (docs/hardware.md lists every behaviour copied and
 * its source): device names as rdma-core's udev rule gives them, buffers
 * through the context's allocator hook with libmlx5's sizes, CQ resize as
 * device and libmlx5 do it, arming through the CQ UAR doorbell, UAR pages
 * behind the command fd, imported PDs and MRs across processes with the
 * kernel's ownership rules. Every behaviour names the rdma-core v44 or
 * kernel function it copies beside it; what could not be checked is
 * refused (stricter than hardware), never accepted.
 *
 * Files, one job each: device.c (list, names, open, queries), uar.c (the
 * command fd: UAR pages, doorbell-record pages, buffers, the thread that
 * takes CQ arms from the UAR and async events from the device), pd_mr.c
 * (PDs, MRs and the "kernel" object table), cq.c (CQs, resize, channels,
 * events), qp.c (QPs, modify, mlx5dv_init_obj, async events), uverbs.c
 * (import across processes: the owner's service thread and the
 * importer's calls), wire.c (two processes' devices over the emulated
 * wire).
 */
#ifndef SSQ_MLX5MODEL_H
#define SSQ_MLX5MODEL_H

#include <dlfcn.h>
#include <stdio.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include "emu/emu.h"

#define MM_EXPORT __attribute__((visibility("default")))

/* 1 when SSQ_MLX5MODEL=1: the model answers; else the real libraries do. */
int mm_on(void);

/* SSQ_MLX5MODEL_TRACE=1: one line on stderr per arm taken and event handed out. */
int mm_trace_on(void);
#define mm_trace(...)                                                                    \
	do {                                                                             \
		if (mm_trace_on())                                                       \
			fprintf(stderr, "mlx5model: " __VA_ARGS__);                      \
	} while (0)

/*
 * Hand the call to the real library when the model is off: the same
 * symbol, next in lookup order after this preloaded object.
 */
#define MM_FORWARD(ret_type, name, params, args)                                         \
	do {                                                                             \
		if (!mm_on()) {                                                          \
			static ret_type(*real_) params;                                  \
			if (!real_)                                                      \
				real_ = (ret_type(*) params)dlsym(RTLD_NEXT, #name);     \
			if (!real_) {                                                    \
				errno = ENOSYS;                                          \
				return (ret_type)0;                                      \
			}                                                                \
			return real_ args;                                               \
		}                                                                        \
	} while (0)

/* Limits of one context; the device's own are emu's (emu.h). */
enum {
	MM_MAX_UAR = 1 + 2 * 1024 + 1024, /* page 0 unused; one per CQ and per QP */
	MM_MAX_HANDLES = 16384,           /* uverbs object ids of one context */
	MM_MAX_CQ = 1024,
	MM_MAX_QP = 1024,
	MM_ASYNC_RING = 256,
	MM_PAGE = 4096, /* libmlx5's dev->page_size on x86-64 */
	/* Where the model's own header sits in the command fd: past any UAR. */
	MM_HDR_OFF = 0x40000000,
	MM_MAGIC = 0x6d6c7835, /* "mlx5" */
	/* libmlx5's cache_line_size: doorbell records are this far apart. */
	MM_DBREC_STRIDE = 64,
};

/*
 * What the CQ UAR's doorbell holds while no store waits: reserved bits of
 * the arm word set, so no mlx5_arm_cq store is ever this.
 */
#define MM_NO_STORE UINT64_MAX

/* A device the model lists: name and link layer. */
struct mm_desc {
	struct ibv_device ibdev;
	uint8_t link_layer; /* IBV_LINK_LAYER_* */
	uint64_t guid;      /* node GUID, host order */
	int index;
};

/* Read by an importer from the command fd at MM_HDR_OFF. */
struct mm_hdr {
	uint32_t magic;
	uint32_t desc_index;
	pid_t owner;
	char sock[64]; /* the owner's uverbs service, abstract unix socket */
};

enum mm_obj_type {
	MM_OBJ_FREE = 0,
	MM_OBJ_PD,
	MM_OBJ_MR,
	MM_OBJ_CQ,
	MM_OBJ_QP,
	MM_OBJ_MW
};

/* The kernel's side of an MR (ib_mr + ib_umem): in the owner process. */
struct mm_kmr {
	struct emu_mr *emr;
	uint32_t pd_handle;
	uint64_t addr, len, iova;
	int access;
	uint32_t key;
	int fd;         /* a client's /proc/PID/mem, or -1 */
	pid_t pid;      /* the registering process (its pinned_vm) */
	uint64_t pages; /* pinned 4 KiB pages charged to it */
};

struct mm_obj {
	enum mm_obj_type type;
	void *p; /* struct mm_pd (owner's), struct mm_kmr, struct mm_cq, struct mm_qp */
};

struct mm_pinned {
	pid_t pid;
	uint64_t pages;
};

struct mm_cq;
struct mm_qp;

struct mm_ctx {
	struct verbs_context vctx; /* ibv_context last inside it, as libibverbs */
	struct mm_desc *desc;
	int imported;
	struct emu_dev *dev; /* owner only */
	pthread_mutex_t lock;
	struct mlx5dv_ctx_allocators al; /* MLX5DV_CTX_ATTR_BUF_ALLOCATORS */
	int has_al;
	/* The command fd's UAR pages, mapped here; page 0 is the CQ UAR. */
	uint8_t *uar;
	unsigned uar_used[MM_MAX_UAR];
	/* Doorbell records: one page at a time, 64-byte slots (dbrec.c). */
	uint8_t *dbr_page;
	unsigned dbr_next;
	/* The "kernel" objects of this ufile, by id (owner only). */
	struct mm_obj objs[MM_MAX_HANDLES];
	struct mm_pinned pinned[64];
	struct mm_cq *cqs[MM_MAX_CQ]; /* by cqn */
	struct mm_qp *qps[MM_MAX_QP];
	/* Async events taken from the device, read by ibv_get_async_event. */
	struct emu_async_event async_ring[MM_ASYNC_RING];
	unsigned async_head, async_tail;
	/* The thread watching the CQ UAR and the device's async events. */
	pthread_t watcher;
	int watcher_on;
	int stop;
	/* The uverbs service (owner) or the connection to it (importer). */
	int srv_fd;
	int srv_wake[2];
	pthread_t srv;
	int srv_on;
	int conn_fd;
	pthread_mutex_t conn_lock;
	char sock[64];
	uint16_t wire_port; /* this device's UDP wire (wire.c) */
};

struct mm_pd {
	struct ibv_pd pd;
	struct emu_pd *epd; /* owner's; NULL in an importer */
};

struct mm_mr {
	struct ibv_mr mr;
};

struct mm_cq {
	struct ibv_cq_ex cq; /* ibv_cq's fields first, as ibv_cq_ex_to_cq needs */
	struct emu_cq *ecq;
	struct mlx5dv_cq dv;
	uint32_t cons_index; /* libmlx5's mlx5_cq.cons_index */
	uint32_t last_arm;   /* the arm doorbell record last taken */
	unsigned uar_index;  /* its UAR page (cq_uar) in the command fd */
	int armed;           /* an emu_cq_arm whose event was not handed out */
	uint32_t armed_sn;   /* libmlx5's arm_sn: bumped per event (mlx5_cq_event) */
	uint32_t events_got; /* events ibv_get_cq_event handed out */
	int dv_owned;        /* mlx5dv_init_obj was called: MLX5_CQ_FLAGS_DV_OWNED */
};

struct mm_qp {
	struct ibv_qp qp;
	struct emu_qp *eqp;
	struct mlx5dv_qp dv;
	unsigned uar_index;
	int scatter_to_cqe; /* responder scatter-to-CQE (MLX5_QP_FLAG_SCATTER_CQE) */
};

static inline struct mm_ctx *mm_ctx(struct ibv_context *c)
{
	return (struct mm_ctx *)((uint8_t *)c -
	                         __builtin_offsetof(struct mm_ctx, vctx.context));
}

/* errno = @rc (positive), return NULL: libibverbs' convention. */
static inline void *mm_fail(int rc)
{
	errno = rc;
	return NULL;
}

/* device.c */
struct mm_desc *mm_desc_of(struct ibv_device *d);

/* uar.c */
int mm_cmd_fd_init(struct mm_ctx *c);
void mm_cmd_fd_fini(struct mm_ctx *c);
int mm_uar_alloc(struct mm_ctx *c);
void mm_uar_free(struct mm_ctx *c, unsigned index);
void *mm_buf_alloc(struct mm_ctx *c, size_t size);
void mm_buf_free(struct mm_ctx *c, void *p);
__be32 *mm_dbrec_alloc(struct mm_ctx *c);
int mm_watcher_start(struct mm_ctx *c);
void mm_watcher_stop(struct mm_ctx *c);
void mm_arm_taken(struct mm_ctx *c, struct mm_cq *cq, uint32_t word);

/* pd_mr.c: the kernel's object table, owner side (lock held by callers) */
int mm_handle_alloc(struct mm_ctx *c, enum mm_obj_type t, void *p);
void mm_handle_free(struct mm_ctx *c, uint32_t h);
void *mm_handle_get(struct mm_ctx *c, uint32_t h, enum mm_obj_type t);
int mm_k_reg_mr(struct mm_ctx *c, uint32_t pd_handle, uint64_t addr, uint64_t len,
                uint64_t iova, int access, int fd, pid_t pid, uint64_t memlock,
                int cap_ipc_lock, uint32_t *handle, uint32_t *key);
int mm_k_dereg_mr(struct mm_ctx *c, uint32_t handle);
int mm_k_query_mr(struct mm_ctx *c, uint32_t handle, uint32_t pd_handle, uint64_t *len,
                  uint32_t *key);
int mm_k_query_pd(struct mm_ctx *c, uint32_t handle);
void mm_k_fini(struct mm_ctx *c);

/* mw.c: the context's alloc_mw / dealloc_mw; windows freed at close. */
void mm_mw_ops(struct ibv_context *ctx);
void mm_mw_fini(struct mm_ctx *c);

/* uverbs.c: the service in the owner, calls from an importer */
int mm_srv_start(struct mm_ctx *c);
void mm_srv_stop(struct mm_ctx *c);
enum mm_op { MM_OP_QUERY_PD = 1, MM_OP_REG_MR, MM_OP_DEREG_MR, MM_OP_QUERY_MR };
int mm_call(struct mm_ctx *c, enum mm_op op, const uint64_t in[6], int fd,
            uint64_t out[4]);

/* wire.c */
int mm_wire_open(struct mm_ctx *c);
void mm_gid_fix(struct mm_ctx *c, struct ibv_gid_entry *e);

#endif
