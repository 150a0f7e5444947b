/* SPDX-License-Identifier: MIT */
/*
 * tests/lib: the fixtures many tests share, compiled once into a static
 * library that every test links (liburing's test/helpers.c) instead of a
 * copy in each test: one ssqd launcher and its stop, one connect that waits
 * for it, one two-daemon pair, one cluster, TCP ports and connects, a
 * signaled WR. Names start t_. A fixture says what failed on stderr and
 * returns it; the test's CHECK counts it.
 */
#ifndef SSQ_TEST_LIB_H
#define SSQ_TEST_LIB_H

#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>
#include <ssq/client.h>

/*
 * t_free_tcp_port - a TCP port on 127.0.0.1 for a --listen, held for this
 * test (recv_flow.h's free_tcp_port says how). 0 if none could be had.
 */
uint16_t t_free_tcp_port(void);

/*
 * t_log_count - how many times @needle occurs in the first 4 MiB of the
 *   file @path (an ssqd's log); 0 if it cannot be read.
 * t_log_last_num - the number right after @needle's last occurrence there
 *   (a pid, a count), or -1 if it never occurs.
 */
unsigned t_log_count(const char *path, const char *needle);
long t_log_last_num(const char *path, const char *needle);

/*
 * t_tenants_ssqd - an ssqd for tests whose clients run as other uids: on
 * the emulated device, --hugepages=off, then @args (NULL-terminated, at
 * most 24: its --tenants, --allow-*, sizes); its socket and log named
 * after @tag and this process, into @sock (108 bytes) and @log (128).
 * Waits until it answers root's connection (*@answered: whether it did),
 * then opens the socket to every uid (0666). Returns its pid.
 */
pid_t t_tenants_ssqd(const char *tag, char *sock, char *log, const char *const *args,
                     int *answered);

/*
 * t_tenants_ssqd_shim - t_tenants_ssqd under the send shim @so
 * (LD_PRELOAD for ssqd alone: the shim drops it for ssqd's children),
 * armed through the file @arm (SSQ_SEND_NOBUFS_ARM); ASAN_OPTIONS gains
 * verify_asan_link_order=0, the shim being loaded before ASan's runtime.
 * This process's environment is as it was after, but for ASAN_OPTIONS.
 */
pid_t t_tenants_ssqd_shim(const char *tag, const char *so, const char *arm, char *sock,
                          char *log, const char *const *args, int *answered);

/*
 * t_uid_clients - clients of another uid (root only): in a child that
 * becomes @uid (group @gid, no supplementary groups), @n connections (0:
 * one) to the ssqd at @sock, one after another, each held @hold_ms, then
 * answered (a LIST naming at least one queue) and closed, then a pause of
 * @pause_ms, or of up to @gap_ms at random. Returns how many failed (0:
 * all served; at most 199), 200 if the child could not become @uid, 254
 * or 255 if it was lost; the first failure printed (unless @quiet), its
 * errno (positive) in @first_err and its line, ssqd's words included, in
 * @said.
 */
struct t_uid_clients {
	const char *sock;
	uid_t uid;
	gid_t gid;
	unsigned n, hold_ms, pause_ms, gap_ms;
	int quiet;
	int first_err;  /* out */
	char said[512]; /* out */
};
int t_uid_clients(struct t_uid_clients *u);

/*
 * t_tenant_holder - in a child that becomes uid @uid (group @gid, no
 * others), a client of the ssqd at @sock (--tenants: its tenant's ssqd),
 * held until the write end returned in *@hold is closed. The child writes
 * its connect's result on @ready once its hello is answered: one byte, 0
 * or the errno (EPERM: it could not become @uid). Returns its pid, or -1.
 */
pid_t t_tenant_holder(const char *sock, uid_t uid, gid_t gid, int *hold, int ready);

/*
 * t_tenant_holders - @n holders (t_tenant_holder) of uids @uid0 on, group
 *   @gid, into @pid and @hold; each one's byte read from @ready[0] before
 *   the next starts. Returns how many connected.
 * t_tenant_idle_exit - uid @uid's client (a holder) starts its tenant's
 *   ssqd, then closes: with --tenant-idle-ms that ssqd exits idle.
 *   *@served: whether the client was answered; *@exited: whether ssqd's log
 *   @log said the exit within 30 s. Returns that ssqd's pid, from the log.
 * t_byte_within - a byte on @fd within @ms, into *@b (1), or none (0): a
 *   holder's answer that may not come.
 */
