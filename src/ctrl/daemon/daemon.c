/* SPDX-License-Identifier: MIT */
/*
 * ssqd's body, part one: build the arena and the shared queues (loopback,
 * or against a peer ssqd), tear them down, and recover a queue from an
 * error. Serving clients is daemon_serve.c. ssqd owns every device object;
 * a client only maps memory and rings doorbells, so no client's death can
 * take a QP down with it.
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
#include "ctrl/daemon/daemon.h"
#include "ctrl/backend/mlx5_list.h"
#include "ctrl/proto/msg.h"

#define PEER_TIMEOUT_MS  30000
#define PEER_EXCHANGE_MS 5000 /* a connected peer answers at once */

void ssqd_options_default(struct ssqd_options *o)
{
	memset(o, 0, sizeof(*o));
	o->nqueues = 1;
	o->sq_wqebbs = 1024;
	o->cqes = 1024;
	o->data_mib = 64;
	o->signal_every = 64;
	o->recv_depth = 256;
	o->recv_size = 4096;
	o->heal_ms = 50;
	o->hugepages = SSQ_HUGEPAGES_AUTO;
	o->port = 1;
	o->gid_index = -1;
	o->allow_uid = -1;
	o->allow_gid = -1;
	o->listen_fd = -1;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Bytes one shared queue (and its loopback peer) takes in the arena, generously. */
static uint64_t queue_bytes(const struct ssqd_options *o)
{
	uint64_t rq = o->recv_depth ? o->recv_depth : 1;
	uint64_t one = align_up((uint64_t)o->sq_wqebbs * 64, 4096) +
	               align_up((uint64_t)o->cqes * 64, 4096) + align_up(rq * 64, 4096) +
	               align_up((uint64_t)shm_rcq_cqes((uint32_t)rq) * 64, 4096) +
	               6 * 4096 + 64 * 64;

	/* libmlx5 adds its own rounding: double it. */
	return 2 * 2 * one + align_up(ssq_ctl_size(o->sq_wqebbs), 4096) +
	       ssqd_recv_log_bytes(o);
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

	q->ctl = shm_arena_alloc(&d->arena, ssq_ctl_size(ring), 4096);
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
	int two_hosts = d->opt.listen_port || d->opt.connect_to;
	/* The receive pool sits at the QP that receives: ours with a peer ssqd. */
	int rc = d->ops->create_queue(d->backend, d->opt.sq_wqebbs, d->opt.cqes,
	                              two_hosts ? d->opt.recv_depth : 0, d->opt.port,
	                              &q->local, why, whylen);

	if (rc)
		return rc;
	rc = make_ctl(d, q, why, whylen);
	if (rc)
		return rc;
	if (!two_hosts) {
		/*
		 * Loopback: the other end lives in ssqd too, on the emulated
		 * device's second port (its second host), or on the same port of a
		 * ConnectX; it receives what the queue sends.
		 */
		q->loopback = 1;
		rc = d->ops->create_queue(d->backend, 64, 64, d->opt.recv_depth,
		                          strcmp(d->ops->kind, "emu") ? d->opt.port : 2,
		                          &q->peer, why, whylen);
		if (rc)
			return rc;
	}
	rc = ssqd_recv_alloc(d, i, why, whylen);
	if (rc)
		return rc;
	return d->ops->uar_map(d->backend, &q->local, &q->uar);
}

static void local_addr(struct ssqd *d, const struct ssqd_bqueue *b, unsigned i,
                       uint32_t psn, struct proto_peer_addr *a)
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

static int connect_one(struct ssqd *d, struct ssqd_bqueue *b, uint32_t my_psn,
                       const struct proto_peer_addr *peer, char *why, size_t whylen)
{
	struct ssqd_qp_remote r;
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
	if (d->ops->set_remote) {
		int rc = d->ops->set_remote(d->backend, b, peer->gid, why, whylen);

		if (rc)
			return rc;
	}
	return ssqd_qp_connect(d->ops, d->backend, b, mtu, d->opt.gid_index, my_psn, &r,
	                       why, whylen);
}

/*
 * --connect: exchange addresses with the listening peer now, rc_pingpong
 * style; any failure (unreachable, refused, truncated or malformed reply)
 * ends the setup with the reason. The connection stays open: its close
 * tells ssqd the peer is gone.
 */
static int peer_connect(struct ssqd *d, const struct proto_peer_addr *local,
                        struct proto_peer_addr *remote, char *why, size_t whylen)
{
	int s, rc;

	s = ssqd_link_connect(d->opt.connect_to, PEER_TIMEOUT_MS, why, whylen);
	if (s < 0)
		return s;
	rc = ssqd_link_exchange(s, local, remote, d->opt.nqueues, PEER_TIMEOUT_MS, why,
	                        whylen);
	if (rc) {
		close(s);
		return rc;
	}
	ssqd_link_keepalive(s);
	d->peer_fd = s;
	return 0;
}

void ssqd_publish_queue(struct ssqd *d, unsigned i, const struct proto_peer_addr *peer)
{
	struct shm_queue_layout *l = &d->hdr->queues[i];
	struct ssqd_queue *q = &d->queues[i];

	snprintf(l->name, sizeof(l->name), "q%u", i);
	l->qpn = q->local.qpn;
	l->peer_qpn = peer->qpn;
	l->cqn = q->local.dv_cq.cqn;
	l->sq_wqe_cnt = q->local.dv_qp.sq.wqe_cnt;
	l->cqe_cnt = q->local.dv_cq.cqe_cnt;
	l->max_inline = q->local.max_inline;
	l->max_sge = q->local.max_sge;
	l->sq_off = shm_arena_off(&d->arena, q->local.dv_qp.sq.buf);
	l->qp_dbrec_off = shm_arena_off(&d->arena, q->local.dv_qp.dbrec);
	l->cq_off = shm_arena_off(&d->arena, q->local.dv_cq.buf);
	l->cq_dbrec_off = shm_arena_off(&d->arena, q->local.dv_cq.dbrec);
	l->uar_off = (uint64_t)q->uar.offset;
	l->bf_reg_off = q->uar.reg_off;
	l->bf_size = q->local.dv_qp.bf.size;
	l->peer_data_iova = peer->data_iova;
	l->peer_key = peer->data_rkey;
	l->ctl_off = shm_arena_off(&d->arena, q->ctl);
	l->ctl_len = ssq_ctl_size(l->sq_wqe_cnt);
	/* Readers load state with acquire: everything above is visible first. */
	__atomic_store_n(&l->state, SSQ_QUEUE_READY, __ATOMIC_RELEASE);
}

/* Connect every local QP to its remote address and publish the queues. */
static int connect_all(struct ssqd *d, const struct proto_peer_addr *remote, char *why,
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
		rc = ssqd_recv_arm(d, i, why, whylen);
		if (rc)
			return rc;
		ssqd_publish_queue(d, i, &remote[i]);
	}
	return 0;
}

