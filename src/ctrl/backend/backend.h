/* SPDX-License-Identifier: MIT */
/*
 * What ssqd needs from a device, behind one interface with two
 * implementations: backend_mlx5.c (libibverbs + mlx5dv on a ConnectX) and
 * backend_emu.c (ssq's emulated device). Both hand back the same struct
 * mlx5dv_qp / struct mlx5dv_cq, with every buffer inside the arena, so the
 * rest of ssqd and every client are the same code on both.
 *
 * All calls return 0 or a negative errno and, on error, a sentence in @why.
 * ssqd calls them from its one control thread.
 */
#ifndef SSQ_CTRL_BACKEND_H
#define SSQ_CTRL_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/mlx5dv.h>
#include "shm/create/arena.h"

struct ssqd_backend;
struct ssq_producer;

/*
 * One RC QP as a backend created it, with two CQs: sends complete into
 * dv_cq (the shared queue routes it), receives into dv_rcq (ssqd's receive
 * poller polls it), so neither ever finds the other's CQEs.
 */
struct ssqd_bqueue {
	struct mlx5dv_qp dv_qp;  /* sq.buf, rq.buf, dbrec, bf.reg in the arena / UAR */
	struct mlx5dv_cq dv_cq;  /* send CQ: buf, dbrec inside the arena */
	struct mlx5dv_cq dv_rcq; /* receive CQ: buf, dbrec inside the arena */
	uint32_t qpn;
	uint32_t max_inline;
	uint32_t max_sge;
	uint8_t port;
	void *impl; /* the backend's QP/CQ handles */
	/*
	 * ssqd's own producer record on this QP's shared ring (its
	 * reservations are every client's), for WQEs ssqd posts itself: a
	 * window's bind (grant). NULL: a QP no shared ring is made for (a
	 * loopback queue's other end).
	 */
	struct ssq_producer *prod;
};

/*
 * What ssqd asks of a queue's send queue, as struct ibv_qp_cap and
 * ibv_qp_init_attr_ex.send_ops_flags say it. libmlx5 sizes the ring from
 * all of it (providers/mlx5/verbs.c, mlx5_calc_sq_size): the WQE is the
 * largest fixed part of the ops named plus the larger of max_send_sge data
 * segments and the inline segment, the ring max_send_wr such WQEs rounded
 * up to a power of two. The device's answer - dv_qp.sq.wqe_cnt,
 * max_inline - is what everything downstream is sized from.
 */
struct ssqd_sq_request {
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t max_inline_data;
	/*
	 * IBV_QP_EX_WITH_*: the ops WQEs will be built for. 0 names none, as
	 * ibv_create_qp does: libmlx5 then reserves room for BIND_MW and
	 * LOCAL_INV too (192 bytes of each WQE).
	 */
	uint64_t send_ops;
};

/*
 * The ops ssq's WQE builder emits (include/ssq/wqe.h: SEND, SEND_IMM,
 * RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA; its NOP
 * is a bare control segment and needs no room of its own).
 */
#define SSQD_SEND_OPS                                                                    \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                            \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                  \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
/* All the access a shared queue's peers use (WRITE, READ, atomics): QPs, data MRs. */
#define SSQD_ACCESS_ALL                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |     \
	 IBV_ACCESS_REMOTE_ATOMIC)

