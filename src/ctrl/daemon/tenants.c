/* SPDX-License-Identifier: MIT */
/*
 * Tenants (--tenants uid|gid; issue 28 item 2): the clients of each uid (or
 * primary gid) other than ssqd's own get an ssqd of their own - a process
 * this one starts from its own binary and command line, with its own
 * device context, PD, arena and queues - and this ssqd hands each of their
 * connections to it (SCM_RIGHTS over a socketpair), so that nothing of one
 * tenant is named in, mapped by or reachable from another's.
 *
 * Why a process, not a PD per tenant inside one ssqd: a WQE's lkey is
 * checked against its QP's PD (rxe: lookup_mr in
 * drivers/infiniband/sw/rxe/rxe_mr.c refuses an MR whose PD is not the
 * QP's; a ConnectX's mkey context carries its pd, mlx5_ifc_mkc_bits in
 * include/linux/mlx5/mlx5_ifc.h, and a WQE naming another PD's mkey
 * completes MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, mlx5dv.h), and
 * src/emu/translate.c's key_get does the same. But every client of one
 * ssqd maps the one arena read-write - every queue's ring, control block
 * and doorbell record - and, on the emulated device, the one UAR file of
 * every QP's doorbell; on a ConnectX it holds ssqd's uverbs command fd. A client of
 * another tenant could write a WQE naming this tenant's keys into this tenant's ring and
 * ring its doorbell (or let ssqd's stall repair ring it): PDs alone would separate keys,
 * not tenants. Separate processes separate all of it, with the kernel's own rules (a
 * tenant never receives another's descriptors).
 *
 * Peers: a tenant's ssqd links to the same tenant's ssqd on each peer
 * host, over QPs of its own; the links to the peer port this ssqd owns
 * are handed over as clients' connections are, once their first message
 * said which tenant they are for (peers/tenant.c) - to a tenant's ssqd
 * that runs, never one started for them: only a client of this host
 * starts a tenant (or the command line, the one it names).
 *
 * Cost: a process, an arena (--data-mib) and the queues' QPs per tenant:
 * QPs per host are peers x queues x tenants. One tenant (--tenants none)
 * is the default.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/proto/msg.h"

/* Environment variables a tenant's ssqd is given at most. */
#define SSQD_TENANT_ENV 1024

int ssqd_tenant_of(const struct ssqd *d, const struct ucred *cr, uint32_t *key)
{
	if (d->opt.tenants == SSQD_TENANTS_UID) {
		*key = (uint32_t)cr->uid;
		return cr->uid != getuid();
	}
	if (d->opt.tenants == SSQD_TENANTS_GID) {
		*key = (uint32_t)cr->gid;
		return cr->gid != getgid();
	}
	return 0;
}

/*
 * What tenant @key's ssqd is run with, made before fork (the child of a
 * threaded process may call only async-signal-safe functions): our command
 * line less what options.c's tenant_drops names, after --tenant-fd @fd
 * and who it serves; our environment less NOTIFY_SOCKET (systemd's
 * notifications are ours alone).
 */
static struct tenant_cmd {
	char *argv[SSQD_MAX_ARGS + 8];
	char *envp[SSQD_TENANT_ENV + 1];
	char fd[16], key[16], idle[16];
} cmd;

