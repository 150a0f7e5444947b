/* SPDX-License-Identifier: MIT */
/* One ssqd per socket path (util/util.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

int ssqd_socket_claim(const char *path, char *why, size_t whylen)
{
	char lock[120], pid[32] = "";
	int fd, err, n;

	err = private_dir(path, why, whylen);
	if (err)
		return err;
	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock)) {
		snprintf(why, whylen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
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
		snprintf(
		    why, whylen,
		    "another ssqd (pid %s) serves %s; stop it first, or pass another "
		    "--socket",
		    *pid ? pid : "unknown", path);
		return -EADDRINUSE;
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
