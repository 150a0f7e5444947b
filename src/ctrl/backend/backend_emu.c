/* SPDX-License-Identifier: MIT */
/*
 * The emulated backend: ssq's software mlx5 device, run by ssqd. Queue
 * buffers and doorbell records come from the arena, like the mlx5
 * backend's; the UAR pages a ConnectX exposes through its command fd are a
 * memfd here, one page per QP, which clients map the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "emu/emu.h"
#include "ctrl/backend/fork_safe.h"
#include "ctrl/backend/proc_maps.h"
#include "ctrl/proto/msg.h"
#include "ctrl/backend/backend.h"

#define MAX_QUEUES (2 * SSQ_MAX_QUEUES) /* a loopback queue takes two QPs */

struct emu_queue {
	struct emu_qp *qp;
	struct emu_cq *cq;      /* sends */
	struct emu_cq *rcq;     /* receives */
	int rarmed;             /* rcq armed (rx_arm), no event taken since */
	int tarmed;             /* cq armed (tx_arm), no event taken since */
	unsigned index;         /* which UAR page */
	struct ssqd_bqueue *bq; /* ssqd's handle, for tx_events_take */
};

struct ssqd_backend {
	int wire;             /* peer mode: the device has a UDP wire */
	uint8_t wire_gid[16]; /* its address as a GID (see wire_gid) */
	struct emu_dev *dev;
	struct emu_pd *pd;
	struct emu_mr *mr;
	struct shm_arena *arena;
	int uar_fd;
	uint8_t *uar;
	struct emu_queue queues[MAX_QUEUES];
	unsigned nqueues;
	int rx_efd; /* armed receive CQs' events (rx_arm), a completion channel's fd */
	int tx_efd; /* armed send CQs' events (tx_arm), another channel's */
};