static void tenant_cmd(const struct ssqd *d, uint32_t key, int fd, unsigned idle_ms)
{
	extern char **environ;
	int i, n = 0;

	/*
	 * The tenant's own words first: after ours they would follow a "--"
	 * of ours (getopt's end of options; ssqd takes it last) and be
	 * arguments, which a tenant's ssqd refuses. Nothing kept of ours
	 * overrides them: tenant_drops has --tenant-fd and --allow-*.
	 */
	snprintf(cmd.fd, sizeof(cmd.fd), "%d", fd);
	snprintf(cmd.key, sizeof(cmd.key), "%u", (unsigned)key);
	cmd.argv[n++] = d->opt.argv[0];
	cmd.argv[n++] = "--tenant-fd";
	cmd.argv[n++] = cmd.fd;
	cmd.argv[n++] =
	    d->opt.tenants == SSQD_TENANTS_UID ? "--allow-uid" : "--allow-gid";
	cmd.argv[n++] = cmd.key;
	snprintf(cmd.idle, sizeof(cmd.idle), "%u", idle_ms);
	cmd.argv[n++] = "--tenant-idle-ms";
	cmd.argv[n++] = cmd.idle;
	for (i = 1; i < d->opt.argc && i < (int)SSQD_MAX_ARGS; i++)
		if (!d->opt.arg_drop[i])
			cmd.argv[n++] = d->opt.argv[i];
	cmd.argv[n] = NULL;
	for (i = n = 0; environ[i] && n < (int)SSQD_TENANT_ENV; i++)
		if (strncmp(environ[i], "NOTIFY_SOCKET=", 14))
			cmd.envp[n++] = environ[i];
	cmd.envp[n] = NULL;
}

/*
 * The tenant the command line names (--allow-uid, --allow-gid), or -1:
 * it never exits idle, however it was started (at ssqd's start, or again
 * by a client after its ssqd died): peers' links find it, and a link
 * never starts a tenant (peers/tenant.c).
 */
static long tenant_named(const struct ssqd *d)
{
	long id = d->opt.tenants == SSQD_TENANTS_UID   ? d->opt.allow_uid
	          : d->opt.tenants == SSQD_TENANTS_GID ? d->opt.allow_gid
	                                               : -1;
	uint32_t own;

	/* The parent's own id, as its links name it: that one it serves itself. */
	(void)ssqd_peer_tenant(d, &own);
	return id < 0 || (uint32_t)id == own ? -1 : id;
}

/* How long tenant @key's ssqd waits idle before it asks to exit (0: never). */
static unsigned tenant_idle_ms(const struct ssqd *d, uint32_t key)
{
	return tenant_named(d) == (long)key ? 0 : d->opt.tenant_idle_ms;
}

/*
 * Start tenant @key's ssqd in slot @t, to exit after @idle_ms with nothing
 * to serve (0: never). 0, or -errno with @why.
 */
static int tenant_spawn(struct ssqd *d, struct ssqd_tenant *t, uint32_t key,
                        unsigned idle_ms, char *why, size_t whylen)
{
	pid_t parent = getpid(), pid;
	int sv[2], null_fd, i;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, whylen, "socketpair: %s", strerror(errno));
		return -errno;
	}
	tenant_cmd(d, key, sv[1], idle_ms);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0) {
		snprintf(why, whylen, "/dev/null: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -EIO;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		close(null_fd);
		return -EAGAIN;
	}
	if (pid == 0) {
		/* It ends with us: no tenant's ssqd outlives the one it serves for. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		close(sv[0]);
		if (fcntl(sv[1], F_SETFD, 0) < 0)
			_exit(1);
		/*
		 * Descriptors 0-2 open (on /dev/null if ours are closed, or close
		 * at exec): else the tenant's arena would be descriptor 0, which
		 * ssqd's tables take for "none".
		 */
		for (i = 0; i < 3; i++)
			if (fcntl(i, F_GETFD) < 0 || (fcntl(i, F_GETFD) & FD_CLOEXEC))
				if (null_fd == i ? fcntl(i, F_SETFD, 0) < 0
				                 : dup2(null_fd, i) < 0)
					_exit(1);
		/*
		 * Nothing else of ours: what a launcher left open without
		 * close-on-exec would otherwise live on in every tenant.
		 */
		if (sv[1] < 3)
			close_range(3, ~0u, 0);
		else if ((sv[1] > 3 && close_range(3, (unsigned)sv[1] - 1, 0)) ||
		         close_range((unsigned)sv[1] + 1, ~0u, 0))
			_exit(1);
		execve("/proc/self/exe", cmd.argv, cmd.envp);
		_exit(127);
	}
	close(sv[1]);
	close(null_fd);
	/* Never block on a tenant that does not take its connections. */
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	memset(t, 0, sizeof(*t));
	t->key = key;
	t->pid = pid;
	t->fd = sv[0];
	t->pidfd = t->arena_fd = -1;
	ssqd_tenant_started(d, key);
	fprintf(stderr, SD_NOTICE "ssqd: tenant %s %u: its ssqd is pid %d\n",
	        d->opt.tenants == SSQD_TENANTS_UID ? "uid" : "gid", (unsigned)key,
	        (int)pid);
	return 0;
}

