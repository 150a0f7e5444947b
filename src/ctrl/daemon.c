/* SPDX-License-Identifier: MIT */
/*
 * ssqd's body: build the arena and the shared queues, then serve clients.
 * ssqd owns every device object; a client only maps memory and rings
 * doorbells, so no client's death can take a QP down with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include "ctrl/daemon.h"
#include "ctrl/mlx5_list.h"
#include "ctrl/proto.h"

#define PEER_TIMEOUT_MS  30000
#define PEER_EXCHANGE_MS 5000 /* a connected peer answers at once */
#define SEND_TIMEOUT_MS  1000
#define PROGRESS_MS      10 /* how often ssqd routes completions nobody polls */

void ssqd_options_default(struct ssqd_options *o)
{
	memset(o, 0, sizeof(*o));
	o->nqueues = 1;
	o->sq_wqebbs = 1024;
	o->cqes = 1024;
	o->data_mib = 64;
	o->signal_every = 64;
	o->heal_ms = 50;
	o->hugepages = SSQ_HUGEPAGES_AUTO;
	o->port = 1;
	o->gid_index = -1;
	o->allow_uid = -1;
	o->allow_gid = -1;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Bytes one shared queue (and its loopback peer) takes in the arena, generously. */
static uint64_t queue_bytes(const struct ssqd_options *o)
{
	uint64_t one = align_up((uint64_t)o->sq_wqebbs * 64, 4096) +
	               align_up((uint64_t)o->cqes * 64, 4096) + 4 * 4096 + 64 * 64;

	/* libmlx5 also puts the RQ and its own rounding in there: double it. */
	return 2 * 2 * one + align_up(ssq_ctl_size(o->sq_wqebbs), 4096);
}

/* Random 24-bit PSN, as rc_pingpong draws it. */
static uint32_t new_psn(void)
{
	return (uint32_t)lrand48() & 0xffffff;
}

/* The shared queue's control block, and ssqd's own producer in it. */
static int make_ctl(struct ssqd *d, struct ssqd_queue *q, char *why, size_t whylen)
{
	struct ssq_sq sq;
	struct ssq_cq cq;
	uint32_t ring = q->local.dv_qp.sq.wqe_cnt;
	uint32_t every = d->opt.signal_every < ring / 2 ? d->opt.signal_every : ring / 2;
	int rc;

	q->ctl = ssq_arena_alloc(&d->arena, ssq_ctl_size(ring), 4096);
	if (!q->ctl) {
		snprintf(why, whylen, "no room in the arena for a queue control block");
		return -ENOSPC;
	}
	rc = ssq_ctl_init(q->ctl, ring, every);
	if (!rc)
		rc = ssq_sq_init(&sq, &q->local.dv_qp, q->local.qpn, q->local.max_inline,
		                 q->local.max_sge);
	if (!rc)
		rc = ssq_cq_init(&cq, &q->local.dv_cq);
	if (!rc)
		rc = ssq_producer_init(&q->prod, q->ctl, SSQD_PRODUCER_ID, &sq, &cq,
		                       (uint32_t)getpid());
	if (rc)
		snprintf(why, whylen, "queue control block: %s", strerror(-rc));
	return rc;
}

static int make_queue(struct ssqd *d, unsigned i, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[i];
	int rc = d->ops->create_queue(d->backend, d->opt.sq_wqebbs, d->opt.cqes,
	                              d->opt.port, &q->local, why, whylen);

	if (rc)
		return rc;
	rc = make_ctl(d, q, why, whylen);
	if (rc)
		return rc;
	if (d->opt.listen_port || d->opt.connect_to)
		return d->ops->uar_map(d->backend, &q->local, &q->uar);
	/*
	 * Loopback: the other end lives in ssqd too, on the emulated device's
	 * second port (its second host), or on the same port of a ConnectX.
	 */
	q->loopback = 1;
	rc = d->ops->create_queue(d->backend, 64, 64,
	                          strcmp(d->ops->kind, "emu") ? d->opt.port : 2, &q->peer,
	                          why, whylen);
	if (rc)
		return rc;
	return d->ops->uar_map(d->backend, &q->local, &q->uar);
}

static void local_addr(struct ssqd *d, const struct ssq_bqueue *b, unsigned i,
                       uint32_t psn, struct ssq_peer_addr *a)
{
	enum ibv_mtu mtu;

	memset(a, 0, sizeof(*a));
	a->index = (uint16_t)i;
	a->count = (uint16_t)d->opt.nqueues;
	a->qpn = b->qpn;
	a->psn = psn;
	d->ops->query_port(d->backend, b->port, d->opt.gid_index, &a->lid, a->gid, &mtu);
	a->data_iova = d->hdr->data_iova;
	a->data_rkey = d->hdr->data_key;
	snprintf(a->name, sizeof(a->name), "q%u", i);
}

static int connect_one(struct ssqd *d, struct ssq_bqueue *b, uint32_t my_psn,
                       const struct ssq_peer_addr *peer, char *why, size_t whylen)
{
	struct ssq_qp_remote r;
	enum ibv_mtu mtu = IBV_MTU_1024;
	uint16_t lid;
	uint8_t gid[16];

	memset(&r, 0, sizeof(r));
	r.qpn = peer->qpn;
	r.psn = peer->psn;
	r.lid = peer->lid;
	memcpy(r.gid, peer->gid, 16);
	r.use_gid = d->opt.gid_index >= 0;
	d->ops->query_port(d->backend, b->port, d->opt.gid_index, &lid, gid, &mtu);
	return ssq_qp_connect(d->ops, d->backend, b, mtu, d->opt.gid_index, my_psn, &r,
	                      why, whylen);
}

/*
 * --connect: exchange addresses with the listening peer now, rc_pingpong
 * style; any failure (unreachable, truncated or malformed reply) ends the
 * setup with the reason.
 */
static int peer_connect(struct ssqd *d, const struct ssq_peer_addr *local,
                        struct ssq_peer_addr *remote, char *why, size_t whylen)
{
	int s, rc;

	s = ssq_peer_connect(d->opt.connect_to, PEER_TIMEOUT_MS, why, whylen);
	if (s < 0)
		return s;
	rc = ssq_peer_exchange(s, local, remote, d->opt.nqueues, PEER_TIMEOUT_MS, why,
	                       whylen);
	close(s);
	return rc;
}

static void publish_queue(struct ssqd *d, unsigned i, const struct ssq_peer_addr *peer)
{
	struct ssq_queue_layout *l = &d->hdr->queues[i];
	struct ssqd_queue *q = &d->queues[i];

	snprintf(l->name, sizeof(l->name), "q%u", i);
	l->qpn = q->local.qpn;
	l->peer_qpn = peer->qpn;
	l->cqn = q->local.dv_cq.cqn;
	l->sq_wqe_cnt = q->local.dv_qp.sq.wqe_cnt;
	l->cqe_cnt = q->local.dv_cq.cqe_cnt;
	l->max_inline = q->local.max_inline;
	l->max_sge = q->local.max_sge;
	l->sq_off = ssq_arena_off(&d->arena, q->local.dv_qp.sq.buf);
	l->qp_dbrec_off = ssq_arena_off(&d->arena, q->local.dv_qp.dbrec);
	l->cq_off = ssq_arena_off(&d->arena, q->local.dv_cq.buf);
	l->cq_dbrec_off = ssq_arena_off(&d->arena, q->local.dv_cq.dbrec);
	l->uar_off = (uint64_t)q->uar.offset;
	l->bf_reg_off = q->uar.reg_off;
	l->bf_size = q->local.dv_qp.bf.size;
	l->peer_data_iova = peer->data_iova;
	l->peer_key = peer->data_rkey;
	l->ctl_off = ssq_arena_off(&d->arena, q->ctl);
	l->ctl_len = ssq_ctl_size(l->sq_wqe_cnt);
	/* Readers load state with acquire: everything above is visible first. */
	__atomic_store_n(&l->state, SSQ_QUEUE_READY, __ATOMIC_RELEASE);
}

/* Connect every local QP to its remote address and publish the queues. */
static int connect_all(struct ssqd *d, const struct ssq_peer_addr *remote, char *why,
                       size_t whylen)
{
	unsigned i;
	int rc;

	for (i = 0; i < d->opt.nqueues; i++) {
		rc = connect_one(d, &d->queues[i].local, d->psn[i], &remote[i], why,
		                 whylen);
		if (rc)
			return rc;
		d->queues[i].remote = remote[i]; /* for recovery */
		publish_queue(d, i, &remote[i]);
	}
	return 0;
}

static int bring_up(struct ssqd *d, char *why, size_t whylen)
{
	struct ssq_peer_addr remote[SSQ_MAX_QUEUES];
	unsigned i;
	int rc;

	for (i = 0; i < d->opt.nqueues; i++) {
		rc = make_queue(d, i, why, whylen);
		if (rc)
			return rc;
		d->psn[i] = new_psn();
		local_addr(d, &d->queues[i].local, i, d->psn[i], &d->local_addrs[i]);
		/* Listed before they are ready, so clients can see them come up. */
		snprintf(d->hdr->queues[i].name, SSQ_NAME_MAX, "q%u", i);
	}
	d->hdr->nqueues = d->opt.nqueues;
	if (d->opt.listen_port) {
		/* Queues come up when a peer has connected: ssqd_serve() waits for one.
		 */
		d->peer_listen_fd = ssq_peer_listen(d->opt.listen_port, why, whylen);
		return d->peer_listen_fd < 0 ? d->peer_listen_fd : 0;
	}
	if (d->opt.connect_to) {
		rc = peer_connect(d, d->local_addrs, remote, why, whylen);
		return rc ? rc : connect_all(d, remote, why, whylen);
	}
	for (i = 0; i < d->opt.nqueues; i++) {
		uint32_t ppsn = new_psn();

		local_addr(d, &d->queues[i].peer, i, ppsn, &remote[i]);
		d->queues[i].peer_psn = ppsn;
		/* The loopback end's side of the handshake, done in place. */
		rc = connect_one(d, &d->queues[i].peer, ppsn, &d->local_addrs[i], why,
		                 whylen);
		if (rc)
			return rc;
	}
	return connect_all(d, remote, why, whylen);
}

/*
 * --listen: a peer ssqd connected. Exchange addresses and bring the queues
 * up; a peer that sends a truncated or malformed message is refused with
 * the reason on stderr, and ssqd keeps serving and waiting for a good one.
 */
static void accept_peer(struct ssqd *d)
{
	struct ssq_peer_addr remote[SSQ_MAX_QUEUES];
	char why[256];
	int s = accept4(d->peer_listen_fd, NULL, NULL, SOCK_CLOEXEC), rc;

	if (s < 0)
		return;
	rc = ssq_peer_exchange(s, d->local_addrs, remote, d->opt.nqueues,
	                       PEER_EXCHANGE_MS, why, sizeof(why));
	close(s);
	if (rc) {
		fprintf(stderr,
		        "ssqd: peer refused: %s; still waiting for a peer on port %u\n",
		        why, d->opt.listen_port);
		return;
	}
	rc = connect_all(d, remote, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "ssqd: connecting to the peer: %s\n", why);
		return;
	}
	fprintf(stderr, "ssqd: peer connected, %u queue(s) ready\n", d->opt.nqueues);
	close(d->peer_listen_fd);
	d->peer_listen_fd = -1;
}