static int backend_emu_open(struct ssqd_backend **bp, const char *dev,
                            struct shm_arena *arena, const struct ssqd_backend_conf *conf,
                            char *why, size_t whylen)
{
	size_t uar_len = (size_t)MAX_QUEUES * SSQ_EMU_UAR_SIZE;
	struct emu_dev_attr da;
	struct ssqd_backend *b;
	int rc;

	if (dev && strcmp(dev, "emu")) {
		snprintf(why, whylen,
		         "the emulated backend has one device, \"emu\", not \"%s\"", dev);
		return -ENODEV;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->arena = arena;
	b->uar_fd = memfd_create("ssq-emu-uar", MFD_CLOEXEC);
	if (b->uar_fd < 0 || ftruncate(b->uar_fd, (off_t)uar_len) < 0) {
		rc = -errno;
		snprintf(why, whylen, "UAR memfd: %s", strerror(errno));
		goto fail;
	}
	b->uar = mmap(NULL, uar_len, PROT_READ | PROT_WRITE, MAP_SHARED, b->uar_fd, 0);
	if (b->uar == MAP_FAILED) {
		rc = -errno;
		snprintf(why, whylen, "UAR mmap: %s", strerror(errno));
		b->uar = NULL;
		goto fail;
	}
	/* Full mode unless SSQ_EMU_MODE / SSQ_EMU_FAULT say else. */
	memset(&da, 0, sizeof(da));
	da.stream_poll_ns = SSQ_EMU_STREAM_POLL_NS_DEFAULT;
	if (conf) {
		da.link_layer = conf->emu_link_layer;
		da.active_mtu = conf->emu_mtu;
	}
	rc = emu_open(&b->dev, &da);
	if (rc) {
		snprintf(why, whylen, "emulated device: %s (check SSQ_EMU_* variables)",
		         strerror(-rc));
		goto fail;
	}
	rc = emu_alloc_pd(b->dev, &b->pd);
	if (rc) {
		snprintf(why, whylen, "emulated PD: %s", strerror(-rc));
		goto fail;
	}
	/* -1: the receive poller naps blind, as on a ConnectX without a channel. */
	b->rx_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b->tx_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*bp = b;
	return 0;
fail:
	if (b->dev)
		emu_close(b->dev);
	if (b->uar)
		munmap(b->uar, uar_len);
	if (b->uar_fd >= 0)
		close(b->uar_fd);
	free(b);
	return rc;
}

static int emu_reg_buf(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                       int remote, void **mrp, uint32_t *key, char *why, size_t whylen)
{
	struct emu_mr *mr;
	int rc = emu_reg_mr(b->pd, addr, len, iova,
	                    (remote ? SSQD_ACCESS_ALL : IBV_ACCESS_LOCAL_WRITE) |
	                        IBV_ACCESS_MW_BIND,
	                    &mr, key);

	if (rc) {
		snprintf(why, whylen, "emulated MR of %zu bytes at IOVA 0x%llx: %s", len,
		         (unsigned long long)iova, strerror(-rc));
		return rc;
	}
	*mrp = mr;
	return 0;
}

static void emu_dereg_buf(struct ssqd_backend *b, void *mr)
{
	(void)b;
	emu_dereg_mr(mr);
}

static int emu_reg_data(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                        int remote, uint32_t *key, char *why, size_t whylen)
{
	int access = remote ? SSQD_ACCESS_ALL : IBV_ACCESS_LOCAL_WRITE;
	/* ibv_reg_mr's fork support first, as libibverbs does (fork_safe.h). */
	int rc = ssqd_fork_safe_reg(b->arena, addr, len, why, whylen);

	if (rc)
		return rc;
	rc = emu_reg_mr(b->pd, addr, len, iova, access, &b->mr, key);
	if (rc)
		snprintf(why, whylen, "emulated MR of %zu bytes at IOVA 0x%llx: %s", len,
		         (unsigned long long)iova, strerror(-rc));
	return rc;
}

/* A client's registration: the device's MR and the memory file it reads. */
struct emu_client_mr {
	struct emu_mr *mr;
	int fd;
};

/*
 * The client's own memory file and no other: a client that may open
 * another process's (ssqd's, another client's) must not have the device
 * write there. The file it holds open pins its proc inode, which our
 * lookup of the same path must then find.
 */
static int own_memory_file(int fd, pid_t pid, char *why, size_t whylen)
{
	struct stat st, own;
	struct statfs fs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	if (fstatfs(fd, &fs) || fstat(fd, &st) || fs.f_type != PROC_SUPER_MAGIC ||
	    !S_ISREG(st.st_mode) || stat(path, &own) || own.st_dev != st.st_dev ||
	    own.st_ino != st.st_ino) {
		snprintf(why, whylen,
		         "the passed descriptor is not this client's own memory file "
		         "(%s as ssqd sees it)",
		         path);
		return -EBADF;
	}
	return 0;
}

/*
 * Only memory files: a file the device wrote with pwrite would have ssqd
 * fault in (and be charged for) every page a WRITE first touches in a
 * sparse file; through the client's mapping of it they are the client's
 * (ssq_mem_reg_fd maps the file and registers the mapping), and a file
 * shrunk under it fails the access instead of raising SIGBUS in ssqd.
 */
static int emu_reg_client(struct ssqd_backend *b, int kind, int fd, pid_t pid,
                          uint64_t addr, uint64_t len, uint64_t want_iova, int access,
                          void **mrp, uint32_t *lkey, uint32_t *rkey, uint64_t *iova,
                          char *why, size_t whylen)
{
	/* ib_access_writable (include/rdma/ib_verbs.h): these pin pages for write. */
	int writable = !!(access & SSQ_MEM_ACCESS_WRITES);
	struct emu_client_mr *m;
	int rc;

	if (kind != SSQ_MEM_PROCESS) {
		snprintf(
		    why, whylen,
		    "the emulated device reaches a client's memory only through its "
		    "/proc/self/mem (ssq_mem_reg_fd registers its mapping of a file)");
		return -EOPNOTSUPP;
	}
	rc = own_memory_file(fd, pid, why, whylen);
	if (!rc)
		rc = ssqd_proc_range_check(pid, addr, len, writable, why, whylen);
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rc = emu_reg_mr_file(b->pd, fd, addr, len, want_iova, access, &m->mr, lkey);
	if (rc) {
		snprintf(why, whylen, "emulated MR of %llu bytes at 0x%llx: %s",
		         (unsigned long long)len, (unsigned long long)addr,
		         strerror(-rc));
		free(m);
		return rc;
	}
	m->fd = fd;
	*rkey = *lkey; /* one key serves both, as on mlx5 */
	*iova = want_iova;
	*mrp = m;
	return 0;
}

static void emu_dereg_client(struct ssqd_backend *b, void *mrp)
{
	struct emu_client_mr *m = mrp;

	(void)b;
	emu_dereg_mr(m->mr);
	close(m->fd);
	free(m);
}

/*
 * A type-2 window over [@iova, +@len) of the buffer's or registration's MR,
 * bound to @q's QP under a key whose variant byte is drawn at random: what
 * the mlx5 backend does with ibv_alloc_mw(IBV_MW_TYPE_2) and an
 * IBV_WR_BIND_MW whose bind_mw.rkey carries the byte it chose.
 */
static int emu_grant(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mem, int client,
                     uint64_t iova, uint64_t len, int access, void **mwp, uint32_t *rkey,
                     char *why, size_t whylen)
{
	struct emu_mr *mr = client ? ((struct emu_client_mr *)mem)->mr : mem;
	struct emu_queue *eq = q->impl;
	struct emu_mr *mw;
	uint8_t v = 0;
	uint32_t key;
	int rc;

	while (!v)
		if (getrandom(&v, 1, 0) != 1) {
			snprintf(why, whylen, "getrandom: %s", strerror(errno));
			return -errno;
		}
	rc = emu_alloc_mw(b->pd, &mw, &key);
	if (rc) {
		snprintf(why, whylen, "a memory window: %s", strerror(-rc));
		return rc;
	}
	key = (key & ~0xffu) | v;
	rc = emu_bind_mw(eq->qp, mw, mr, iova, len, access, key);
	if (rc) {
		emu_dealloc_mw(mw);
		snprintf(why, whylen,
		         "binding a window over %llu bytes at IOVA 0x%llx to QP 0x%x: %s",
		         (unsigned long long)len, (unsigned long long)iova, q->qpn,
		         strerror(-rc));
		return rc;
	}
	*mwp = mw;
	*rkey = key;
	return 0;
}

static void emu_revoke(struct ssqd_backend *b, void *mw)
{
	(void)b;
	emu_dealloc_mw(mw);
}

static int emu_create_queue(struct ssqd_backend *b, const struct ssqd_sq_request *sq,
                            uint32_t cqes, uint32_t rq_wqes, uint8_t port,
                            struct ssqd_bqueue *q, char *why, size_t whylen)
{
	uint32_t rq = rq_wqes ? rq_wqes : 1, rcqes = shm_rcq_cqes(rq), scqes;
	struct ssqd_sq_request req;
	struct emu_qp_cap cap;
	struct emu_qp_size sz;
	struct emu_dev_caps dc;
	struct emu_cq_attr ca, rca;
	struct emu_qp_attr qa;
	struct emu_queue *eq;
	size_t mark;
	int rc;

	if (b->nqueues == MAX_QUEUES) {
		snprintf(why, whylen, "at most %d queues per device", MAX_QUEUES);
		return -ENOSPC;
	}
	/*
	 * --sq-size past the device's max_send_wqebb: the largest ring it
	 * takes, as backend_mlx5.c does with max_qp_wr (ssqd_sq_clamp).
	 */
	emu_query_caps(&dc);
	req = *sq;
	if (!ssqd_sq_clamp(&req, dc.max_send_wqebb, &scqes) &&
	    req.max_send_wr != sq->max_send_wr)
		fprintf(
		    stderr,
		    "ssqd: the SQ cut to %u WQEBBs (%u WRs): the device takes at most "
		    "%u WQEBBs per SQ\n",
		    scqes, req.max_send_wr, dc.max_send_wqebb);
	sq = &req;
	/* The queues libmlx5 would make of the same request on a ConnectX. */
	memset(&cap, 0, sizeof(cap));
	cap.max_send_wr = sq->max_send_wr;
	cap.max_recv_wr = rq;
	cap.max_send_sge = sq->max_send_sge;
	cap.max_recv_sge = 1;
	cap.max_inline_data = sq->max_inline_data;
	cap.send_ops_flags = sq->send_ops;
	cap.has_send_ops = sq->send_ops != 0;
	rc = emu_qp_size(&cap, &sz);
	if (rc) {
		snprintf(
		    why, whylen,
		    "the emulated ConnectX refuses an RC QP of %u send WRs x %u SGEs / "
		    "%u inline bytes (send ops 0x%llx) and %u receive WRs: %s (device "
		    "limits: %u WQEBBs per SQ, %u bytes per WQE, %u WRs per RQ)",
		    sq->max_send_wr, sq->max_send_sge, sq->max_inline_data,
		    (unsigned long long)sq->send_ops, rq, strerror(-rc),
		    dc.max_send_wqebb, dc.max_sq_desc_sz, dc.max_recv_wr);
		return rc;
	}
	scqes = shm_scq_cqes(sz.sq_wqe_cnt, cqes);
	if (scqes > dc.max_cqe + 1 || rcqes > dc.max_cqe + 1) {
		snprintf(why, whylen, "a CQ of %u CQEs: the device takes at most %u",
		         scqes > rcqes ? scqes : rcqes, dc.max_cqe);
		return -EINVAL;
	}
	eq = &b->queues[b->nqueues];
	memset(q, 0, sizeof(*q));
	mark = b->arena->used; /* a refused queue gives its arena space back */
	/*
	 * Both CQs ignore overruns, as backend_mlx5.c creates its own: their
	 * consumer-index records are in the arena every client maps
	 * read-write, and one store there must not stop a CQ for good.
	 */
	memset(&ca, 0, sizeof(ca));
	ca.ignore_overrun = 1;
	ca.cqe_cnt = scqes;
	ca.buf = shm_arena_alloc(b->arena, (size_t)scqes * 64, 4096);
	ca.dbrec = shm_arena_alloc(b->arena, 64, 64);
	memset(&rca, 0, sizeof(rca));
	rca.ignore_overrun = 1;
	rca.cqe_cnt = rcqes;
	rca.buf = shm_arena_alloc(b->arena, (size_t)rcqes * 64, 4096);
	rca.dbrec = shm_arena_alloc(b->arena, 64, 64);
	memset(&qa, 0, sizeof(qa));
	qa.cap = &cap;
	/* As backend_mlx5.c asks (MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE). */
	qa.disable_scatter_to_cqe = 1;
	qa.sq_wqe_cnt = sz.sq_wqe_cnt;
	qa.sq_buf = shm_arena_alloc(b->arena, (size_t)sz.sq_wqe_cnt * 64, 4096);
	qa.rq_wqe_cnt = sz.rq_wqe_cnt;
	qa.rq_stride = sz.rq_stride;
	qa.rq_buf = shm_arena_alloc(b->arena, (size_t)sz.rq_wqe_cnt * sz.rq_stride, 4096);
	qa.dbrec = shm_arena_alloc(b->arena, 64, 64);
	qa.uar = b->uar + (size_t)b->nqueues * SSQ_EMU_UAR_SIZE;
	if (!ca.buf || !ca.dbrec || !rca.buf || !rca.dbrec || !qa.sq_buf || !qa.rq_buf ||
	    !qa.dbrec) {
		snprintf(why, whylen,
		         "the arena has no room for another queue (%u so far; its SQ has "
		         "%u WQEBBs, its send CQ %u CQEs)",
		         b->nqueues, sz.sq_wqe_cnt, scqes);
		b->arena->used = mark;
		return -ENOSPC;
	}
	rc = emu_create_cq(b->dev, &ca, &eq->cq, &q->dv_cq);
	if (rc) {
		snprintf(why, whylen, "emulated CQ of %u CQEs: %s", scqes, strerror(-rc));
		b->arena->used = mark;
		return rc;
	}
	rc = emu_create_cq(b->dev, &rca, &eq->rcq, &q->dv_rcq);
	if (rc) {
		snprintf(why, whylen, "emulated receive CQ of %u CQEs: %s", rcqes,
		         strerror(-rc));
		emu_destroy_cq(eq->cq);
		b->arena->used = mark;
		return rc;
	}
	qa.send_cq = eq->cq;
	qa.recv_cq = eq->rcq;
	rc = emu_create_qp(b->pd, &qa, &eq->qp, &q->dv_qp, &q->qpn);
	if (rc) {
		snprintf(why, whylen, "emulated QP of %u WQEBBs, %u receive WQEs: %s",
		         sz.sq_wqe_cnt, sz.rq_wqe_cnt, strerror(-rc));
		emu_destroy_cq(eq->rcq);
		emu_destroy_cq(eq->cq);
		b->arena->used = mark;
		return rc;
	}
	eq->index = b->nqueues++;
	/* What libmlx5 would write back into the caps. */
	q->max_inline = sz.max_inline_data;
	q->max_sge = sq->max_send_sge;
	q->port = port;
	q->impl = eq;
	eq->bq = q;
	return 0;
}

static int backend_emu_modify_qp(struct ssqd_backend *b, struct ssqd_bqueue *q,
                                 struct ibv_qp_attr *attr, int mask)
{
	(void)b;
	return emu_modify_qp(((struct emu_queue *)q->impl)->qp, attr, mask);
}

/*
 * The wire address "a.b.c.d:port" as a GID, RoCE style: an IPv4-mapped
 * IPv6 address (::ffff:a.b.c.d) in bytes 10..15, and, since a RoCE GID has
 * no port, the UDP port in bytes 0..1 (zero in a real v4-mapped address).
 */
static int wire_gid(const char *addr, uint8_t gid[16])
{
	unsigned a, b, c, d, port;

	if (sscanf(addr, "%u.%u.%u.%u:%u", &a, &b, &c, &d, &port) != 5 || a > 255 ||
	    b > 255 || c > 255 || d > 255 || !port || port > 65535)
		return -EINVAL;
	memset(gid, 0, 16);
	gid[0] = (uint8_t)(port >> 8);
	gid[1] = (uint8_t)port;
	gid[10] = gid[11] = 0xff;
	gid[12] = (uint8_t)a;
	gid[13] = (uint8_t)b;
	gid[14] = (uint8_t)c;
	gid[15] = (uint8_t)d;
	return 0;
}

static int emu_peer_mode(struct ssqd_backend *b, char *why, size_t whylen)
{
	const char *bind = getenv("SSQ_EMU_WIRE_ADDR");
	char local[64];
	int rc = emu_wire_open(b->dev, bind && *bind ? bind : "127.0.0.1:0", local,
	                       sizeof(local));

	if (!rc)
		rc = wire_gid(local, b->wire_gid);
	if (rc) {
		snprintf(why, whylen, "emulated wire on %s: %s",
		         bind && *bind ? bind : "127.0.0.1:0", strerror(-rc));
		return rc;
	}
	b->wire = 1;
	fprintf(stderr, "ssqd: emulated wire on UDP %s\n", local);
	return 0;
}

static int emu_set_remote(struct ssqd_backend *b, struct ssqd_bqueue *q,
                          const uint8_t gid[16], char *why, size_t whylen)
{
	char addr[32];
	int rc;

	if (!b->wire)
		return 0; /* loopback: the peer is in this device */
	if (gid[10] != 0xff || gid[11] != 0xff || !(gid[0] | gid[1])) {
		snprintf(why, whylen, "the peer's GID carries no emulated-wire address");
		return -EINVAL;
	}
	snprintf(addr, sizeof(addr), "%u.%u.%u.%u:%u", gid[12], gid[13], gid[14], gid[15],
	         (unsigned)gid[0] << 8 | gid[1]);
	rc = emu_qp_set_remote(((struct emu_queue *)q->impl)->qp, addr);
	if (rc)
		snprintf(why, whylen, "QP 0x%x to the peer at %s: %s", q->qpn, addr,
		         strerror(-rc));
	return rc;
}

/*
 * The emulated port as the device reports it, the GID picked from its
 * table as on a ConnectX; in peer mode the GID's bytes are the wire
 * address instead (the emulated fabric's "IP address"), which the peer's
 * set_remote takes out of it.
 */
static int backend_emu_query_port(struct ssqd_backend *b, uint8_t port, int gid_index,
                                  struct ssqd_port_info *pi, char *why, size_t whylen)
{
	struct ssqd_gid tab[SSQ_EMU_GID_TBL_LEN];
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	struct ibv_gid_entry e;
	unsigned i, n = 0;
	int rc;

	memset(pi, 0, sizeof(*pi));
	rc = emu_query_port(b->dev, port, &pa);
	if (!rc)
		rc = emu_query_device(b->dev, &da);
	if (rc) {
		snprintf(why, whylen, "querying emulated port %u: %s", port,
		         strerror(-rc));
		return rc;
	}
	pi->link_layer = pa.link_layer;
	pi->active_mtu = pa.active_mtu;
	pi->lid = pa.lid;
	pi->max_init_rd_atom = (uint8_t)da.max_qp_init_rd_atom;
	pi->max_resp_rd_atom = (uint8_t)da.max_qp_rd_atom;
	for (i = 0; i < (unsigned)pa.gid_tbl_len && n < SSQ_EMU_GID_TBL_LEN; i++) {
		rc = emu_query_gid(b->dev, port, i, &e);
		if (rc == -ENODATA)
			continue;
		if (rc) {
			snprintf(why, whylen, "GID index %u of emulated port %u: %s", i,
			         port, strerror(-rc));
			return rc;
		}
		tab[n].index = i;
		tab[n].type = e.gid_type;
		memcpy(tab[n].raw, e.gid.raw, 16);
		n++;
	}
	rc = ssqd_port_gid(pi, gid_index, tab, n, why, whylen);
	if (!rc && b->wire)
		memcpy(pi->gid, b->wire_gid, 16);
	return rc;
}

static int emu_uar_map(struct ssqd_backend *b, struct ssqd_bqueue *q,
                       struct shm_uar_map *m)
{
	struct emu_queue *eq = (struct emu_queue *)q->impl;

	m->fd = b->uar_fd;
	m->offset = (off_t)eq->index * SSQ_EMU_UAR_SIZE;
	m->len = SSQ_EMU_UAR_SIZE;
	m->reg_off = SSQ_EMU_BF_OFFSET;
	return 0;
}

static int emu_cq_event(struct ssqd_backend *b, struct ssqd_bqueue *q, int recv,
                        void (*fn)(void *arg, unsigned cqes), void *arg)
{
	struct emu_queue *eq = q->impl;

	(void)b;
	return emu_cq_set_event(recv ? eq->rcq : eq->cq, fn, arg);
}

/*
 * Arm @cq for one event at consumer index @ci on eventfd @fd, unless it is
 * armed already (*@armed): an arm holds until an event, so once per event,
 * not once per look.
 */
static int arm_once(int fd, struct emu_cq *cq, int *armed, uint32_t ci)
{
	int rc;

	if (fd < 0)
		return -EOPNOTSUPP;
	if (*armed)
		return 0;
	rc = emu_cq_arm(cq, ci, fd);
	*armed = !rc;
	return rc;
}

/*
 * The events pending on eventfd @fd, which counts them without saying
 * whose: each CQ armed on it (send CQs with @send, else receive CQs) whose
 * event was raised (emu_cq_arm_pending, as a ConnectX's channel names the
 * CQ) is disarmed, to be armed again at its next look, and for send CQs
 * @fn is told. One raised after its look here adds to the eventfd again.
 * Returns how many events (at most 1000).
 */
static int take_events(struct ssqd_backend *b, int fd, int send,
                       void (*fn)(void *arg, struct ssqd_bqueue *q), void *arg)
{
	uint64_t n;
	unsigned i;

	if (fd < 0 || read(fd, &n, sizeof(n)) != sizeof(n))
		return 0;
	for (i = 0; i < b->nqueues; i++) {
		struct emu_queue *eq = &b->queues[i];
		int *armed = send ? &eq->tarmed : &eq->rarmed;

		if (!*armed || emu_cq_arm_pending(send ? eq->cq : eq->rcq) == 1)
			continue;
		*armed = 0;
		if (fn)
			fn(arg, b->queues[i].bq);
	}
	return (int)(n > 1000 ? 1000 : n);
}

static int emu_rx_arm(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci)
{
	struct emu_queue *eq = q->impl;

	return arm_once(b->rx_efd, eq->rcq, &eq->rarmed, ci);
}

static int emu_rx_event_fd(struct ssqd_backend *b)
{
	return b->rx_efd;
}

static int emu_rx_events_take(struct ssqd_backend *b)
{
	return take_events(b, b->rx_efd, 0, NULL, NULL);
}

static int emu_tx_arm(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci)
{
	struct emu_queue *eq = q->impl;

	return arm_once(b->tx_efd, eq->cq, &eq->tarmed, ci);
}

static int emu_tx_event_fd(struct ssqd_backend *b)
{
	return b->tx_efd;
}

static int emu_tx_events_take(struct ssqd_backend *b,
                              void (*fn)(void *arg, struct ssqd_bqueue *q), void *arg)
{
	return take_events(b, b->tx_efd, 1, fn, arg);
}

static int backend_emu_async_fd(struct ssqd_backend *b)
{
	return emu_async_fd(b->dev);
}

static int backend_emu_async_event(struct ssqd_backend *b, struct ssqd_async_event *ev)
{
	struct emu_async_event e;
	int rc = emu_get_async_event(b->dev, &e);

	if (rc == -EAGAIN)
		return 0;
	if (rc)
		return rc;
	memset(ev, 0, sizeof(*ev));
	ev->type = e.type;
	ev->qpn = e.qpn;
	ev->cqn = e.cqn;
	return 1;
}

static int backend_emu_start(struct ssqd_backend *b)
{
	return emu_start(b->dev);
}

static void backend_emu_stop(struct ssqd_backend *b)
{
	emu_stop(b->dev);
}

static void backend_emu_idle(struct ssqd_backend *b, unsigned max_ms)
{
	/* ssqd passes 0 or a nap in range: nothing to report. */
	(void)emu_set_idle_nap(b->dev, (long)max_ms * 1000000L);
}

static void backend_emu_close(struct ssqd_backend *b)
{
	if (!b)
		return;
	emu_close(b->dev); /* stops the thread, frees every object */
	if (b->rx_efd >= 0)
		close(b->rx_efd);
	if (b->tx_efd >= 0)
		close(b->tx_efd);
	munmap(b->uar, (size_t)MAX_QUEUES * SSQ_EMU_UAR_SIZE);
	close(b->uar_fd);
	free(b);
}

const struct ssqd_backend_ops ssqd_backend_emu = {
	.kind = "emu",
	.open = backend_emu_open,
	.reg_data = emu_reg_data,
	.reg_buf = emu_reg_buf,
	.dereg_buf = emu_dereg_buf,
	.reg_client = emu_reg_client,
	.dereg_client = emu_dereg_client,
	.grant = emu_grant,
	.revoke = emu_revoke,
	.create_queue = emu_create_queue,
	.modify_qp = backend_emu_modify_qp,
	.query_port = backend_emu_query_port,
	.peer_mode = emu_peer_mode,
	.set_remote = emu_set_remote,
	.cq_event = emu_cq_event,
	.rx_arm = emu_rx_arm,
	.rx_event_fd = emu_rx_event_fd,
	.rx_events_take = emu_rx_events_take,
	.tx_arm = emu_tx_arm,
	.tx_event_fd = emu_tx_event_fd,
	.tx_events_take = emu_tx_events_take,
	.uar_map = emu_uar_map,
	.async_event = backend_emu_async_event,
	.async_fd = backend_emu_async_fd,
	.idle = backend_emu_idle,
	.start = backend_emu_start,
	.stop = backend_emu_stop,
	.close = backend_emu_close,
};
