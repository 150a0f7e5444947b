/* SPDX-License-Identifier: MIT */
/*
 * ssqd's bring-up and teardown: the arena, the device, the shared queues
 * (loopback, or against a peer ssqd), the client socket, and all of it
 * torn down again. Serving clients is serve.c; one queue's making,
 * connecting and recovery is queues/queue.c. ssqd owns every device object;
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
#include <linux/capability.h>
#include <time.h>
#include "ctrl/backend/fork_safe.h"
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/backend/mlx5_list.h"
#include "ctrl/daemon/memlock.h"
#include "ctrl/proto/msg.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define PEER_TIMEOUT_MS 30000

/* Bytes one shared queue (and its loopback peer) takes in the arena, generously. */
static uint64_t queue_bytes(const struct ssqd_options *o)
{
	uint64_t rq = o->recv_depth ? o->recv_depth : 1;
	/*
	 * The SQ ssqd asks for (queues/queue.c: exactly --sq-size WQEBBs with
	 * libmlx5 44's sizing) and the send CQ that goes with it. A device that
	 * makes more finds the arena's end at the data arena (arena.limit):
	 * setup fails saying so rather than overlap the data MR.
	 */
	uint64_t one =
	    ssqd_align_up((uint64_t)o->sq_wqebbs * 64, 4096) +
	    ssqd_align_up((uint64_t)shm_scq_cqes(o->sq_wqebbs, o->cqes) * 64, 4096) +
	    ssqd_align_up(rq * 64, 4096) +
	    ssqd_align_up((uint64_t)shm_rcq_cqes((uint32_t)rq) * 64, 4096) + 6 * 4096 +
	    64 * 64;

	/* libmlx5 adds its own rounding: double it. */
	return 2 * 2 * one + ssqd_align_up(ssq_ctl_size(o->sq_wqebbs), 4096) +
	       ssqd_recv_log_bytes(o);
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
	/* --peer-key: both sides prove they hold it first (peers/auth.c). */
	rc = d->peer_key_len
	         ? ssqd_link_auth_dial(d, &d->peers[0], s, PEER_TIMEOUT_MS, why, whylen)
	         : 0;
	if (!rc)
		rc = ssqd_link_exchange(s, local, remote, d->opt.nqueues, PEER_TIMEOUT_MS,
		                        &d->peers[0].auth, why, whylen);
	if (rc) {
		close(s);
		return rc;
	}
	ssqd_link_keepalive(s);
	ssqd_peer_link_to(d, &d->peers[0], SSQD_LINK_LINKED, s);
	d->peers[0].ever = 1;
	return 0;
}

/*
 * Say once how the queues reach their peers: the port's link layer and
 * MTU, and which GID the GRH carries and why (or that there is none).
 */
static int port_log(struct ssqd *d, char *why, size_t whylen)
{
	struct ssqd_port_info pi;
	int rc = d->ops->query_port(d->backend, d->opt.port, d->opt.gid_index, &pi, why,
	                            whylen);

	if (rc)
		return rc;
	fprintf(stderr, "ssqd: port %u: %s, active MTU %u, LID 0x%x; %s\n", d->opt.port,
	        ssqd_link_layer_str(pi.link_layer), 128u << pi.active_mtu, pi.lid,
	        pi.gid_why);
	return 0;
}

/* Queues @first.. on: each QP connected to its other end inside ssqd, READY. */
static int loopback_up(struct ssqd *d, unsigned first, char *why, size_t whylen)
{
	struct proto_peer_addr remote;
	unsigned i;
	int rc;

	for (i = first; i < d->opt.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];
		uint32_t ppsn = ssqd_queue_new_psn();

		rc = ssqd_queue_local_addr(d, &q->peer, i, ppsn, &remote, why, whylen);
		if (rc)
			return rc;
		q->peer_psn = ppsn;
		/* The loopback end's side of the handshake, done in place. */
		rc = ssqd_queue_connect(d, &q->peer, ppsn, &d->local_addrs[i], why,
		                        whylen);
		if (!rc)
			rc = ssqd_queue_connect(d, &q->local, d->psn[i], &remote, why,
			                        whylen);
		if (rc)
			return rc;
		q->remote = remote; /* for recovery */
		rc = ssqd_recv_arm(d, i, why, whylen);
		if (rc)
			return rc;
		ssqd_queue_publish(d, i, &remote);
	}
	return 0;
}