static int open_socket(struct ssqd *d, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	int s;

	if (strlen(d->opt.socket_path) >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "--socket path longer than %zu bytes",
		         sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -errno;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, d->opt.socket_path);
	unlink(d->opt.socket_path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(d->opt.socket_path, 0660) < 0 || listen(s, 64) < 0) {
		int err = errno;

		snprintf(why, whylen, "listening on %s: %s", d->opt.socket_path,
		         strerror(err));
		close(s);
		return -err;
	}
	d->listen_fd = s;
	return 0;
}

int ssqd_setup(struct ssqd *d, char *why, size_t whylen)
{
	const struct ssqd_options *o = &d->opt;
	uint64_t data_len = o->data_mib << 20, hdr_len = align_up(sizeof(*d->hdr), 4096);
	uint64_t total;
	void *data;
	int rc;

	d->listen_fd = -1;
	d->peer_listen_fd = -1;
	srand48(getpid() ^ time(NULL));
	if (!o->device)
		d->ops = ssq_mlx5_sysfs_count() ? &ssq_backend_mlx5 : &ssq_backend_emu;
	else
		d->ops = strcmp(o->device, "emu") ? &ssq_backend_mlx5 : &ssq_backend_emu;

	total = align_up(hdr_len + o->nqueues * queue_bytes(o) + (1u << 20), 2u << 20) +
	        data_len;
	rc = ssq_arena_create(&d->arena, total, o->hugepages, "ssqd", why, whylen);
	if (rc)
		return rc;
	d->hdr = ssq_arena_alloc(&d->arena, hdr_len, 4096);
	d->hdr->magic = SSQ_LAYOUT_MAGIC;
	d->hdr->version = SSQ_LAYOUT_VERSION;
	d->hdr->header_size = sizeof(*d->hdr);
	d->hdr->queue_layout_size = sizeof(struct ssq_queue_layout);
	d->hdr->arena_len = d->arena.len;
	d->hdr->hugepages = (uint32_t)d->arena.hugepages;

	rc = d->ops->open(&d->backend, o->device, &d->arena, why, whylen);
	if (rc)
		goto fail;
	snprintf(d->hdr->device, sizeof(d->hdr->device), "%s",
	         strcmp(d->ops->kind, "emu") ? (o->device ? o->device : "mlx5") : "emu");

	/* The data arena: at the end, hugepage-aligned, one MR at a fixed IOVA. */
	d->arena.used = d->arena.len - data_len;
	data = ssq_arena_alloc(&d->arena, data_len, 2u << 20);
	if (!data) {
		snprintf(why, whylen, "the arena has no room for the %llu MiB data arena",
		         (unsigned long long)o->data_mib);
		rc = -ENOSPC;
		goto fail;
	}
	d->arena.used = hdr_len; /* queues go between the header and the data arena */
	d->hdr->data_off = ssq_arena_off(&d->arena, data);
	d->hdr->data_len = data_len;
	d->hdr->data_iova = SSQD_DATA_IOVA;
	rc = d->ops->reg_data(d->backend, data, data_len, SSQD_DATA_IOVA,
	                      &d->hdr->data_key, why, whylen);
	if (rc)
		goto fail;
	ssq_data_init(&d->data, d->hdr->data_off, data_len);

	rc = bring_up(d, why, whylen);
	if (rc)
		goto fail;
	if (d->arena.used > d->hdr->data_off) {
		snprintf(why, whylen, "queues overran into the data arena");
		rc = -ENOSPC;
		goto fail;
	}
	rc = d->ops->start(d->backend);
	if (rc) {
		snprintf(why, whylen, "starting the device: %s", strerror(-rc));
		goto fail;
	}
	rc = open_socket(d, why, whylen);
	if (rc)
		goto fail;
	return 0;
fail:
	ssqd_teardown(d);
	return rc;
}

