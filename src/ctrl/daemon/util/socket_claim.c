/* SPDX-License-Identifier: MIT */
/* One ssqd per socket path (util/util.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/proto/socket_path.h"

/*
 * The default path's directory: made if missing (0700, or 0755 for root's
 * /run/ssqd so that --allow-uid clients can reach the socket); if it exists
 * it must be ours and writable by no one else, or whoever owns it could
 * swap the socket under us.
 */
static int private_dir(const char *path, char *why, size_t whylen)
{
	char def[108], dir[108];
	struct stat st;
	int err;

	if (proto_default_socket(def, sizeof(def)) || strcmp(def, path) ||
	    getenv("SSQ_SOCKET") || getenv("XDG_RUNTIME_DIR"))
		return 0; /* named by the user or systemd: theirs to set up */
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(dir, sizeof(dir), "%s", dirname(dir));
	if (mkdir(dir, getuid() == 0 ? 0755 : 0700) && errno != EEXIST) {
		err = errno;
		snprintf(why, whylen, "making %s: %s", dir, strerror(err));
		return -err;
	}
	if (lstat(dir, &st)) {
		err = errno;
		snprintf(why, whylen, "%s: %s", dir, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
		snprintf(
		    why, whylen,
		    "%s is not a directory of uid %u that only it may write (owner %u, "
		    "mode %03o): someone could replace ssqd's socket there; remove it "
		    "or pass --socket",
		    dir, (unsigned)getuid(), (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* /proc/@pid/@file into @buf (NUL-terminated); its length, or -1. */
static int proc_read(const char *pid, const char *file, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/*
 * Is process @pid on its way out? A SIGKILLed ssqd's lock is released only
 * when the last of its threads closes the lock file. kill() marks SIGKILL
 * pending in every thread at once (complete_signal, linux
 * kernel/signal.c), but a thread acts on it only once it runs: then
 * do_exit sets PF_EXITING (exit_signals), tears down the address space
 * (exit_mm), closes the files (exit_files) and only then becomes a zombie
 * (exit_notify, kernel/exit.c). The leader shows state Z as soon as it has
 * done so, while the other threads (the emulated device's, DPDK's), which
 * share its file table, may still be unmapping an arena on a busy machine:
 * the lock is held a while by a process that /proc calls exited. So:
 * SIGKILL pending (status' SigPnd or ShdPnd, bit 9 - 1), PF_EXITING (0x4,
 * include/linux/sched.h; stat's 9th field), or state Z / X.
 */
static int holder_exiting(const char *pid)
{
	char buf[2048], *p;
	unsigned long long pend;
	unsigned long flags;
	char state;

	if (!*pid || strspn(pid, "0123456789") != strlen(pid))
		return 0;
	if (proc_read(pid, "stat", buf, sizeof(buf)) < 0)
		return 0;
	p = strrchr(buf, ')'); /* the name may hold anything, ')' too */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return 0;
	if (state == 'Z' || state == 'X' || state == 'x' || (flags & 0x4))
		return 1;
	if (proc_read(pid, "status", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if ((sscanf(p, "SigPnd: %llx", &pend) == 1 ||
		     sscanf(p, "ShdPnd: %llx", &pend) == 1) &&
		    (pend >> (SIGKILL - 1)) & 1)
			return 1;
	return 0;
}

/* The lock file still is @lock's (not unlinked by an ssqd that left)? */
static int same_file(int fd, const char *lock)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat(lock, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* How long a claim waits for a holder that is exiting (holder_exiting). */
#define CLAIM_EXITING_MS 2000
#define CLAIM_LOOK_MS    10

int ssqd_socket_claim(const char *path, char *why, size_t whylen)
{
	char lock[120], pid[32] = "";
	unsigned waited = 0, tries = 0;
	int fd, err, n;

	err = private_dir(path, why, whylen);
	if (err)
		return err;
	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock)) {
		snprintf(why, whylen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
again:
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = errno;
		snprintf(why, whylen, "lock file %s: %s", lock, strerror(err));
		return -err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno;
		n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = 0;
		pid[strcspn(pid, "\n")] = 0;
		close(fd);
		if (err != EWOULDBLOCK) {
			snprintf(why, whylen, "locking %s: %s", lock, strerror(err));
			return -err;
		}
		if (waited < CLAIM_EXITING_MS && holder_exiting(pid)) {
			usleep(CLAIM_LOOK_MS * 1000);
			waited += CLAIM_LOOK_MS;
			goto again;
		}
		snprintf(
		    why, whylen,
		    "another ssqd (pid %s) serves %s%s; stop it first, or pass another "
		    "--socket",
		    *pid ? pid : "unknown", path,
		    waited >= CLAIM_EXITING_MS ? " (exiting, but still holding it "
		                                 "after 2 s)"
		                               : "");
		return -EADDRINUSE;
	}
	/*
	 * Locked, but perhaps the file an ssqd unlinked as it left
	 * (ssqd_socket_unclaim) after this open: a successor that created
	 * the path anew would hold a lock of its own. Take the path's.
	 */
	if (!same_file(fd, lock)) {
		close(fd);
		if (++tries < 100)
			goto again;
		snprintf(why, whylen, "lock file %s: replaced 100 times while locking",
		         lock);
		return -EAGAIN;
	}
	/* Ours now: a socket still there belonged to an ssqd that died. */
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n) {
		err = errno;
		snprintf(why, whylen, "writing %s: %s", lock, strerror(err));
		close(fd);
		return -err;
	}
	unlink(path);
	return fd;
}

void ssqd_socket_unclaim(const char *path, int fd)
{
	char lock[120];

	/*
	 * Unlinked while still locked: a claimer that opened it before sees
	 * another file at the path once it gets the lock, and starts over
	 * (same_file); one that opens after makes a new one.
	 */
	if (snprintf(lock, sizeof(lock), "%s.lock", path) < (int)sizeof(lock))
		unlink(lock);
	close(fd);
}

int ssqd_socket_listen(const char *path, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	int s, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "--socket path longer than %zu bytes",
		         sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0) {
		err = errno;
		snprintf(why, whylen, "socket: %s", strerror(err));
		return -err;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.new", path) >=
	    (int)sizeof(sa.sun_path))
		strcpy(sa.sun_path, path);
	unlink(sa.sun_path); /* a PATH.new left by an ssqd that died: the claim is ours */
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(sa.sun_path, 0660) < 0 || listen(s, 64) < 0 ||
	    (strcmp(sa.sun_path, path) && rename(sa.sun_path, path) < 0)) {
		err = errno;
		snprintf(why, whylen, "listening on %s: %s", path, strerror(err));
		if (strcmp(sa.sun_path, path))
			unlink(sa.sun_path);
		close(s);
		return -err;
	}
	return s;
}