static int bring_up(struct ssqd *d, char *why, size_t whylen)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	unsigned i;
	int rc;

	if (d->npeers && d->ops->peer_mode) {
		rc = d->ops->peer_mode(d->backend, why, whylen);
		if (rc)
			return rc;
	}
	rc = port_log(d, why, whylen);
	if (rc)
		return rc;
	for (i = 0; i < d->opt.nqueues; i++) {
		rc = ssqd_queue_make(d, i, why, whylen);
		if (rc)
			return rc;
		d->psn[i] = ssqd_queue_new_psn();
		rc = ssqd_queue_local_addr(d, &d->queues[i].local, i, d->psn[i],
		                           &d->local_addrs[i], why, whylen);
		if (rc)
			return rc;
		/* Listed before they are ready, so clients can see them come up. */
		ssqd_queue_name(d, i, d->own.queues[i].name);
		memcpy(d->hdr->queues[i].name, d->own.queues[i].name, SSQ_NAME_MAX);
	}
	d->hdr->nqueues = d->own.nqueues = d->opt.nqueues;
	/* A cluster's own queues, after the peers'. */
	if (d->opt.self_queues) {
		rc = loopback_up(d, d->npeers * d->opt.peer_queues, why, whylen);
		if (rc)
			return rc;
	}
	if (d->opt.listen_port) {
		/*
		 * Queues come up as their peers link: ssqd_serve() accepts them
		 * and dials the ones this ssqd dials. A tenant's ssqd binds no
		 * port: its links come from its parent's (peers/tenant.c).
		 */
		if (d->opt.tenant_fd >= 0)
			return 0;
		d->peer_listen_fd = ssqd_link_listen(d->opt.listen_port, why, whylen);
		return d->peer_listen_fd < 0 ? d->peer_listen_fd : 0;
	}
	if (d->opt.connect_to) {
		rc = peer_connect(d, d->local_addrs, remote, why, whylen);
		return rc ? rc : ssqd_queue_connect_all(d, remote, why, whylen);
	}
	return loopback_up(d, 0, why, whylen);
}

static int open_socket(struct ssqd *d, char *why, size_t whylen)
{
	if (d->opt.listen_fd >= 0) {
		/* Handed over listening (main.c checked it): serve it as it is. */
		d->listen_fd = d->opt.listen_fd;
		return 0;
	}
	d->listen_fd = ssqd_socket_listen(d->opt.socket_path, why, whylen);
	return d->listen_fd < 0 ? d->listen_fd : 0;
}

/*
 * Every client slot free (-1), before anything can fail: ssqd started with
 * stdin closed gets fd 0 for its first client, so 0 cannot mean free.
 */
static void clients_init(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		d->clients[i].fd = d->clients[i].pidfd = -1;
}

/*
 * Said once at start where the kernel or a sandbox gives no pidfds (before
 * Linux 5.3; seccomp profiles that refuse pidfd_open): what ssqd does
 * instead (util/util.h). A tenant's ssqd runs on the same kernel: its
 * parent said it.
 */
static void say_no_pidfds(const struct ssqd *d)
{
	int rc = ssqd_pidfd_probe();

	if (!rc || d->opt.tenant_fd >= 0)
		return;
	fprintf(stderr,
	        SD_NOTICE "ssqd: no pidfds here (pidfd_open: %s): clients' processes "
	                  "are followed by pid and start time (/proc/PID/stat), a "
	                  "dropped client's exit is looked for every loop rather "
	                  "than polled, and a kill (a stalled or dropped client) "
	                  "checks the start time right before kill(2)\n",
	        strerror(-rc));
}