void ssqd_teardown(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd > 0)
			close(d->clients[i].fd);
	if (d->peer_listen_fd >= 0) {
		close(d->peer_listen_fd);
		d->peer_listen_fd = -1;
	}
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->opt.socket_path);
		d->listen_fd = -1;
	}
	if (d->backend) {
		d->ops->stop(d->backend);
		d->ops->close(d->backend);
		d->backend = NULL;
	}
	ssq_arena_destroy(&d->arena);
}

/* ---- clients ---- */

static int client_allowed(const struct ssqd *d, const struct ucred *cr)
{
	return cr->uid == 0 || cr->uid == getuid() ||
	       (d->opt.allow_uid >= 0 && cr->uid == (uid_t)d->opt.allow_uid) ||
	       (d->opt.allow_gid >= 0 && cr->gid == (gid_t)d->opt.allow_gid);
}

static void accept_client(struct ssqd *d)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct timeval tv = { SEND_TIMEOUT_MS / 1000, 0 };
	int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC), i;

	if (fd < 0)
		return;
	/* A client that stops reading must not stall ssqd: bounded sends. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		if (d->clients[i].fd <= 0) {
			memset(&d->clients[i], 0, sizeof(d->clients[i]));
			d->clients[i].fd = fd;
			d->clients[i].id = ++d->next_client_id;
			/*
			 * A refused peer is told why in answer to its first message:
			 * closing now, with its hello unread, would make the kernel
			 * reset the connection and drop the explanation.
			 */
			if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
				d->clients[i].refused = 1;
			} else {
				d->clients[i].pid = cr.pid;
				d->clients[i].uid = cr.uid;
				d->clients[i].gid = cr.gid;
				d->clients[i].refused = !client_allowed(d, &cr);
			}
			return;
		}
	}
	ssq_msg_send_error(fd, 0, -EUSERS, "ssqd serves at most %d clients",
	                   SSQD_MAX_CLIENTS);
	close(fd);
}