/*
 * Signal @sig to slot @t's ssqd by its pidfd (one opened now if none is
 * held; kept, polled for its exit: ssqd_tenants_pollfds), so that it
 * reaches that process or none: kill(2) names whichever process has the
 * pid when it runs. kill only where no pidfd could be had (before Linux
 * 5.3): then it is our child not reaped yet (tenant_reap and
 * ssqd_tenants_stop alone reap it), whose pid no other process can have.
 */
static void tenant_signal(struct ssqd_tenant *t, int sig)
{
	if (t->pidfd < 0)
		t->pidfd = ssqd_pidfd_open(t->pid);
	if (t->pidfd >= 0)
		(void)ssqd_pidfd_signal(t->pidfd, sig); /* -ESRCH: gone already */
	else
		kill(t->pid, sig);
}

/*
 * Slot @t's ssqd reaped if it exited; exited but not reapable (ptraced),
 * out of the slot all the same (tenant_zombie.c): a slot is never held by
 * a process that is gone.
 */
static void tenant_reap(struct ssqd *d, struct ssqd_tenant *t)
{
	if (!ssqd_tenant_reap(d, t))
		(void)ssqd_tenant_bury(d, t);
}

/*
 * Every slot taken: is any held by an ssqd that is gone? Its socket's
 * end closed (POLLHUP: unix_release_sock sets the survivor's sk_shutdown
 * to SHUTDOWN_MASK, which unix_dgram_poll reports, net/unix/af_unix.c)
 * before the loop saw it - one poll for all, never a wait. Each such one
 * gets a pidfd, which says whether it exited (then reaped, or buried:
 * tenant_reap). 1 if a slot was freed.
 */
static int tenants_sweep(struct ssqd *d)
{
	struct pollfd pfd[SSQD_MAX_TENANTS];
	unsigned i, freed = 0;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		const struct ssqd_tenant *t = &d->tenants[i];

		pfd[i].fd = t->pid > 0 && !t->hup ? t->fd : -1;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
	}
	if (poll(pfd, SSQD_MAX_TENANTS, 0) < 0)
		return 0;
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct ssqd_tenant *t = &d->tenants[i];

		if (pfd[i].revents & (POLLHUP | POLLERR)) {
			t->hup = 1;
			if (t->pidfd < 0)
				t->pidfd = ssqd_pidfd_open(t->pid);
		}
		if (t->pid > 0 && (t->hup || t->dead)) {
			tenant_reap(d, t);
			freed += t->pid <= 0;
		}
	}
	return freed > 0;
}

/*
 * Tenant @key's live slot (*@fresh 0), a free one (1), one to wait for
 * (2), or NULL: all taken. A closing one (exiting idle) takes nothing
 * more: its tenant's next connection starts a new ssqd in another slot,
 * the old one's freed once it is reaped - or in that very slot, when no
 * other is free and @wait (a client's connection): the connection waits
 * there, parked (tenant_park.c), never the loop, for the old ssqd to go.
 * A peer's link starts nothing: it waits for nothing. A slot whose ssqd
 * is gone but whose parked connections are not handed over yet is theirs
 * (its uid's next connection waits there too, behind them).
 */