unsigned t_tenant_holders(const char *sock, uid_t uid0, gid_t gid, unsigned n, pid_t *pid,
                          int *hold, const int ready[2]);
pid_t t_tenant_idle_exit(const char *sock, const char *log, uid_t uid, gid_t gid,
                         const int ready[2], int *served, int *exited);
int t_byte_within(int fd, int ms, char *b);

/*
 * t_tenant_zombie_hold - uid @uid's tenant's ssqd, its pid from ssqd's log
 *   @log into *@pid, seized (PTRACE_SEIZE), killed and held a zombie that
 *   ssqd cannot reap (tenant_zombie.c): 1, or 0 where any step failed.
 * t_tenant_zombies_go - the @n zombies @pid held (@held) let go: each one
 *   our wait took (its tracer's turn) goes back to ssqd to reap; its
 *   @held cleared.
 */
int t_tenant_zombie_hold(const char *log, uid_t uid, pid_t *pid);
void t_tenant_zombies_go(const pid_t *pid, int *held, unsigned n);

/*
 * t_ssqd_status - `$SSQD --status [--json]` (@json) for the ssqd at @sock,
 *   its output (stderr too) into the file @outf, then its first @len - 1
 *   bytes into @out, NUL-ended; how long it ran into *@secs (unless NULL).
 *   Returns system()'s status.
 * t_occurs - how many times @needle occurs in @s.
 */
int t_ssqd_status(const char *sock, int json, const char *outf, char *out, size_t len,
                  double *secs);
unsigned t_occurs(const char *s, const char *needle);

/*
 * t_log_wait - until @needle occurs at least @n times in the log @path,
 *   @secs at most: 1 if it did, 0 if not.
 */
int t_log_wait(const char *path, const char *needle, unsigned n, double secs);

/*
 * t_arenas_held - this process's mappings of an ssqd arena (a memfd named
 * "ssq-arena-..."): how many (*@maps), how many still hold memory (their
 * first page reads, where an arena whose file was cut faults SIGBUS: the
 * probe catches it) and those in MiB (*@mib, unless NULL).
 */
unsigned t_arenas_held(unsigned *maps, unsigned *mib);

/* t_proc_fds - how many descriptors process @pid holds (/proc), or -1. */
int t_proc_fds(pid_t pid);

/* t_proc_alive - is process @pid there and not a zombie (/proc/<pid>/stat)? */
int t_proc_alive(pid_t pid);

/* t_proc_cpu_s - CPU seconds process @pid has used (utime + stime), or 0. */
double t_proc_cpu_s(pid_t pid);

/*
 * t_proc_tenant_fd - the --tenant-fd of a tenant's ssqd @pid, from its
 * command line, or -1.
 */
int t_proc_tenant_fd(pid_t pid);

/*
 * t_proc_fd_copy - a copy in this process of descriptor @fd of process @pid
 * (pidfd_getfd: root, or ptrace rights over @pid), or -1 with errno set
 * (untouched when @pid or @fd is not one).
 */
int t_proc_fd_copy(pid_t pid, int fd);

/*
 * t_proc_run_wait - seconds the main thread of process @pid (0: the calling
 * thread) has spent runnable but waiting for a CPU, since it started: the
 * second field of /proc/<pid>/schedstat (the kernel's
 * Documentation/scheduler/sched-stats.rst). A test that times a daemon's
 * answer subtracts both ends' waits over the interval, so that a loaded
 * machine's scheduling is not taken for the daemon's stall: what is left
 * is time spent asleep or working. -1 when the kernel keeps no such count
 * (CONFIG_SCHED_INFO off).
 */
double t_proc_run_wait(pid_t pid);

/*
 * t_tcp_connect - socket @s (a new TCP one when @s < 0) connected to
 * 127.0.0.1:@port, once. Returns it, or -1 (it closed) when that failed.
 */
int t_tcp_connect(int s, uint16_t port);