/*
 * A producer record's process is gone (or detached): mark it DEAD, so the
 * router drops its completions and the record can be reclaimed, and heal
 * the queue of whatever it left half-done.
 */
static void retire(struct ssqd *d, unsigned qi, uint32_t id)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc;

	__atomic_store_n(&q->ctl->producers[id].state, SSQ_PROD_DEAD, __ATOMIC_SEQ_CST);
	rc = ssq_ctl_heal(&q->prod, d->opt.heal_ms);
	q->heal_pending = rc == -ETIMEDOUT;
	if (rc > 0)
		fprintf(
		    stderr,
		    "ssqd: q%u: producer %u left %d unpublished WQEBBs: sent as NOPs\n",
		    qi, id, rc);
}

/* A client left (closed, crashed or was killed): give back what it held. */
static void drop_client(struct ssqd *d, struct ssqd_client *c)
{
	struct ssqd_grave *g = NULL;
	unsigned qi, i;

	for (qi = 0; qi < SSQ_MAX_QUEUES; qi++)
		if (c->attached & (1u << qi))
			retire(d, qi, c->producer[qi]);
	/*
	 * Its buffers may still be read or written by WQEs it posted: they go
	 * back to the arena only once every queue has completed everything
	 * reserved so far (reap_graves), never while the device could still
	 * touch them on behalf of the dead.
	 */
	for (i = 0; i < SSQD_MAX_GRAVES && !g; i++)
		if (!d->graves[i].owner)
			g = &d->graves[i];
	if (g) {
		g->owner = c->id;
		g->pid = c->pid;
		for (qi = 0; qi < d->hdr->nqueues; qi++)
			g->fence[qi] = d->queues[qi].ctl
			                   ? __atomic_load_n(&d->queues[qi].ctl->reserve,
			                                     __ATOMIC_ACQUIRE)
			                   : 0;
	} else {
		fprintf(stderr,
		        "ssqd: too many clients died at once; pid %d's buffers stay "
		        "allocated\n",
		        (int)c->pid);
	}
	close(c->fd);
	memset(c, 0, sizeof(*c));
}