static struct ssqd_tenant *tenant_slot_scan(struct ssqd *d, uint32_t key, int wait,
                                            int *fresh)
{
	struct ssqd_tenant *free_slot = NULL, *closing = NULL, *other = NULL;
	unsigned i;

	*fresh = 0;
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct ssqd_tenant *t = &d->tenants[i];
		const struct ssqd_tenant_park *p = &d->tenant_parks[i];

		/* One that exited is reaped here, its slot freed. */
		tenant_reap(d, t);
		if (t->pid > 0 && t->key == key && !t->closing)
			return t;
		/* The first with room to wait, else any (refused: full). */
		if (((t->pid > 0 && t->key == key && (!p->n || p->key == key)) ||
		     (p->n && p->key == key)) &&
		    (!closing ||
		     d->tenant_parks[closing - d->tenants].n >= SSQD_TENANT_PARKED))
			closing = t;
		/*
		 * Another uid's ssqd exiting idle, nobody waiting for it: it
		 * agreed to go with nothing to serve, so it is killed for us
		 * as for its own uid (ssqd_tenants_tick) - else one uid whose
		 * closing ssqd are slow to go (stopped, ptraced at exit) would
		 * take slot after slot and keep every other uid out
		 * (tests/test_adv7t_closing_hog.c). One found dead is not: it
		 * may not be reapable for long (ssqd_tenant_pass).
		 */
		if (t->pid > 0 && t->closing && !t->dead && t->key != key && !p->n &&
		    !other)
			other = t;
		if (t->pid <= 0 && !p->n && !free_slot)
			free_slot = t;
	}
	if (!free_slot && (closing || other) && wait) {
		*fresh = 2;
		return closing ? closing : other;
	}
	*fresh = free_slot != NULL;
	return free_slot;
}

/*
 * tenant_slot_scan; with no slot free for @key, once more after the slots
 * of ssqd that are gone were freed (tenants_sweep): the loop may not have
 * seen their hang-up yet.
 */
static struct ssqd_tenant *tenant_slot(struct ssqd *d, uint32_t key, int wait, int *fresh)
{
	struct ssqd_tenant *t = tenant_slot_scan(d, key, wait, fresh);

	if ((!t || *fresh == 2) && tenants_sweep(d))
		t = tenant_slot_scan(d, key, wait, fresh);
	return t;
}

/* Send connection @fd (@what: 'c' a client's, 'p' a peer's link) over @t's socket. */
int ssqd_tenant_send(struct ssqd_tenant *t, int fd, char what)
{
	/* Never to one exiting idle (tenant_slot skips it): it would be lost. */
	if (t->closing)
		return -EPIPE;
	if (ssqd_fd_send(t->fd, &what, 1, fd, 0) != 1)
		return -errno;
	t->sent++; /* what its ask to exit must match (ssqd_tenants_events) */
	return 0;
}

/*
 * Does ssqd_tenant_send's -errno @rc say its ssqd's end of the socketpair
 * is closed (its ssqd dead, or as good as: it can never take a connection
 * again)? Only these, from unix_seqpacket_sendmsg and unix_dgram_sendmsg
 * (net/unix/af_unix.c) on a SOCK_SEQPACKET pair: ECONNRESET, sock_error's
 * sk_err that unix_release_sock sets on the survivor when the closed end
 * had messages unread; ENOTCONN, no peer (not ESTABLISHED, or
 * unix_peer_get NULL); EPIPE, the peer SOCK_DEAD or its RCV_SHUTDOWN
 * (unix_release_sock sets SHUTDOWN_MASK; -EPIPE too from ssqd_tenant_send
 * for a closing one); ECONNREFUSED, the same dead peer on the SOCK_DGRAM
 * branch, kept should the pair's type change. Every other error is ours
 * or the host's and passes: EAGAIN (its queue is full), ENOBUFS and ENOMEM
 * (sock_alloc_send_pskb and scm_send under memory pressure), ETOOMANYREFS
 * (unix_attach_fds: more descriptors in flight than RLIMIT_NOFILE, a
 * non-root ssqd) - none is the tenant's death, and killing a live tenant
 * for one would cut its uid's clients off (tests/test_adv7t_send_nobufs.c).
 */
int ssqd_tenant_gone(int rc)
{
	return rc == -EPIPE || rc == -ECONNRESET || rc == -ENOTCONN ||
	       rc == -ECONNREFUSED;
}