/*
 * t_need_ssqd - the test skips (exit 77, saying why) unless $SSQD names the
 * ssqd binary (ctest sets it), and ignores SIGPIPE from here on: a write
 * to an ssqd the test killed fails with EPIPE instead of ending the test.
 */
void t_need_ssqd(void);

/*
 * t_ssqd_exec - fork and exec the ssqd in $SSQD with @args (NULL-terminated,
 * after argv[0], at most 40), in the child @env_name set to @env_value
 * (unless @env_name is NULL) and stderr into the file @log (appended with
 * @append, else truncated; NULL: this process's stderr). Returns its pid,
 * or -1 when fork failed. With $SSQ_TEST_SSQD_WRAP set (the <name>_nopidfd
 * runs: tests/sandbox/no_pidfd.c), ssqd runs under that program, and the
 * pid is the program's: it execs ssqd in place.
 */
pid_t t_ssqd_exec(const char *const *args, const char *env_name, const char *env_value,
                  const char *log, int append);

/*
 * t_rssqd_start - the ssqd the receive, wire and cluster tests run: on the
 * test's device at @sock, memfd pages, an 8 MiB data arena, 256-WQEBB send
 * queues, a receive pool of @recv_depth buffers of @recv_size bytes, then
 * @args (NULL-terminated, up to 24); SSQ_EMU_WIRE_FAULT set to @wire_fault
 * unless NULL; stderr as t_ssqd_exec's @log, @append. Returns its pid.
 * With SSQ_TEST_PEER_KEY set in the environment (the <test>_peerkey
 * ctests), a daemon with peers (--peer/--peers, --listen or --connect in
 * @args, no --peer-key) also gets --peer-key, one key made for the test
 * process.
 */
pid_t t_rssqd_start(const char *sock, unsigned recv_depth, unsigned recv_size,
                    const char *wire_fault, const char *const *args, const char *log,
                    int append);
/*
 * t_rssqd_grants - 0 (the default): t_rssqd_start passes --no-grants, for
 * the tests written before grants, whose clients use a peer's buffer keys
 * as they come (to be moved to ssq_buf_grant, issue 28 item 1); nonzero:
 * ssqd's default, a peer reaches only what was granted to it.
 */
extern int t_rssqd_grants;

/*
 * t_ssqd_connect - a client of the ssqd at @sock, retrying while it starts
 * (up to 20 s on a loaded machine); an ssqd @pid that exits meanwhile (a
 * device it cannot open) ends the wait at once. NULL on failure.
 */
struct ssq_client *t_ssqd_connect(const char *sock, pid_t pid);

/*
 * t_ssqd_stop - the ssqd @pid (if > 0) stopped: SIGTERM, then reaped with
 * its wait status into @status (unless NULL; left as it was when @pid is
 * not > 0), and its socket @sock removed (unless NULL), its lock file too
 * where it died without removing it (t_ssqd_gone).
 */
void t_ssqd_stop(pid_t pid, int *status, const char *sock);

/* t_ssqd_stop_ok - t_ssqd_stop, then 1 if @*status says it exited 0. */
int t_ssqd_stop_ok(pid_t pid, int *status, const char *sock);

/*
 * t_ssqd_gone - the socket @sock and its lock file @sock.lock removed, once
 * the ssqd that served there is gone (killed and reaped): an ssqd that
 * stops removes both (ssqd_socket_unclaim), one killed leaves them, and
 * /tmp fills with them. Nothing is removed while an ssqd holds the lock
 * (one started there since keeps its own): the lock is taken first, as
 * ssqd_socket_claim takes it, and the file unlinked while held, as
 * ssqd_socket_unclaim does, so a claimer racing with it starts over. The
 * fixtures call it where they reap an ssqd; and at this process's exit it
 * runs for every --socket of an ssqd t_ssqd_exec started, for the tests
 * that kill and reap their ssqd themselves.
 */
void t_ssqd_gone(const char *sock);

/* t_ssqd_kill - the ssqd @pid (if > 0) killed (SIGKILL), reaped, t_ssqd_gone(@sock). */
void t_ssqd_kill(pid_t pid, const char *sock);