#define SSQD_SEND_ATOMIC_OPS                                                             \
	(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/*
 * ssqd_sq_predict - the dv_qp.sq.wqe_cnt libmlx5 44 will make of @sq
 * (sq_predict.c: mlx5_calc_send_wqe, mlx5_calc_sq_size), before any QP
 * exists, so the send CQ can be made at its final size. 0 (no SQ) for no
 * WRs. Returns 0, or -EINVAL where libmlx5 refuses whatever the device.
 *
 * ssqd_sq_clamp - the same, halving @sq->max_send_wr until the ring fits
 * @max_wqebb WQEBBs (the device's max_qp_wr, which mlx5_ib_query_device
 * and mlx5_ib_alloc_ucontext both take from log_max_qp_sz, libmlx5's
 * max_send_wqebb): --sq-size past the device's limit gives the largest
 * ring it takes, not an EINVAL at start-up. -EINVAL if not even one WR fits.
 */
int ssqd_sq_predict(const struct ssqd_sq_request *sq, uint32_t *wqe_cnt);
int ssqd_sq_clamp(struct ssqd_sq_request *sq, uint32_t max_wqebb, uint32_t *wqe_cnt);

/*
 * CQEs of the send CQ in front of an SQ of @wqe_cnt WQEBBs, at least
 * @cqes: each WR outstanding takes at least one WQEBB and gives at most one
 * CQE (an error flushes every outstanding WR with its own, signaled or
 * not), and the router frees a CQE's slot (the consumer-index record)
 * before the WQEBBs behind it (`completed`), so at most @wqe_cnt CQEs are
 * ever unconsumed. Plus the slot libmlx5 adds to every CQ (mlx5_create_cq:
 * align_queue_size(cqe + 1)) as slack for the router: twice the ring.
 */
static inline uint32_t shm_scq_cqes(uint32_t wqe_cnt, uint32_t cqes)
{
	uint32_t need = 2 * wqe_cnt;

	return cqes > need ? cqes : need;
}

/* Where a client maps the UAR page of a queue from. */
struct shm_uar_map {
	int fd;           /* device command fd (mlx5) or the UAR memfd (emu) */
	off_t offset;     /* page-aligned offset to mmap at */
	size_t len;       /* bytes to map */
	uint32_t reg_off; /* bf.reg - start of that mapping */
};

/* What ssqd's options say about the device beyond its name. */
struct ssqd_backend_conf {
	/* The emulated device's link layer: IBV_LINK_LAYER_* (0: InfiniBand). */
	uint8_t emu_link_layer;
	/* The emulated ports' active MTU (0: the link layer's usual one). */
	enum ibv_mtu emu_mtu;
};

/*
 * --gid-index: SSQD_GID_AUTO (the default) picks one on Ethernet and uses
 * none (the LID path) on InfiniBand; SSQD_GID_NONE forces no GRH; 0..255
 * names the entry.
 */
#define SSQD_GID_AUTO (-1)
#define SSQD_GID_NONE (-2)

/*
 * A port as the connection needs it: how the peer reaches it (LID, GID),
 * the GRH's source GID, its MTU, and the device's read/atomic depths.
 */
struct ssqd_port_info {
	uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
	enum ibv_mtu active_mtu;
	uint16_t lid;  /* 0 on Ethernet */
	int gid_index; /* sgid_index of the GRH; < 0: no GRH (InfiniBand LID path) */
	uint8_t gid[16];
	char gid_why[192]; /* which GID and why, for the log */
	/* ibv_device_attr's max_qp_init_rd_atom and max_qp_rd_atom (cut to 255). */
	uint8_t max_init_rd_atom, max_resp_rd_atom;
};

/*
 * An asynchronous event: the errors that come without a CQE. @qpn names
 * the object of QP events, @cqn that of IBV_EVENT_CQ_ERR (0 is a CQ number
 * too), @port that of port events.
 */
struct ssqd_async_event {
	enum ibv_event_type type; /* IBV_EVENT_QP_FATAL, _CQ_ERR, _PORT_ERR, ... */
	uint32_t qpn;
	uint32_t cqn;
	uint8_t port;
};

struct ssqd_backend_ops {
	const char *kind; /* "mlx5" or "emu" */
	/* Open device @dev, placing every queue buffer in @arena. */
	int (*open)(struct ssqd_backend **b, const char *dev, struct shm_arena *arena,
	            const struct ssqd_backend_conf *conf, char *why, size_t whylen);
	/*
	 * Register [addr, addr + len) at IOVA @iova for local access, and
	 * remote access too when @remote.
	 */
	int (*reg_data)(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
	                int remote, uint32_t *key, char *why, size_t whylen);
	/*
	 * One buffer inside the data arena as an MR of its own, [@addr, +@len)
	 * at IOVA @iova (ssqd's default; not with --arena-rkey): local access,
	 * and remote access when @remote, else IBV_ACCESS_MW_BIND only, for
	 * grant's windows. *@mr and its one key, or -errno with @why.
	 * dereg_buf gives it back.
	 */
	int (*reg_buf)(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
	               int remote, void **mr, uint32_t *key, char *why, size_t whylen);
	void (*dereg_buf)(struct ssqd_backend *b, void *mr);
	/*
	 * Register a client's memory (proto_msg_mem_reg): @kind SSQ_MEM_VERBS,
	 * the MR handle @addr of @len bytes the client made in ssqd's PD
	 * (no fd; the backend takes it over, or refuses it); @kind
	 * SSQ_MEM_PROCESS, @len bytes at address @addr of process @pid, whose
	 * /proc/PID/mem @fd is (the client opened it), at IOVA @want_iova;
	 * SSQ_MEM_FILE, @len
	 * bytes of the shareable memory @fd from offset @addr, IOVAs the
	 * offsets. On success the backend owns @fd (closed by dereg_client),
	 * fills *@mr, the keys and *@iova; on failure the caller still owns
	 * @fd, and @why names what was refused: -EOPNOTSUPP (memory this
	 * device cannot reach), -EFAULT (not mapped, or read-only for write
	 * access), -EINVAL (past a file's end), -EBADF, -ENOMEM.
	 */
	int (*reg_client)(struct ssqd_backend *b, int kind, int fd, pid_t pid,
	                  uint64_t addr, uint64_t len, uint64_t want_iova, int access,
	                  void **mr, uint32_t *lkey, uint32_t *rkey, uint64_t *iova,
	                  char *why, size_t whylen);
	/* Deregister what reg_client made and let go of its fd. */
	void (*dereg_client)(struct ssqd_backend *b, void *mr);
	/*
	 * Optional (NULL: the device has no windows; buffers and
	 * registrations then keep their remote access). Remote access to
	 * [@iova, +@len) of @mr - a reg_buf MR, or when @client a reg_client
	 * one - with @access (IBV_ACCESS_REMOTE_*), for requests that arrive
	 * at @q's QP only: a type-2 memory window bound to that QP, its key's
	 * variant byte drawn at random (IB 10.6.7: a type-2 window is bound
	 * to one QP and reached through it alone). A ConnectX binds with a
	 * WQE on that QP's ring, through @q->prod. *@mw and its *@rkey, or
	 * -errno with @why. revoke frees it: its key reaches nothing once
	 * revoke returns. access_errors (optional): requests refused at @q's
	 * QP for a bad key so far.
	 */
	int (*grant)(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mr, int client,
	             uint64_t iova, uint64_t len, int access, void **mw, uint32_t *rkey,
	             char *why, size_t whylen);
	void (*revoke)(struct ssqd_backend *b, void *mw);
	/*
	 * Optional, instead of grant, where the bind is a WQE on @q's shared
	 * ring (a ConnectX): the same checks and window, but the bind is only
	 * posted through @q->prod, *@wr_id is its signaled completion's and
	 * *@end the ring position past it (the queue's `completed` there: it
	 * ran, or a reset discarded it).
	 * It runs when every reservation ahead of it is published, which no
	 * one bounds (a client may hold one), so ssqd does not wait here: it
	 * answers the GRANT when ssq_poll(@q->prod) shows that completion
	 * (clients/grant.c). Until it did, or the QP was reset, the bind may
	 * still run: revoke must wait.
	 */
	int (*grant_post)(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mr,
	                  int client, uint64_t iova, uint64_t len, int access, void **mw,
	                  uint32_t *rkey, uint64_t *wr_id, uint64_t *end, char *why,
	                  size_t whylen);
	/*
	 * Optional (NULL: the device has none). What a client needs to
	 * register its own memory in ssqd's PD (SSQ_MEM_VERBS): the verbs
	 * command fd - the one every attached client's UAR mapping already
	 * comes from - and the PD's handle.
	 */
	int (*verbs_handles)(struct ssqd_backend *b, int *cmd_fd, uint32_t *pd_handle);
	/*
	 * An RC QP on @port with the SQ @sq asks for (q->dv_qp.sq.wqe_cnt,
	 * q->max_inline and q->max_sge say what the device made), a send CQ of
	 * at least shm_scq_cqes(sq.wqe_cnt, @cqes) CQEs, an RQ of at least
	 * @rq_wqes one-SGE receive WQEs (a power of two; 0: none will be
	 * posted, the smallest RQ the device allows) and a receive CQ of at
	 * least max(2 * @rq_wqes, 64) CQEs: each receive WQE gives one CQE, so
	 * a poller that re-posts only after consuming never overruns.
	 */
	int (*create_queue)(struct ssqd_backend *b, const struct ssqd_sq_request *sq,
	                    uint32_t cqes, uint32_t rq_wqes, uint8_t port,
	                    struct ssqd_bqueue *q, char *why, size_t whylen);
	/* ibv_modify_qp semantics: 0 or -EINVAL (-errno of the driver). */
	int (*modify_qp)(struct ssqd_backend *b, struct ssqd_bqueue *q,
	                 struct ibv_qp_attr *attr, int mask);
	/*
	 * Port @port as @pi (above), the GID settled by ssqd_port_gid from
	 * --gid-index @gid_index (SSQD_GID_AUTO, SSQD_GID_NONE or an index)
	 * and the port's GID table. Returns 0, or -errno with @why (a port
	 * that cannot be queried, a GID entry that is empty or cannot be
	 * read, named by its index; never a zero GID in its place).
	 */
	int (*query_port)(struct ssqd_backend *b, uint8_t port, int gid_index,
	                  struct ssqd_port_info *pi, char *why, size_t whylen);
	/*
	 * Optional (NULL: nothing to do). Two hosts: get ready to reach a peer
	 * ssqd - the emulated device opens its UDP wire, and from then on the
	 * GID query_port reports carries the wire address.
	 */
	int (*peer_mode)(struct ssqd_backend *b, char *why, size_t whylen);
	/*
	 * Optional. Point @q (in RESET) at the peer whose GID, as exchanged,
	 * is @gid; the emulated device takes the wire address out of it.
	 */
	int (*set_remote)(struct ssqd_backend *b, struct ssqd_bqueue *q,
	                  const uint8_t gid[16], char *why, size_t whylen);
	/*
	 * Optional (NULL: none). Have @fn(@arg, @cqes) called soon after
	 * CQEs land in @q's send CQ (dv_cq, @recv 0) or receive CQ (dv_rcq,
	 * @recv 1), @cqes of them since the last call, from the thread that
	 * makes the device progress, so that whoever consumes them need not
	 * poll for them: the emulated device calls it
	 * from its own thread (emu_cq_set_event). A ConnectX writes CQEs
	 * without a host thread; there ssqd's poller polls, and sleepers in
	 * ssq_wait route between slices.
	 */
	int (*cq_event)(struct ssqd_backend *b, struct ssqd_bqueue *q, int recv,
	                void (*fn)(void *arg, unsigned cqes), void *arg);
	/*
	 * Optional (NULL: none), for a device that raises completion events
	 * itself (a ConnectX): arm @q's receive CQ for one event once it holds
	 * a CQE at or past consumer index @ci. The event makes rx_event_fd
	 * readable; rx_events_take takes (and acknowledges) every one pending,
	 * without waiting, and returns how many. Used by the receive poller
	 * before it sleeps, so that a message ends its nap.
	 */
	int (*rx_arm)(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci);
	int (*rx_event_fd)(struct ssqd_backend *b);
	int (*rx_events_take)(struct ssqd_backend *b);
	/*
	 * Optional (NULL: none), the same for send CQs, on a channel of their
	 * own: tx_arm arms @q's send CQ at consumer index @ci for one event;
	 * tx_events_take takes (and acknowledges) the pending events without
	 * waiting and calls @fn for each queue whose send CQ raised one (a
	 * device whose channel does not say whose: for every queue armed),
	 * which is then disarmed. Returns how many events it took. Used by
	 * ssqd's send-arm threads (send_arm.c) while producers sleep in
	 * ssq_wait, where cq_event is not to be had.
	 */
	int (*tx_arm)(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci);
	int (*tx_event_fd)(struct ssqd_backend *b);
	int (*tx_events_take)(struct ssqd_backend *b,
	                      void (*fn)(void *arg, struct ssqd_bqueue *q), void *arg);
	/* How clients map @q's UAR page. */
	int (*uar_map)(struct ssqd_backend *b, struct ssqd_bqueue *q,
	               struct shm_uar_map *m);
	/*
	 * The next asynchronous event of the device, without waiting
	 * (ibv_get_async_event on the context's non-blocking async fd; the
	 * emulated device queues the same events for the same causes). Returns
	 * 1 and @ev, 0 when none is pending, or a negative errno.
	 */
	int (*async_event)(struct ssqd_backend *b, struct ssqd_async_event *ev);
	/*
	 * Optional (NULL: none). A descriptor that polls readable while an
	 * async event waits (the verbs context's async_fd; the emulated
	 * device's emu_async_fd), for ssqd's serve loop to wake on rather
	 * than find the event at its next timeout.
	 */
	int (*async_fd)(struct ssqd_backend *b);
	/*
	 * Optional. @max_ms nonzero: no doorbell comes for now (no client has
	 * a queue attached, nothing in flight), so whatever polls for them may
	 * sleep up to @max_ms; 0: one may come now (called before an attach is
	 * answered). The emulated device's thread naps longer (emu_set_idle_nap);
	 * a ConnectX needs no polling.
	 */
	void (*idle)(struct ssqd_backend *b, unsigned max_ms);
	/* Start / stop whatever makes progress without clients (emu: its thread). */
	int (*start)(struct ssqd_backend *b);
	void (*stop)(struct ssqd_backend *b);
	void (*close)(struct ssqd_backend *b);
};

/*
 * CQEs of the receive CQ of a QP with @rq_wqes receive WQEs: two per WQE,
 * at least 64 (create_queue's contract).
 */
static inline uint32_t shm_rcq_cqes(uint32_t rq_wqes)
{
	return rq_wqes < 32 ? 64 : 2 * rq_wqes;
}

extern const struct ssqd_backend_ops ssqd_backend_mlx5;
extern const struct ssqd_backend_ops ssqd_backend_emu;

/*
 * One GID table entry, as ibv_query_gid_ex / emu_query_gid give it; the
 * backends list a port's filled entries and ssqd_port_gid picks.
 */
struct ssqd_gid {
	unsigned index;
	unsigned type; /* IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2 */
	uint8_t raw[16];
};

/*
 * ssqd_port_gid - settle @pi's gid_index, gid and gid_why (link_layer
 * already set) from --gid-index @want and the port's @n filled GID
 * entries @tab:
 *  - an index: that entry (a GRH on either link layer), or -ENODATA
 *    naming it when the table has nothing there;
 *  - SSQD_GID_NONE: no GRH (on Ethernet INIT->RTR will be refused: the
 *    kernel's mlx5_set_path wants a GRH for RoCE);
 *  - SSQD_GID_AUTO: InfiniBand, no GRH (the LID path within the subnet);
 *    Ethernet, the first RoCE v2 entry with an IPv4-mapped address, else
 *    with a global IPv6 address, else link-local, else RoCE v1 (not
 *    routable, said so), else -ENOENT.
 * gid_why says which and why. The gid bytes are the entry's (zero with no GRH).
 */
int ssqd_port_gid(struct ssqd_port_info *pi, int want, const struct ssqd_gid *tab,
                  unsigned n, char *why, size_t whylen);

/* "InfiniBand" or "Ethernet (RoCE)". */
const char *ssqd_link_layer_str(uint8_t link_layer);

/*
 * The QP transitions, once for both backends: each fills an ibv_qp_attr and
 * the mask the kernel requires for that RC transition (and nothing it
 * forbids), as rc_pingpong does.
 */
struct ssqd_qp_remote {
	uint32_t qpn;
	uint32_t psn;
	uint16_t lid;
	uint8_t gid[16];
	int sgid_index;             /* our GID for the GRH; < 0: no GRH (LID path) */
	enum ibv_mtu mtu;           /* the path MTU: the smaller of both ports' */
	uint8_t max_rd_atomic;      /* READs/atomics we may have outstanding */
	uint8_t max_dest_rd_atomic; /* ... the peer may have outstanding here */
	uint8_t timeout;            /* RTS local ACK timeout (--qp-timeout) */
};

/*
 * The GRH's hop limit: 64, what rdma_cm gives a routed RoCE v2 path
 * (cma_resolve_iboe_route takes dev_addr.hoplimit, which addr4_resolve in
 * drivers/infiniband/core/addr.c sets to ip4_dst_hoplimit: the IPv4
 * default TTL, 64); 1 lets no router forward the packet.
 */
#define SSQD_GRH_HOP_LIMIT 64

void ssqd_qp_attr_init(struct ibv_qp_attr *attr, int *mask, uint8_t port);
void ssqd_qp_attr_rtr(struct ibv_qp_attr *attr, int *mask, uint8_t port,
                      const struct ssqd_qp_remote *remote);
void ssqd_qp_attr_rts(struct ibv_qp_attr *attr, int *mask, uint32_t sq_psn,
                      uint8_t max_rd_atomic, uint8_t timeout);
void ssqd_qp_attr_reset(struct ibv_qp_attr *attr, int *mask);

/*
 * ssqd_qp_connect - RESET -> INIT -> RTR -> RTS through @ops, or stop at the
 * first refusal, naming the transition (and, for a refused RTR, the path
 * it asked for) in @why.
 */
int ssqd_qp_connect(const struct ssqd_backend_ops *ops, struct ssqd_backend *b,
                    struct ssqd_bqueue *q, uint32_t sq_psn,
                    const struct ssqd_qp_remote *remote, char *why, size_t whylen);

#endif /* SSQ_CTRL_BACKEND_H */