int ssqd_tenant_pass(struct ssqd *d, uint32_t key, int fd, char what, char *why,
                     size_t whylen)
{
	struct ssqd_tenant *t;
	int fresh, rc, tries;
	uint32_t own;

	for (tries = 0; tries < 2; tries++) {
		t = tenant_slot(d, key, what != 'p', &fresh);
		/*
		 * A peer's link goes only to a tenant running here: started
		 * for it, a stranger's TENANT messages (read before any proof)
		 * would fill every slot with tenants no client of this host
		 * asked for, and keep this host's own users out (-EUSERS).
		 */
		if (what == 'p' && (!t || fresh)) {
			ssqd_peer_tenant_none(ssqd_peer_tenant(d, &own), key, why,
			                      whylen);
			return -ENOENT;
		}
		if (!t) {
			snprintf(
			    why, whylen,
			    "ssqd serves %u tenants besides its own, the most it may "
			    "(--tenants)",
			    SSQD_MAX_TENANTS);
			return -EUSERS;
		}
		if (fresh == 2)
			return ssqd_tenant_park(d, t, key, fd, why, whylen);
		if (fresh) {
			rc = ssqd_tenant_backoff(d, key, why, whylen);
			if (!rc)
				rc = tenant_spawn(d, t, key, tenant_idle_ms(d, key), why,
				                  whylen);
			if (rc)
				return rc;
		}
		rc = ssqd_tenant_send(t, fd, what);
		if (rc == 0)
			return 0;
		if (rc == -EAGAIN) {
			snprintf(why, whylen,
			         "tenant %u's ssqd (pid %d) is not taking connections",
			         (unsigned)key, (int)t->pid);
			return -EAGAIN;
		}
		if (!ssqd_tenant_gone(rc)) {
			/* Alive as far as anyone knows: left alone, no failure. */
			snprintf(why, whylen,
			         "handing the connection to tenant %u's ssqd (pid %d) "
			         "failed: sendmsg: %s: connect again",
			         (unsigned)key, (int)t->pid, strerror(-rc));
			return rc;
		}
		/*
		 * It died (ssqd_tenant_gone), or is dying: killed, its slot
		 * closing (takes nothing more), reaped by the loop once it is
		 * gone (its pidfd wakes it: ssqd_tenants_events), never waited
		 * for here - it may not be reapable for long (a ptraced zombie
		 * is its tracer's first), and the loop serves everyone. Its
		 * failure counts now, so that its restart backs off as before:
		 * found dead, its status unknown till it is reaped (tenant_reap
		 * records it then, for its clients' backoff sentence). Once
		 * more with a new one, for a client, in another slot or, none
		 * free, waiting in this one (tenant_slot); a peer's link is
		 * refused above.
		 */
		tenant_signal(t, SIGKILL);
		t->closing = t->dead = t->hup = 1;
		ssqd_tenant_failed(d, key, SSQD_TENANT_FOUND_DEAD);
	}
	snprintf(why, whylen, "tenant %u's ssqd: %s", (unsigned)key, strerror(-rc));
	return rc;
}

/* Room for @key other than a closing slot: its live ssqd, or a free slot. */
static int tenant_room(const struct ssqd *d, uint32_t key)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		const struct ssqd_tenant *t = &d->tenants[i];

		if ((t->pid > 0 && t->key == key && !t->closing) ||
		    (t->pid <= 0 && !d->tenant_parks[i].n))
			return 1;
	}
	return 0;
}

/*
 * Slot @i's parked connections handed over in the order they came, each
 * as if it came now (ssqd_tenant_pass: the slot just freed, or any room
 * found meanwhile); one refused is told why, as at its accept.
 */
static void tenant_unpark(struct ssqd *d, unsigned i)
{
	struct ssqd_tenant_park *p = &d->tenant_parks[i];
	int fd[SSQD_TENANT_PARKED], rc;
	unsigned n = p->n, k;
	uint32_t key = p->key;
	char why[200];

	memcpy(fd, p->fd, sizeof(fd));
	p->n = 0; /* no longer held for them: ssqd_tenant_pass may take it */
	for (k = 0; k < n; k++) {
		rc = ssqd_tenant_pass(d, key, fd[k], 'c', why, sizeof(why));
		if (rc)
			proto_msg_send_error(fd[k], 0, rc, "%s", why);
		close(fd[k]);
	}
}