/* Return the buffers of dead clients whose WQEs have all completed. */
static void reap_graves(struct ssqd *d)
{
	unsigned i, qi, freed;

	for (i = 0; i < SSQD_MAX_GRAVES; i++) {
		struct ssqd_grave *g = &d->graves[i];
		int done = 1;

		if (!g->owner)
			continue;
		for (qi = 0; qi < d->hdr->nqueues && done; qi++)
			if (d->queues[qi].ctl &&
			    __atomic_load_n(&d->queues[qi].ctl->completed,
			                    __ATOMIC_ACQUIRE) < g->fence[qi])
				done = 0;
		if (!done)
			continue;
		freed = ssq_data_free_owner(&d->data, g->owner);
		if (freed)
			fprintf(stderr,
			        "ssqd: client pid %d gone, %u data buffers returned\n",
			        (int)g->pid, freed);
		memset(g, 0, sizeof(*g));
	}
}

static int find_queue(const struct ssqd *d, const char *name)
{
	unsigned i;

	for (i = 0; i < d->hdr->nqueues; i++)
		if (!strncmp(d->hdr->queues[i].name, name, SSQ_NAME_MAX))
			return (int)i;
	return -1;
}

/*
 * Bring a queue whose QP went to ERR back to RTS, on a client's request:
 *  1. wait until every WQE reserved before the error is published (or
 *     healed), flushed by the device and routed to its owner - producers
 *     cannot reserve meanwhile (ssq_reserve returns -EIO in SSQ_CTL_ERROR);
 *  2. RESET and reconnect the QP (and, loopback, the other end, which an
 *     access error also moved to ERR) with the addresses of the first time;
 *  3. restart the shared counters at 0, as the QP's WQE index does after a
 *     reset, and clear the slots so no stale sequence word matches;
 *  4. bump the epoch and mark the queue READY.
 * Returns 0, or a negative errno with the reason in @why.
 */