static int bring_up(struct ssqd *d, char *why, size_t whylen)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	unsigned i;
	int rc;

	if ((d->opt.listen_port || d->opt.connect_to) && d->ops->peer_mode) {
		rc = d->ops->peer_mode(d->backend, why, whylen);
		if (rc)
			return rc;
	}
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
		d->peer_listen_fd = ssqd_link_listen(d->opt.listen_port, why, whylen);
		return d->peer_listen_fd < 0 ? d->peer_listen_fd : 0;
	}
	if (d->opt.connect_to) {
		rc = peer_connect(d, d->local_addrs, remote, why, whylen);
		d->peer_ever = 1;
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
 * The listening socket stays open: a second peer while the first is
 * healthy is refused (both sides say why); one that comes after the first
 * died, or after the queues failed, replaces it and the queues are
 * brought up again against it (ssqd_peer_rebring).
 */
void ssqd_accept_peer(struct ssqd *d)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	char why[256], from[80];
	int s = ssqd_peer_accept(d, from, sizeof(from)), rc;

	if (s < 0)
		return;
	if (d->peer_ever) {
		rc = ssqd_peer_rebring(d, s, why, sizeof(why));
		if (rc) {
			close(s);
			fprintf(stderr,
			        "ssqd: peer %s refused: %s; queues stay in error, still "
			        "waiting for a peer on port %u\n",
			        from, why, d->opt.listen_port);
		} else {
			fprintf(stderr,
			        "ssqd: new peer %s connected, %u queue(s) ready again\n",
			        from, d->opt.nqueues);
		}
		return;
	}
	rc = ssqd_link_exchange(s, d->local_addrs, remote, d->opt.nqueues,
	                        PEER_EXCHANGE_MS, why, sizeof(why));
	if (rc) {
		close(s);
		fprintf(stderr,
		        "ssqd: peer refused: %s; still waiting for a peer on port %u\n",
		        why, d->opt.listen_port);
		return;
	}
	d->peer_ever = 1;
	rc = connect_all(d, remote, why, sizeof(why));
	if (rc) {
		close(s);
		ssqd_peer_fence_all(d);
		fprintf(stderr, "ssqd: connecting to the peer: %s; queues in error\n",
		        why);
		return;
	}
	ssqd_link_keepalive(s);
	d->peer_fd = s;
	fprintf(stderr, "ssqd: peer %s connected, %u queue(s) ready\n", from,
	        d->opt.nqueues);
}