void ssqd_tenants_tick(struct ssqd *d, uint64_t now)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct ssqd_tenant *t = &d->tenants[i];
		struct ssqd_tenant_park *p = &d->tenant_parks[i];

		if (!p->n)
			continue;
		tenant_reap(d, t); /* WNOHANG: never waits */
		if (t->pid <= 0 || tenant_room(d, p->key)) {
			tenant_unpark(d, i);
			continue;
		}
		if (!p->kill_ns || now < p->kill_ns)
			continue;
		p->kill_ns = 0;
		if (t->dead) /* killed already (ssqd_tenant_pass) */
			continue;
		/*
		 * It has nothing to serve (no client, no link, every connection
		 * sent to it received: tenant_asks), so nothing is lost; reaped
		 * on a later tick, once its pidfd says it is gone.
		 */
		fprintf(stderr,
		        SD_NOTICE "ssqd: tenant %u: its ssqd (pid %d) exiting idle took "
		                  "over %u ms with %u connection(s) of uid %u waiting: "
		                  "killed\n",
		        (unsigned)t->key, (int)t->pid, ssqd_tenant_closing_wait_ms(),
		        p->n, (unsigned)p->key);
		tenant_signal(t, SIGKILL);
		t->killed = 1;
	}
}

int ssqd_tenants_start(struct ssqd *d, char *why, size_t whylen)
{
	long id = tenant_named(d);
	struct sigaction sa;
	unsigned i;
	int fresh;

	/*
	 * Empty slots, nothing closed: the table starts zeroed, and a zeroed
	 * slot's fd 0 is not ours (stdin, or, when ssqd started with it
	 * closed, the first descriptor it opened: its socket's lock file).
	 */
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		memset(&d->tenants[i], 0, sizeof(d->tenants[i]));
		d->tenants[i].fd = d->tenants[i].pidfd = d->tenants[i].arena_fd = -1;
		d->tenant_parks[i].n = 0;
	}
	for (i = 0; i < SSQD_TENANT_ZOMBIES; i++) {
		memset(&d->tenant_zombies[i], 0, sizeof(d->tenant_zombies[i]));
		d->tenant_zombies[i].fd = d->tenant_zombies[i].pidfd = -1;
		d->tenant_zombies[i].arena_fd = -1;
	}
	if (!d->opt.tenants)
		return 0;
	/*
	 * Our tenants' ssqd are ours to reap (tenant_reap), and a slot's pid
	 * is its ssqd's only while we have not (tenant_signal). Started with
	 * SIGCHLD ignored - execve keeps an ignored signal ignored - the
	 * kernel would reap each as it exits (do_notify_parent, kernel/
	 * signal.c: "autoreap" when the parent's SIGCHLD is SIG_IGN or
	 * SA_NOCLDWAIT): every waitpid fails ECHILD, no slot is ever freed,
	 * and a slot's pid is free for any process to get, which our stop
	 * would signal (tests/test_adv7t_sigchld_ign.c). So: the default.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	/*
	 * The one tenant named on the command line is started now, so that its
	 * first client does not wait for its set-up; others (root, the uids of
	 * an --allow-gid group under --tenants uid) at their first connection.
	 */
	if (id < 0)
		return 0;
	/* It is there for the peers' links too: it never exits idle. */
	return tenant_spawn(d, tenant_slot(d, (uint32_t)id, 1, &fresh), (uint32_t)id,
	                    tenant_idle_ms(d, (uint32_t)id), why, whylen);
}

/* How long ssqd's stop waits for its tenants' ssqd, all together. */
#define TENANTS_STOP_MS 10000 /* after SIGTERM: each stops as ssqd does */
#define TENANTS_KILL_MS 2000  /* after SIGKILL: to reap them */