static int recover_queue(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssq_ctl *ctl = q->ctl;
	struct ibv_qp_attr attr;
	struct timespec t0, t;
	unsigned i;
	int mask, rc, busy;

	if (__atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE) != SSQ_CTL_ERROR) {
		snprintf(why, whylen, "queue q%u is not in error: nothing to recover",
		         qi);
		return -EINVAL;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST);

		if (q->heal_pending)
			q->heal_pending =
			    ssq_ctl_heal(&q->prod, d->opt.heal_ms) == -ETIMEDOUT;
		ssq_submit(&q->prod);
		ssq__try_route(&q->prod);
		busy = 0;
		for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
			uint32_t st =
			    __atomic_load_n(&ctl->producers[i].state, __ATOMIC_SEQ_CST);

			busy |= st == SSQ_PROD_RESERVING || st == SSQ_PROD_BUILDING;
		}
		if (!busy && __atomic_load_n(&ctl->completed, __ATOMIC_SEQ_CST) == r &&
		    __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST) == r)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    2000) {
			snprintf(why, whylen,
			         "queue q%u: WQEs still in flight after 2 s (completed "
			         "%llu of "
			         "%llu)",
			         qi, (unsigned long long)ctl->completed,
			         (unsigned long long)r);
			return -EBUSY;
		}
		usleep(100);
	}

	ssq_qp_attr_reset(&attr, &mask);
	rc = d->ops->modify_qp(d->backend, &q->local, &attr, mask);
	if (!rc && q->loopback)
		rc = d->ops->modify_qp(d->backend, &q->peer, &attr, mask);
	if (rc) {
		snprintf(why, whylen, "queue q%u: QP to RESET: %s", qi, strerror(-rc));
		return rc;
	}
	/* libmlx5 clears its doorbell record on reset; ssq owns this one. */
	__atomic_store_n(&q->local.dv_qp.dbrec[MLX5_SND_DBR], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&q->local.dv_qp.dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELEASE);
	if (q->loopback) {
		rc = connect_one(d, &q->peer, q->peer_psn, &d->local_addrs[qi], why,
		                 whylen);
		if (rc)
			return rc;
	}
	rc = connect_one(d, &q->local, d->psn[qi], &q->remote, why, whylen);
	if (rc)
		return rc;

	memset((void *)q->prod.slots, 0, (size_t)ctl->ring * sizeof(struct ssq_ctl_slot));
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		ctl->producers[i].pos = 0;
		ctl->producers[i].len = 0;
		ctl->producers[i].done_pos = 0;
		ctl->producers[i].deliv_pos = 0;
	}
	ctl->reserve = 0;
	ctl->published = 0;
	ctl->completed = 0;
	ctl->db_value = 0;
	ctl->bf_offset = 0;
	__atomic_fetch_add(&ctl->epoch, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->state, SSQ_CTL_READY, __ATOMIC_SEQ_CST);
	fprintf(stderr, "ssqd: q%u recovered: QP 0x%x back in RTS, epoch %u\n", qi,
	        q->local.qpn, ctl->epoch);
	return 0;
}

