/* SPDX-License-Identifier: MIT */
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
#ifndef SSQ_CTRL_DAEMON_CLIENT_PIDFD_H
#define SSQ_CTRL_DAEMON_CLIENT_PIDFD_H

#include <sys/types.h>

/*
 * A pidfd of the process that connected unix socket @fd, SO_PEERCRED's @pid:
 * SO_PEERPIDFD (Linux 6.5) takes it as of connect; before, pidfd_open(@pid)
 * at accept. -1 where the kernel has neither.
 */
int ssqd_pidfd_of_peer(int fd, pid_t pid);

/* 1 while the process behind @pidfd has not exited; 0 once it has, or for -1. */
int ssqd_pidfd_alive(int pidfd);

/* SIGKILL to the process behind @pidfd: 0 or -errno (-EPERM: another uid). */
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

#endif /* SSQ_CTRL_DAEMON_CLIENT_PIDFD_H */