/*
 * Reap every tenant's ssqd that has exited, up to @ms for all of them
 * together (10 ms naps). How many are left.
 */
static unsigned tenants_stop_wait(struct ssqd *d, unsigned ms)
{
	struct timespec nap = { 0, 10 * 1000000 };
	uint64_t end = ssqd_now_ns() + (uint64_t)ms * 1000000;
	unsigned i, left;
	int st;

	for (;;) {
		left = 0;
		for (i = 0; i < SSQD_MAX_TENANTS; i++) {
			struct ssqd_tenant *t = &d->tenants[i];

			if (t->pid > 0 && waitpid(t->pid, &st, WNOHANG) == t->pid) {
				/*
				 * A tenant's failure is ssqd's to tell (a test
				 * reads it); one killed for a slow idle exit
				 * (ssqd_tenants_tick) did not fail.
				 */
				if ((!WIFEXITED(st) || WEXITSTATUS(st)) && !t->killed)
					fprintf(stderr,
					        SD_WARNING "ssqd: tenant %u's ssqd (pid "
					                   "%d) ended with status 0x%x\n",
					        (unsigned)t->key, (int)t->pid, st);
				ssqd_tenant_forget(t);
			}
			left += t->pid > 0;
		}
		/* Exited already, out of their slots: reaped once let go. */
		ssqd_tenant_zombies_reap(d);
		left += ssqd_tenant_zombies(d);
		if (!left || ssqd_now_ns() >= end)
			return left;
		nanosleep(&nap, NULL);
	}
}

void ssqd_tenants_stop(struct ssqd *d)
{
	unsigned i, killed = 0;

	/* What waits for a closing slot is told why it is not served. */
	ssqd_tenants_unpark_refuse(d);
	/*
	 * One bound for all, never one per tenant, nor a wait without end:
	 * SIGTERM to all at once, then SIGKILL to those still there, then
	 * a short wait to reap them. One still not reapable (a ptraced
	 * zombie is its tracer's to reap first) is left: once ssqd is gone,
	 * init reaps it.
	 */
	for (i = 0; i < SSQD_MAX_TENANTS; i++)
		if (d->tenants[i].pid > 0)
			tenant_signal(&d->tenants[i], SIGTERM);
	if (!tenants_stop_wait(d, TENANTS_STOP_MS))
		return;
	/*
	 * Not one found dead (killed then, its failure told: ssqd_tenant_pass)
	 * nor one exited (tenant_zombie.c): a signal is nothing to them, and a
	 * line saying it was killed now would be a second about its end.
	 */
	for (i = 0; i < SSQD_MAX_TENANTS; i++)
		if (d->tenants[i].pid > 0 && !d->tenants[i].dead) {
			fprintf(stderr,
			        SD_WARNING
			        "ssqd: tenant %u's ssqd (pid %d) did not stop: killed\n",
			        (unsigned)d->tenants[i].key, (int)d->tenants[i].pid);
			tenant_signal(&d->tenants[i], SIGKILL);
			d->tenants[i].killed = 1; /* its end then no failure of its own */
			killed++;
		}
	if (killed && !tenants_stop_wait(d, TENANTS_KILL_MS))
		return;
	for (i = 0; i < SSQD_MAX_TENANTS; i++)
		if (d->tenants[i].pid > 0) {
			fprintf(stderr,
			        SD_WARNING "ssqd: tenant %u's ssqd (pid %d), killed, is "
			                   "not reapable (ptraced?): left\n",
			        (unsigned)d->tenants[i].key, (int)d->tenants[i].pid);
			ssqd_tenant_forget(&d->tenants[i]);
		}
	for (i = 0; i < SSQD_TENANT_ZOMBIES; i++)
		if (d->tenant_zombies[i].pid > 0) {
			fprintf(stderr,
			        SD_WARNING
			        "ssqd: tenant %u's ssqd (pid %d) exited and is "
			        "not reapable (ptraced?): left\n",
			        (unsigned)d->tenant_zombies[i].key,
			        (int)d->tenant_zombies[i].pid);
			ssqd_tenant_forget(&d->tenant_zombies[i]);
		}
}