int ssqd_handle(struct ssqd *d, struct ssqd_client *c, const struct ssq_msg *m)
{
	uint32_t seq = m->hdr.seq;
	unsigned i;
	int q, rc;

	if (m->hdr.type != SSQ_MSG_HELLO && !c->said_hello)
		return ssq_msg_send_error(c->fd, seq, -EPROTO,
		                          "say hello first (type 0x%x)", m->hdr.type);
	switch (m->hdr.type) {
	case SSQ_MSG_HELLO: {
		struct ssq_msg_hello_reply r;

		memset(&r, 0, sizeof(r));
		r.version = SSQ_PROTO_VERSION;
		r.max_queues = SSQ_MAX_QUEUES;
		memcpy(r.device, d->hdr->device, sizeof(r.device));
		r.arena_len = d->arena.len;
		r.arena_offset = d->arena.fd_offset;
		c->said_hello =
		    1; /* c->pid stays SO_PEERCRED's: the claimed one is unchecked */
		return ssq_msg_send(c->fd, SSQ_MSG_HELLO | SSQ_MSG_REPLY, seq, &r,
		                    sizeof(r), &d->arena.fd, 1);
	}
	case SSQ_MSG_LIST: {
		struct ssq_msg_list_reply r;

		memset(&r, 0, sizeof(r));
		r.nqueues = d->hdr->nqueues;
		for (i = 0; i < r.nqueues; i++) {
			memcpy(r.queues[i].name, d->hdr->queues[i].name, SSQ_NAME_MAX);
			r.queues[i].qpn = d->hdr->queues[i].qpn;
			r.queues[i].state = d->hdr->queues[i].state;
		}
		return ssq_msg_send(c->fd, SSQ_MSG_LIST | SSQ_MSG_REPLY, seq, &r,
		                    sizeof(r), NULL, 0);
	}
	case SSQ_MSG_ATTACH: {
		struct ssq_msg_attach_reply r;
		struct ssqd_queue *sq;

		q = find_queue(d, m->u.attach.name);
		if (q < 0)
			return ssq_msg_send_error(c->fd, seq, -ENOENT,
			                          "no queue named \"%s\"",
			                          m->u.attach.name);
		if (__atomic_load_n(&d->hdr->queues[q].state, __ATOMIC_ACQUIRE) !=
		    SSQ_QUEUE_READY)
			return ssq_msg_send_error(
			    c->fd, seq, -EAGAIN,
			    "queue \"%s\" is not connected yet (waiting for "
			    "the peer ssqd)",
			    m->u.attach.name);
		sq = &d->queues[q];
		if (c->attached & (1u << q))
			return ssq_msg_send_error(
			    c->fd, seq, -EALREADY,
			    "queue \"%s\" is already attached to this client",
			    m->u.attach.name);
		rc = ssq_ctl_claim(sq->ctl, (uint32_t)c->pid, SSQD_PRODUCER_ID);
		if (rc < 0)
			return ssq_msg_send_error(
			    c->fd, seq, rc,
			    "queue \"%s\" has all %u producer records in use",
			    m->u.attach.name, SSQ_MAX_PRODUCERS - 1);
		c->producer[q] = (uint32_t)rc;
		memset(&r, 0, sizeof(r));
		r.queue = (uint32_t)q;
		r.producer = c->producer[q];
		r.uar_offset = sq->uar.offset;
		r.uar_len = sq->uar.len;
		r.uar_reg_off = sq->uar.reg_off;
		c->attached |= 1u << q;
		return ssq_msg_send(c->fd, SSQ_MSG_ATTACH | SSQ_MSG_REPLY, seq, &r,
		                    sizeof(r), &sq->uar.fd, 1);
	}
	case SSQ_MSG_ALLOC: {
		struct ssq_msg_alloc_reply r;

		rc = ssq_data_alloc(&d->data, m->u.alloc.len, m->u.alloc.align, c->id,
		                    &r.off);
		if (rc)
			return ssq_msg_send_error(
			    c->fd, seq, rc,
			    "no room for %llu bytes in the %llu MiB data arena",
			    (unsigned long long)m->u.alloc.len,
			    (unsigned long long)d->opt.data_mib);
		r.len = m->u.alloc.len;
		return ssq_msg_send(c->fd, SSQ_MSG_ALLOC | SSQ_MSG_REPLY, seq, &r,
		                    sizeof(r), NULL, 0);
	}
	case SSQ_MSG_FREE:
		rc = ssq_data_free(&d->data, m->u.free.off, c->id);
		if (rc)
			return ssq_msg_send_error(
			    c->fd, seq, rc, "no buffer of this client at offset %llu",
			    (unsigned long long)m->u.free.off);
		return ssq_msg_send(c->fd, SSQ_MSG_FREE | SSQ_MSG_REPLY, seq, NULL, 0,
		                    NULL, 0);
	case SSQ_MSG_RECOVER: {
		char why[200];

		if (!(c->attached & (1u << m->u.detach.queue)))
			return ssq_msg_send_error(
			    c->fd, seq, -ENOENT,
			    "queue %u is not attached to this client", m->u.detach.queue);
		rc = recover_queue(d, m->u.detach.queue, why, sizeof(why));
		if (rc)
			return ssq_msg_send_error(c->fd, seq, rc, "%s", why);
		return ssq_msg_send(c->fd, SSQ_MSG_RECOVER | SSQ_MSG_REPLY, seq, NULL, 0,
		                    NULL, 0);
	}
	case SSQ_MSG_DETACH:
		if (!(c->attached & (1u << m->u.detach.queue)))
			return ssq_msg_send_error(
			    c->fd, seq, -ENOENT,
			    "queue %u is not attached to this client", m->u.detach.queue);
		c->attached &= ~(1u << m->u.detach.queue);
		retire(d, m->u.detach.queue, c->producer[m->u.detach.queue]);
		return ssq_msg_send(c->fd, SSQ_MSG_DETACH | SSQ_MSG_REPLY, seq, NULL, 0,
		                    NULL, 0);
	default:
		/* Replies and errors are not requests. */
		return ssq_msg_send_error(c->fd, seq, -EBADMSG,
		                          "message type 0x%x is not a request",
		                          m->hdr.type);
	}
}

