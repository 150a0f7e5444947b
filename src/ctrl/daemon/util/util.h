/* SPDX-License-Identifier: MIT */
/*
 * util/: the daemon's leaves, which know nothing of struct ssqd: a log
 * limit, the client socket's claim, pidfds, sleeper beats. Types and
 * prototypes both (ssqd.h holds some of these types by value).
 */
#ifndef SSQ_CTRL_DAEMON_UTIL_H
#define SSQ_CTRL_DAEMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ssq/queue.h>

/*
 * Log lines a client can cause (bad messages, say) go through a limit: at
 * most SSQD_LOG_BURST a second, then one line saying how many were left
 * out, so a client cannot flood ssqd's log (and its disk, under journald).
 */

#define SSQD_LOG_BURST 10

struct ssqd_log_limit {
	uint64_t window_ns; /* start of the current second */
	unsigned lines;     /* written in it */
	unsigned dropped;   /* left out in it */
};

/* printf to stderr under @l's limit, at CLOCK_MONOTONIC @now_ns. */
void ssqd_log_limited(struct ssqd_log_limit *l, uint64_t now_ns, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Once a second is over, say how many lines it left out (the serve loop calls it). */
void ssqd_log_tick(struct ssqd_log_limit *l, uint64_t now_ns);

/*
 * ssqd's log (log.c): stderr becomes a stream that writes each line with a
 * timestamp, or, under journald, with its sd-daemon(3) "<N>" priority
 * (lines start with SD_ERR, SD_WARNING...; none is SD_INFO), and leaves
 * out lines above --log-level. ssqd_log_setup returns 0 or -errno.
 */
#define SSQD_LOG_DEFAULT 6 /* SD_INFO: all but debug */
int ssqd_log_setup(int level);
/*
 * ssqd_log_who - after ssqd_log_setup: lines that start "ssqd: " start
 * "ssqd (@who): " instead (a tenant's ssqd, which writes to its parent's
 * stderr: "tenant uid 1000").
 */
void ssqd_log_who(const char *who);
/* "err", "warning", "notice", "info", "debug" (syslog's names) or 0..7; -1. */
int ssqd_log_level_parse(const char *s);
/* Is @fd the stream $JOURNAL_STREAM names (systemd.exec(5))? 1 or 0. */
int ssqd_log_under_journald(int fd);

/*
 * ssqd_fd_send - @buf (@len bytes) over unix socket @s with descriptor
 *   @fd (SCM_RIGHTS; none if @fd < 0), sendmsg's @flags plus MSG_NOSIGNAL:
 *   sendmsg's result.
 * ssqd_fd_recv - a message into @buf and the descriptor it came with in
 *   *@fd (-1: none; close-on-exec; one that came with others is closed,
 *   they too), recvmsg's @flags: recvmsg's result.
 */
ssize_t ssqd_fd_send(int s, const void *buf, size_t len, int fd, int flags);
ssize_t ssqd_fd_recv(int s, void *buf, size_t len, int *fd, int flags);

/*
 * Claiming the client socket's path before binding it: one ssqd per path.
 * A lock file beside the socket (PATH.lock, flock) says whether an ssqd
 * serves it: held - refuse to start, naming the holder's pid, and leave
 * its socket alone (before, a second ssqd unlinked the first's socket and
 * made it unreachable); free - a socket left there is stale (its ssqd
 * died) and is reclaimed. The default path's private directory is made
 * here too, and refused if another uid owns it or others may write it.
 */

/*
 * ssqd_socket_claim - take @path's lock. Returns the lock's fd (kept open
 * for as long as ssqd serves @path; closing it releases the claim), or
 * -EADDRINUSE (another ssqd serves it), -EPERM (an unsafe directory) or
 * the errno of the failing call, with the reason in @why. A holder that is
 * exiting (a SIGKILLed ssqd not yet reaped) is waited for, up to 2 s.
 */
int ssqd_socket_claim(const char *path, char *why, size_t whylen);

/*
 * ssqd_socket_unclaim - give up @path's claim at exit: its lock file is
 * removed, then @fd (ssqd_socket_claim's) closed, so none is left behind.
 */
void ssqd_socket_unclaim(const char *path, int fd);

/*
 * ssqd_socket_listen - a listening SOCK_SEQPACKET socket at @path (claimed
 * first), mode 0660. The path appears only once the socket listens: it is
 * bound under PATH.new and renamed into place, so a client that finds the
 * file can connect (bound at @path itself, a client in between bind() and
 * listen() was refused). Only a @path too long for that name is bound in
 * place. Returns the fd, or the negative errno with the reason in @why.
 */
int ssqd_socket_listen(const char *path, char *why, size_t whylen);

/*
 * A client's process, held by a pidfd (pidfd_open(2), Linux 5.3) from the
 * pid SO_PEERCRED gave at accept: unlike the pid, it cannot come to name
 * another process once the client's has exited, so ssqd can kill a client
 * and know when it is really gone.
 *
 * Why ssqd kills: healing a producer record (queue_heal.c) takes over what
 * its process left half-done - NOPs over its unpublished WQEBBs, its leases
 * - which is only safe once that process can no longer write into the
 * ring. A client dropped while its process still runs (it closed its
 * connection with queues attached, or stopped reading its replies) is
 * therefore killed first and healed after its exit.
 */

/*
 * A pidfd of the process that connected unix socket @fd, SO_PEERCRED's @pid:
 * SO_PEERPIDFD (Linux 6.5) takes it as of connect; before, pidfd_open(@pid)
 * at accept. -1 where the kernel has neither.
 */
int ssqd_pidfd_of_peer(int fd, pid_t pid);

/*
 * pidfd_open(2) of @pid (Linux 5.3), which must be a process that cannot
 * have been reaped meanwhile (a client waiting for our answer, a child of
 * ours not waited for); -1 where the kernel has none.
 */
int ssqd_pidfd_open(pid_t pid);

/*
 * Whether this kernel gives pidfds: 0, or pidfd_open's -errno (-ENOSYS
 * before Linux 5.3 or under a sandbox that refuses it, -EPERM under some).
 */
int ssqd_pidfd_probe(void);

/* 1 while the process behind @pidfd has not exited; 0 once it has, or for -1. */
int ssqd_pidfd_alive(int pidfd);

/*
 * Where no pidfd could be had (ssqd_pidfd_probe), a client's process is
 * named by its pid and the start time /proc/PID/stat (field 22) gave at
 * accept: a process that took the pid since has another one. What that
 * changes: a client dropped while its process runs is looked at every
 * loop until it is gone (nothing polls readable at its exit), and a kill
 * looks at the start time right before kill(2) - a pid reused in between
 * is the one case a pidfd alone rules out (util/pid_start.c).
 *
 * ssqd_pid_start - @pid's start time, 0 if /proc cannot say.
 * ssqd_proc_alive - by @pidfd, else by @pid and its @start: 1 while the
 *   process runs (also when /proc cannot say), 0 once it exited (a zombie
 *   with no thread left), or nothing names it (-1 and 0).
 * ssqd_pid_kill - SIGKILL to @pid if it is still the process started at
 *   @start: 0, -ESRCH (exited, reused, or @start 0), -EIO (/proc cannot
 *   say), or kill's -errno (-EPERM: another uid).
 * ssqd_proc_kill - by @pidfd (ssqd_pidfd_kill), else ssqd_pid_kill.
 * ssqd_child_alive - ssqd_proc_alive of a child of ssqd's not reaped yet
 *   (a tenant's ssqd), whose pid no other process can have: by @pidfd, else
 *   /proc/@pid/stat now; 1 also when /proc cannot say.
 */
uint64_t ssqd_pid_start(pid_t pid);
int ssqd_proc_alive(int pidfd, pid_t pid, uint64_t start);
int ssqd_pid_kill(pid_t pid, uint64_t start);
int ssqd_proc_kill(int pidfd, pid_t pid, uint64_t start);
int ssqd_child_alive(int pidfd, pid_t pid);

/*
 * Signal @sig to the process behind @pidfd (pidfd_send_signal(2), Linux
 * 5.1): that process or none, never another that got its pid since.
 * 0 or -errno (-EPERM: another uid; -ESRCH: it has exited).
 * ssqd_pidfd_kill - the same with SIGKILL.
 */
int ssqd_pidfd_signal(int pidfd, int sig);
int ssqd_pidfd_kill(int pidfd);

/*
 * Does process @pid still map any of the @n (<= SSQD_MAPS_MAX) files @fds are
 * open on (by
 * device and inode, from /proc/@pid/maps)? 1 yes, 0 no, -1 unknown (no
 * /proc). A client that exec'd, or unmapped the queues, cannot write into
 * them any more: it need not be killed before its records are healed. The
 * caller checks its pidfd after, so a pid reused meanwhile is noticed.
 */
#define SSQD_MAPS_MAX 32
int ssqd_pid_maps_any(pid_t pid, const int *fds, int n);

/*
 * Whether a client asleep in ssq_wait or ssq_recv_wait still lives, as
 * ssqd judges it from client memory: each sleeper moves a beat counter
 * before every slice of its sleep (ctl->wait_beat; a receive log's beat),
 * and a count of sleepers whose beat has stood for SSQD_WAIT_BEAT_NS is
 * one left behind - its sleeper died asleep, or the count was scribbled -
 * for which ssqd neither spins nor makes a system call. A live sleeper
 * descheduled that long loses nothing: it finds what it waits for at the
 * end of its slice.
 */

/*
 * Far more than a slice: a loaded machine keeps a woken sleeper from a
 * core for milliseconds.
 */
#define SSQD_WAIT_BEAT_NS (50 * SSQ_WAIT_SLICE_NS)

/* A beat as one watcher (one thread of ssqd) last saw it move, and when. */
struct ssqd_beat {
	uint32_t seen;
	uint64_t ns;
};

/* 1 if @beat moved since @b's last look, or within SSQD_WAIT_BEAT_NS of @now. */
static inline int ssqd_beat_live(struct ssqd_beat *b, uint32_t beat, uint64_t now)
{
	if (beat != b->seen) {
		b->seen = beat;
		b->ns = now;
	}
	return now - b->ns < SSQD_WAIT_BEAT_NS;
}

/* @v rounded up to a multiple of @a, a power of two. */
static inline uint64_t ssqd_align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * The soft limit up to the hard one (systemd leaves services a soft 1024:
 * systemd.exec(5), LimitNOFILE=, asks those that need more to raise it
 * themselves), before anything opens descriptors; said only when it fails.
 */
void ssqd_nofile_raise(void);

/*
 * ssqd_turns_pick - which @take of @n entries polled in turn (a loop that
 * may not poll them all at once) to poll this pass: their indexes into
 * @keys in @out (min(take, n) of them), from the first entry whose key is
 * at or after *@cursor, wrapping; *@cursor then just past the last key
 * taken. @keys: strictly increasing, each entry's own for as long as it
 * is there (a client's slot), so that others coming and going do not move
 * the cursor past it: an entry present pass after pass is taken within
 * ceil(keys' range / take) passes.
 */
void ssqd_turns_pick(const unsigned *keys, int n, int take, unsigned *cursor, int *out);

#endif /* SSQ_CTRL_DAEMON_UTIL_H */