static int open_socket(struct ssqd *d, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	int s;

	if (d->opt.listen_fd >= 0) {
		/* Handed over listening (ssqd.c checked it): serve it as it is. */
		d->listen_fd = d->opt.listen_fd;
		return 0;
	}
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
	/* Clients' part of the data arena, then the receive pools' buffers. */
	uint64_t data_len =
	             align_up((o->data_mib << 20) + ssqd_recv_data_bytes(o), 2u << 20),
	         hdr_len = align_up(sizeof(*d->hdr), 4096);
	uint64_t total;
	void *data;
	int rc;

	d->listen_fd = -1;
	d->peer_listen_fd = -1;
	d->peer_fd = -1;
	/* The data arena's bound (--data-mib's), receive buffers included. */
	if ((o->data_mib << 20) + ssqd_recv_data_bytes(o) > (64ull << 30)) {
		snprintf(
		    why, whylen,
		    "receive pools of --recv-depth %u x 2 buffers x --recv-size %u x "
		    "%u queue(s) take %llu MiB: with --data-mib %llu, more than the "
		    "65536 MiB a data arena may have",
		    o->recv_depth, o->recv_size, o->nqueues,
		    (unsigned long long)(ssqd_recv_data_bytes(o) >> 20),
		    (unsigned long long)o->data_mib);
		return -E2BIG;
	}
	srand48(getpid() ^ time(NULL));
	if (!o->device)
		d->ops = ssqd_mlx5_sysfs_count() ? &ssqd_backend_mlx5 : &ssqd_backend_emu;
	else
		d->ops =
		    strcmp(o->device, "emu") ? &ssqd_backend_mlx5 : &ssqd_backend_emu;

	total = align_up(hdr_len + o->nqueues * queue_bytes(o) + (1u << 20), 2u << 20) +
	        data_len;
	rc = shm_arena_create(&d->arena, total, o->hugepages, "ssqd", why, whylen);
	if (rc)
		return rc;
	d->hdr = shm_arena_alloc(&d->arena, hdr_len, 4096);
	d->hdr->magic = SSQ_LAYOUT_MAGIC;
	d->hdr->version = SSQ_LAYOUT_VERSION;
	d->hdr->header_size = sizeof(*d->hdr);
	d->hdr->queue_layout_size = sizeof(struct shm_queue_layout);
	d->hdr->arena_len = d->arena.len;
	d->hdr->hugepages = (uint32_t)d->arena.hugepages;
	/* Clients (the benchmark tools) must know their RDMA goes to a peer. */
	if (o->listen_port || o->connect_to)
		d->hdr->flags |= SSQ_ARENA_PEER;

	rc = d->ops->open(&d->backend, o->device, &d->arena, why, whylen);
	if (rc)
		goto fail;
	snprintf(d->hdr->device, sizeof(d->hdr->device), "%s",
	         strcmp(d->ops->kind, "emu") ? (o->device ? o->device : "mlx5") : "emu");

	/* The data arena: at the end, hugepage-aligned, one MR at a fixed IOVA. */
	d->arena.used = d->arena.len - data_len;
	data = shm_arena_alloc(&d->arena, data_len, 2u << 20);
	if (!data) {
		snprintf(why, whylen, "the arena has no room for the %llu MiB data arena",
		         (unsigned long long)o->data_mib);
		rc = -ENOSPC;
		goto fail;
	}
	d->arena.used = hdr_len; /* queues go between the header and the data arena */
	d->hdr->data_off = shm_arena_off(&d->arena, data);
	d->hdr->data_len = data_len;
	d->hdr->data_iova = SSQD_DATA_IOVA;
	rc = d->ops->reg_data(d->backend, data, data_len, SSQD_DATA_IOVA,
	                      &d->hdr->data_key, why, whylen);
	if (rc)
		goto fail;
	ssqd_data_init(&d->data, d->hdr->data_off, o->data_mib << 20);

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
	rc = ssqd_recv_start(d);
	if (rc) {
		snprintf(why, whylen, "starting the receive poller: %s", strerror(-rc));
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
	if (d->peer_fd >= 0) {
		close(d->peer_fd);
		d->peer_fd = -1;
	}
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		if (d->listen_fd != d->opt.listen_fd) /* ours, not a handed-over one */
			unlink(d->opt.socket_path);
		d->listen_fd = -1;
	}
	ssqd_recv_stop(d); /* before the device: it polls the device's CQs */
	if (d->backend) {
		d->ops->stop(d->backend);
		d->ops->close(d->backend);
		d->backend = NULL;
	}
	shm_arena_destroy(&d->arena);
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
int ssqd_recover_queue(struct ssqd *d, unsigned qi, char *why, size_t whylen)
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

	ssqd_recv_pause(d, qi); /* nothing posted into a QP being reset */
	ssqd_qp_attr_reset(&attr, &mask);
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
	/* The RQ came back empty: post the receive pool again. */
	rc = ssqd_recv_arm(d, qi, why, whylen);
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