static void serve_client(struct ssqd *d, struct ssqd_client *c)
{
	struct ssq_msg m;
	char why[160];
	int rc = ssq_msg_recv(c->fd, &m, NULL, 0, NULL, 0, why, sizeof(why));

	if (c->refused) {
		if (rc != -ETIMEDOUT && rc != -EAGAIN) {
			ssq_msg_send_error(c->fd, rc ? 0 : m.hdr.seq, -EACCES,
			                   "uid %u / gid %u may not use this ssqd (see "
			                   "--allow-uid, --allow-gid)",
			                   (unsigned)c->uid, (unsigned)c->gid);
			drop_client(d, c);
		}
		return;
	}

	if (rc == -EBADMSG || rc == -EPROTO) {
		/* Bad input gets an answer and the connection stays usable. */
		fprintf(stderr, "ssqd: client pid %d: %s\n", (int)c->pid, why);
		if (ssq_msg_send_error(c->fd, 0, rc, "%s", why) == 0)
			return;
	}
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return;
	if (rc || ssqd_handle(d, c, &m) < 0)
		drop_client(d, c);
}

/*
 * The progress engine of last resort: route completions nobody is polling
 * for (so `completed` and the owners' rings advance), and retry heals that
 * had to wait.
 */
static void progress(struct ssqd *d)
{
	unsigned i;

	reap_graves(d);
	for (i = 0; i < d->hdr->nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];

		if (!q->ctl || __atomic_load_n(&d->hdr->queues[i].state,
		                               __ATOMIC_ACQUIRE) != SSQ_QUEUE_READY)
			continue;
		if (q->heal_pending)
			q->heal_pending =
			    ssq_ctl_heal(&q->prod, d->opt.heal_ms) == -ETIMEDOUT;
		ssq__try_route(&q->prod);
	}
}

int ssqd_serve(struct ssqd *d)
{
	struct pollfd pfd[SSQD_MAX_CLIENTS + 2];
	struct ssqd_client *who[SSQD_MAX_CLIENTS + 2];
	int i, n, rc;

	while (!d->stop) {
		n = 0;
		pfd[n].fd = d->listen_fd;
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		pfd[n].fd = d->peer_listen_fd; /* -1 once connected: poll skips it */
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
			if (d->clients[i].fd <= 0)
				continue;
			pfd[n].fd = d->clients[i].fd;
			pfd[n].events = POLLIN;
			who[n++] = &d->clients[i];
		}
		rc = poll(pfd, (nfds_t)n, PROGRESS_MS);
		progress(d);
		if (rc <= 0)
			continue;
		for (i = 2; i < n; i++) {
			if (pfd[i].revents & POLLIN)
				serve_client(d, who[i]);
			else if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
				drop_client(d, who[i]);
		}
		if (pfd[0].revents & POLLIN)
			accept_client(d);
		if (pfd[1].revents & POLLIN)
			accept_peer(d);
	}
	return 0;
}