/*
 * Two daemons linked as a cluster of two, alice (index 0) and bob (1), each
 * --eager with --peer naming the other at 127.0.0.1 and --listen on a port
 * of its own: the set-up of the two-host tests.
 * t_pair_start - t_pair_init, then t_pair_run, with @extra for both.
 * t_pair_init - the pair's names, ports, sockets and --peer arguments (each
 *   other's --listen port; a test may point peer[] elsewhere, a relay) and
 *   the arguments each daemon gets after the pair's own, extra[] (NULL for
 *   none; they must still be there at each start); nothing started.
 * t_pair_run - both started (t_rssqd_start with @recv_depth buffers of
 *   @recv_size bytes), a client of each in c[], and q0 READY at both
 *   within 10 s. 0, or -1 (said why; call t_pair_stop all the same).
 * t_pair_exec - daemon @i started again as before, nothing more (its old
 *   run reaped by the caller); its pid in pid[@i].
 * t_pair_restart - daemon @i killed (SIGKILL, its run ends with its
 *   clients' buffers), its client closed, and started again as before
 *   with a new client in c[@i]. 0, or -1 (said why). Its q0 may not be
 *   READY yet.
 * t_pair_stop - the clients closed, both daemons stopped (SIGTERM, reaped)
 *   and their sockets removed.
 */
struct t_pair {
	char sock[2][108];
	char port[2][16];
	char peer[2][64];
	pid_t pid[2];
	struct ssq_client *c[2];
	unsigned recv_depth, recv_size;
	const char *const *extra[2];
};
int t_pair_start(struct t_pair *p, const char *tag, unsigned recv_depth,
                 unsigned recv_size, const char *const *extra);
void t_pair_init(struct t_pair *p, const char *tag, unsigned recv_depth,
                 unsigned recv_size);
int t_pair_run(struct t_pair *p);
void t_pair_exec(struct t_pair *p, int i);
int t_pair_restart(struct t_pair *p, int i);
void t_pair_stop(struct t_pair *p);

/*
 * t_wr_one - @wr, zeroed, as one signaled @op of the one SGE @sge with
 * wr_id @id, to @raddr with @rkey: wr.atomic's for an atomic @op (its
 * compare_add and swap left 0 for the caller), wr.rdma's otherwise (where
 * the union's rkey stands differs between them).
 */
void t_wr_one(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
              uint64_t id, uint64_t raddr, uint32_t rkey);

/*
 * A cluster of up to T_CLUSTER_MAX daemons named by a peers file, the set-up
 * of the cluster and on-demand tests: each --name, --peers the file, --listen
 * a port of its own, its stderr in a log of its own.
 * t_cluster_files - for a test tagged @tag, @n daemons named @names (kept,
 *   not copied): a free port each, a socket and a log in /tmp, and the
 *   peers file listing every one at 127.0.0.1. Logs are appended to with
 *   @append (else truncated at each start).
 * t_cluster_start - daemon @i started (t_rssqd_start with the tests'
 *   receive pool, @extra after its own arguments, NULL for none); its pid,
 *   also in pid[@i].
 * t_cluster_start_all - every daemon started so (@extra for each): how many
 *   could not be (each named on stderr), 0 when all were.
 * t_cluster_connect - a client of daemon @i (t_ssqd_connect), or NULL.
 * t_cluster_stop - every daemon stopped (SIGTERM, reaped), their sockets,
 *   their logs (kept when $KEEP_LOGS is set) and the peers file removed.
 */
#define T_CLUSTER_MAX 8
struct t_cluster {
	unsigned n, recv_depth, recv_size;
	int append;
	const char *const *names;
	char sock[T_CLUSTER_MAX][108], log[T_CLUSTER_MAX][108], peers[108];
	uint16_t port[T_CLUSTER_MAX];
	pid_t pid[T_CLUSTER_MAX];
};
void t_cluster_files(struct t_cluster *cl, const char *tag, unsigned n,
                     const char *const *names, unsigned recv_depth, unsigned recv_size,
                     int append);
pid_t t_cluster_start(struct t_cluster *cl, unsigned i, const char *const *extra);
int t_cluster_start_all(struct t_cluster *cl, const char *const *extra);
struct ssq_client *t_cluster_connect(const struct t_cluster *cl, unsigned i);
void t_cluster_stop(struct t_cluster *cl);

/* A NULL-terminated argument list in place: T_ARGS("--idle-ms", "300"). */
#define T_ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

#endif