int ssqd_setup(struct ssqd *d, char *why, size_t whylen)
{
	const struct ssqd_options *o = &d->opt;
	/* Clients' part of the data arena, then the receive pools' buffers. */
	uint64_t data_len = ssqd_align_up((o->data_mib << 20) + ssqd_recv_data_bytes(o),
	                                  2u << 20),
	         hdr_len = ssqd_align_up(sizeof(*d->hdr), 4096);
	uint64_t total;
	const char *dev = o->device;
	char picked[64];
	void *data;
	int rc;

	d->listen_fd = -1;
	d->peer_listen_fd = -1;
	clients_init(d);
	ssqd_peers_init(d);
	ssqd_knocks_init(d);
	/* --peer-key read (and checked) before anything else is built. */
	rc = ssqd_peer_auth_init(d, why, whylen);
	if (rc)
		return rc;
	/*
	 * First: a second ssqd on a served path builds nothing before it says
	 * so. A socket handed over by systemd is systemd's to guard.
	 */
	d->socket_lock_fd = -1;
	if (o->listen_fd < 0) {
		d->socket_lock_fd = ssqd_socket_claim(o->socket_path, why, whylen);
		if (d->socket_lock_fd < 0)
			return d->socket_lock_fd;
	}
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

	total =
	    ssqd_align_up(hdr_len + o->nqueues * queue_bytes(o) + (1u << 20), 2u << 20) +
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
	if (d->npeers)
		d->hdr->flags |= SSQ_ARENA_PEER;

	/* Before libibverbs reads its environment (fork_safe.h). */
	ssqd_fork_safe_prepare(&d->arena);
	/*
	 * The device, after that (ssqd_mlx5_find initialises libibverbs):
	 * no --device, the first one libmlx5 drives, else the emulated one,
	 * said on stderr; a named one must be mlx5 (backend_mlx5.c refuses
	 * anything else by name), never the emulator in its place.
	 */
	if (!o->device) {
		d->ops = ssqd_mlx5_find(NULL, picked, sizeof(picked))
		             ? &ssqd_backend_emu
		             : &ssqd_backend_mlx5;
		fprintf(stderr, "ssqd: no --device: %s%s\n",
		        d->ops == &ssqd_backend_emu
		            ? "no mlx5 device (mlx5dv_is_supported), the emulated device"
		            : "the first mlx5 device, ",
		        d->ops == &ssqd_backend_emu ? "" : picked);
		/* That one by name: what clients are told they run on. */
		if (d->ops == &ssqd_backend_mlx5)
			dev = picked;
	} else {
		d->ops =
		    strcmp(o->device, "emu") ? &ssqd_backend_mlx5 : &ssqd_backend_emu;
	}
	if (d->ops == &ssqd_backend_mlx5 && (o->conf.emu_link_layer || o->conf.emu_mtu))
		fprintf(stderr, "ssqd: --emu-link-layer / --emu-mtu are the emulated "
		                "device's; the mlx5 device's ports say their own\n");
	/*
	 * With peers, remote access is a capability (issue 28 item 1): no
	 * buffer or registration is reachable from a peer but through the
	 * window its owner granted (clients/grant.c). Loopback has no peer
	 * host; --arena-rkey (one key for all) and --no-grants are the
	 * operator's choice; a
	 * device without windows (no grant op) keeps the buffers' own
	 * remote keys.
	 */
	d->grants_only = (d->ops->grant || d->ops->grant_post) && !o->arena_rkey &&
	                 !o->no_grants && (o->listen_port || o->connect_to || o->npeers);
	rc = d->ops->open(&d->backend, dev, &d->arena, &o->conf, why, whylen);
	if (rc)
		goto fail;
	/*
	 * A ConnectX pins the arena (the data MR, the queue buffers), and with
	 * buffer keys every buffer again as its own MR: the emulated device
	 * pins nothing. After the open (which pins nothing either), so that
	 * a device that is not there is said first.
	 */
	if (d->ops == &ssqd_backend_mlx5) {
		rc = ssqd_memlock_check(d->arena.len + (o->arena_rkey ? 0 : data_len),
		                        why, whylen);
		if (rc)
			goto fail;
	}
	snprintf(d->hdr->device, sizeof(d->hdr->device), "%.*s",
	         (int)sizeof(d->hdr->device) - 1,
	         strcmp(d->ops->kind, "emu") ? dev : "emu");
	/*
	 * The emulated device checks a client's private memory in its
	 * /proc/PID/maps (backend/proc_maps.c), which another uid may read
	 * only with CAP_SYS_PTRACE (proc_mem_open's PTRACE_MODE_READ): a
	 * per-user ssqd serving other uids refuses their registrations, said
	 * once here rather than discovered at the first.
	 */
	if (d->ops == &ssqd_backend_emu && (o->allow_uid >= 0 || o->allow_gid >= 0) &&
	    !ssqd_self_cap(CAP_SYS_PTRACE))
		fprintf(stderr, SD_WARNING
		        "ssqd: --allow-uid/--allow-gid on the emulated device without "
		        "CAP_SYS_PTRACE: other uids' ssq_mem_reg and ssq_mem_reg_fd "
		        "fail EACCES (their /proc/PID/maps is closed to this uid)\n");

	say_no_pidfds(d);

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
	/* ... and never inside it: the data MR covers it from here on. */
	d->arena.limit = d->hdr->data_off;
	d->hdr->data_len = data_len;
	d->hdr->data_iova = SSQD_DATA_IOVA;
	rc = d->ops->reg_data(d->backend, data, data_len, SSQD_DATA_IOVA, o->arena_rkey,
	                      &d->hdr->data_key, why, whylen);
	if (!o->arena_rkey)
		d->hdr->flags |= SSQ_ARENA_BUFFER_KEYS;
	if (rc)
		goto fail;
	ssqd_data_init(&d->data, d->hdr->data_off, o->data_mib << 20);
	/* No client has mapped the header yet: what it says now is ssqd's. */
	d->own = *d->hdr;

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
	ssqd_mr_limits(d);
	rc = ssqd_recv_start(d);
	if (rc) {
		snprintf(why, whylen, "starting the receive poller: %s", strerror(-rc));
		goto fail;
	}
	rc = ssqd_send_arm_start(d);
	if (rc) {
		snprintf(why, whylen, "starting the send CQs' arm threads: %s",
		         strerror(-rc));
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
	int rc;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0) {
			close(d->clients[i].fd);
			if (d->clients[i].pidfd >= 0)
				close(d->clients[i].pidfd);
			d->clients[i].fd = d->clients[i].pidfd = -1;
		}
	if (d->peer_listen_fd >= 0) {
		close(d->peer_listen_fd);
		d->peer_listen_fd = -1;
	}
	for (i = 0; i < SSQD_MAX_KNOCKS; i++)
		if (d->knocks[i].fd >= 0) {
			close(d->knocks[i].fd);
			d->knocks[i].fd = -1;
		}
	for (i = 0; i < d->npeers; i++)
		ssqd_peer_close_link(d, &d->peers[i]);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		if (d->listen_fd != d->opt.listen_fd) /* ours, not a handed-over one */
			unlink(d->opt.socket_path);
		d->listen_fd = -1;
	}
	if (d->socket_lock_fd >= 0) {
		/* The path is free for the next ssqd, and no lock file stays. */
		ssqd_socket_unclaim(d->opt.socket_path, d->socket_lock_fd);
		d->socket_lock_fd = -1;
	}
	/*
	 * Clients outlive ssqd and may still hold its UAR (on a ConnectX the
	 * uverbs file stays open with it, and the QPs with it): fence every
	 * queue, so that what they post next gets -EIO instead of running on
	 * a QP nobody heals or routes for any more.
	 */
	for (i = 0; d->hdr && i < d->opt.nqueues; i++)
		ssqd_queue_fence(d, i);
	ssqd_recv_stop(d); /* before the device: it polls the device's CQs */
	ssqd_send_arm_stop(d);
	if (d->backend) {
		d->ops->stop(d->backend);
		ssqd_grants_drop_all(d);
		ssqd_mr_drop_all(d);
		d->ops->close(d->backend);
		d->backend = NULL;
	}
	/*
	 * A tenant's ssqd exiting idle empties its arena: a client that kept
	 * its mapping after hanging up would otherwise keep the arena's pages
	 * past this exit, and its uid's next connection starts a new ssqd
	 * with a new arena - one more per idle exit, without bound. Nothing
	 * of anyone's is in it (tenant_idle.c: no client, grant, link).
	 */
	rc = d->tenant_idle_exit ? shm_arena_destroy_emptied(&d->arena) : 0;
	if (rc == -EOPNOTSUPP)
		fprintf(stderr, SD_NOTICE "ssqd: tenant: a hugepage arena is not emptied "
		                          "at exit (EAL's heap shares its file): a "
		                          "client's mapping of it keeps its pages\n");
	else if (rc)
		fprintf(stderr, SD_WARNING "ssqd: tenant: emptying the arena: %s\n",
		        strerror(-rc));
	shm_arena_destroy(&d->arena);
}