unsigned ssqd_tenants_pollfds(const struct ssqd *d, struct pollfd *pfd)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		const struct ssqd_tenant *t = &d->tenants[i];

		/*
		 * One that connections wait for, or that hung up: its exit (its
		 * pidfd); it says nothing more on its socket once closing. One
		 * exited is reaped or out of its slot (tenant_reap), never
		 * polled here again: its pidfd would stay readable.
		 */
		pfd[i].fd = t->pid <= 0     ? -1
		            : t->pidfd >= 0 ? t->pidfd
		            : !t->hup       ? t->fd
		                            : -1;
		pfd[i].events = POLLIN;
		pfd[i].revents = 0;
	}
	return SSQD_MAX_TENANTS;
}

/*
 * Tenant @t asks to exit idle, having received @got connections: let it
 * (closing: nothing more goes to it) only if that is every one we sent,
 * so none is in its socket unread; else it goes on.
 */
static void tenant_asks(struct ssqd *d, struct ssqd_tenant *t, uint32_t got, int arena_fd)
{
	char yes = 'y', no = 'n';

	if (!t->closing && got == t->sent) {
		t->closing = 1;
		if (send(t->fd, &yes, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
			if (t->arena_fd >= 0)
				close(t->arena_fd);
			t->arena_fd = arena_fd; /* emptied if it must be killed */
			return;
		}
		t->closing = 0; /* not told: it stays, and asks again */
	}
	if (arena_fd >= 0)
		close(arena_fd);
	ssqd_log_limited(&d->client_log, ssqd_now_ns(),
	                 SD_NOTICE "ssqd: tenant %u asked to exit idle with %u of our "
	                           "%u connections received: it stays\n",
	                 (unsigned)t->key, (unsigned)got, (unsigned)t->sent);
	(void)!send(t->fd, &no, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * A message from a tenant's ssqd into @m, and in *@fd the descriptor it
 * came with (its arena's memfd, with an ask to exit idle; tenant_idle.c),
 * or -1. Only a memfd is taken: it is what tenant_reap may truncate.
 */
static ssize_t tenant_recv_ask(int s, uint8_t *m, size_t len, int *fd)
{
	ssize_t n = ssqd_fd_recv(s, m, len, fd, MSG_DONTWAIT);

	/* F_GET_SEALS answers for memfds (and shmem) alone. */
	if (*fd >= 0 && fcntl(*fd, F_GET_SEALS) < 0) {
		close(*fd);
		*fd = -1;
	}
	return n;
}

void ssqd_tenants_events(struct ssqd *d, const struct pollfd *pfd)
{
	uint8_t m[8];
	unsigned i;
	ssize_t n;
	int fd;

	/* Those let go by their tracer since (tenant_zombie.c). */
	ssqd_tenant_zombies_reap(d);
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct ssqd_tenant *t = &d->tenants[i];

		if (t->hup && t->pid > 0)
			tenant_reap(d, t); /* its end closed: reaped once it exited */
		if (pfd[i].fd >= 0 && pfd[i].fd == t->pidfd && pfd[i].revents) {
			tenant_reap(d, t); /* parked ones: ssqd_tenants_tick */
			continue;
		}
		if (pfd[i].fd < 0 || pfd[i].fd != t->fd || !pfd[i].revents)
			continue;
		n = tenant_recv_ask(t->fd, m, sizeof(m), &fd);
		if (n == 5 && m[0] == 'i') {
			uint32_t got;

			memcpy(&got, m + 1, sizeof(got));
			tenant_asks(d, t, got, fd);
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			/*
			 * Not polled again: no spinning on its hang-up. Its
			 * pidfd is, instead: readable once it exited, when it
			 * is reaped or, not reapable, leaves its slot.
			 */
			t->hup = 1;
			if (t->pidfd < 0)
				t->pidfd = ssqd_pidfd_open(t->pid);
			tenant_reap(d, t);
		}
	}
}
