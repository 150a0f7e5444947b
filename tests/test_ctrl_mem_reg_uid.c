/* SPDX-License-Identifier: MIT */
/*
 * Registrations across uids with a per-user ssqd (issue 28, item 9).
 *  1. ssqd charges what it pins for a client to the client's
 *     RLIMIT_MEMLOCK, and read it with prlimit(2), which another uid may
 *     do only with CAP_SYS_RESOURCE: an ssqd of uid 65534 refused every
 *     charged registration of a client of uid 65533 with -EPERM. Here, as
 *     uid 65534, ssqd_pin_charge for a memfd of a process of uid 65533
 *     (RLIMIT_MEMLOCK 64 KiB): 16 KiB charged, 128 KiB more -ENOMEM naming
 *     the limit (read from /proc/PID/limits, and kept).
 *  2. The emulated device also reads a client's /proc/PID/maps, closed to
 *     another uid without CAP_SYS_PTRACE: such an ssqd (uid 65534,
 *     --allow-uid 65533) says so at start, and the client's ssq_mem_reg
 *     is -EACCES naming the reason (ssq_mem_reg(3)), never -EPERM.
 * Needs root, to run as the two other uids.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/daemon/clients/clients.h"

#define SSQD_UID   65534
#define CLIENT_UID 65533

static char sock[108], log_path[108];
static struct ssqd daemon_state; /* ssqd_pin_charge's: no client holds anything */

/*
 * Become @uid, as a process that uid started would be: dumpable again (a
 * uid change clears it, and its /proc/self files would stay root's).
 */
static int be(uid_t uid)
{
	return setgroups(0, NULL) || setgid(uid) || setuid(uid) ||
	               prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
	           ? -1
	           : 0;
}

/* 1., in a child of SSQD_UID: 0 when both charges answer as above. */
static int charge_other_uid(pid_t target)
{
	struct ssqd_client c;
	uint64_t charge = 0;
	char why[300] = "";
	int fd = memfd_create("ssq-mru", MFD_CLOEXEC), rc;

	if (be(SSQD_UID) || fd < 0 || ftruncate(fd, 256 << 10))
		return 2;
	memset(&c, 0, sizeof(c));
	c.pid = target;
	c.pidfd = -1;
	c.id = 1;
	rc = ssqd_pin_charge(&daemon_state, &c, SSQ_MEM_FILE, fd, 0, 16 << 10, &charge,
	                     why, sizeof(why));
	if (rc || charge != 16 << 10) {
		fprintf(stderr, "uid %d charging 16 KiB to uid %d: %d, %llu (%s)\n",
		        SSQD_UID, CLIENT_UID, rc, (unsigned long long)charge, why);
		return 1;
	}
	rc = ssqd_pin_charge(&daemon_state, &c, SSQ_MEM_FILE, fd, 0, 128 << 10, &charge,
	                     why, sizeof(why));
	if (rc != -ENOMEM || !strstr(why, "RLIMIT_MEMLOCK of 65536")) {
		fprintf(stderr, "uid %d charging 128 KiB past a 64 KiB limit: %d (%s)\n",
		        SSQD_UID, rc, why);
		return 1;
	}
	return 0;
}

/* 2., in a child of CLIENT_UID: 0 when ssq_mem_reg answers as documented. */
static int client(void)
{
	static char mine[4096] __attribute__((aligned(4096)));
	struct ssq_client *c = NULL;
	struct ssq_mr mr;
	int rc, i;

	if (be(CLIENT_UID))
		return 2;
	setenv("SSQ_SERVER_UID", "65534", 1); /* the per-user ssqd it trusts */
	for (i = 0; i < 400 && ssq_client_connect(sock, &c); i++)
		usleep(50000);
	if (!c)
		return 3;
	rc = ssq_mem_reg(c, mine, sizeof(mine), IBV_ACCESS_LOCAL_WRITE, &mr);
	if (rc != -EACCES || !strstr(ssq_client_error(c), "another uid")) {
		fprintf(stderr, "uid %d: ssq_mem_reg of 4 KiB: %d (%s)\n", CLIENT_UID, rc,
		        ssq_client_error(c));
		return 1;
	}
	ssq_client_close(c);
	return 0;
}

static int status_of(pid_t pid)
{
	int st = 0;

	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	const char *args[] = { getenv("SSQD"), "--device", test_device(),
		               "--socket",     sock,       "--hugepages=off",
		               "--data-mib",   "8",        "--allow-uid",
		               "65533",        NULL };
	struct rlimit rl = { 64 << 10, 64 << 10 };
	int gate[2], rc, i;
	pid_t d, k, t;
	char b;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if (geteuid() != 0)
		SKIP("not root: cannot run as uids %d and %d", SSQD_UID, CLIENT_UID);
	if (strcmp(test_device(), "emu"))
		SKIP("device %s: the /proc/PID/maps case is the emulated device's",
		     test_device());

	/* 1. A process of uid 65533 with a 64 KiB limit, waiting on @gate. */
	CHECK(pipe(gate) == 0, "pipe");
	t = fork();
	if (t == 0) {
		close(gate[1]);
		if (be(CLIENT_UID) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(2);
		(void)!read(gate[0], &b, 1);
		_exit(0);
	}
	close(gate[0]);
	usleep(200000); /* its uid and limit set */
	k = fork();
	if (k == 0)
		_exit(charge_other_uid(t));
	rc = status_of(k);
	CHECK(rc == 0,
	      "an ssqd of uid %d charges a client of uid %d to its RLIMIT_MEMLOCK, "
	      "and refuses past it (exit %d)",
	      SSQD_UID, CLIENT_UID, rc);
	close(gate[1]);
	status_of(t);

	/* 2. */
	snprintf(sock, sizeof(sock), "/tmp/ssq-mru-%d.sock", getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/ssq-mru-%d.log", getpid());
	d = fork();
	if (d == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		if (be(SSQD_UID))
			_exit(126);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	/* ssqd's socket is 0660: its admin lets the allowed uid at it. */
	for (i = 0; i < 400 && chmod(sock, 0666); i++)
		usleep(50000);
	k = fork();
	if (k == 0)
		_exit(client());
	rc = status_of(k);
	CHECK(rc == 0,
	      "uid %d's ssq_mem_reg through an ssqd of uid %d: EACCES, why (exit %d)",
	      CLIENT_UID, SSQD_UID, rc);
	kill(d, SIGTERM);
	status_of(d);
	CHECK(cf_file_has(log_path, "without CAP_SYS_PTRACE: other uids' ssq_mem_reg"),
	      "ssqd said so at start");
	if (test_failures) {
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "cat %s >&2", log_path);
		(void)!system(cmd);
	}
	unlink(log_path);
	unlink(sock);
	return test_exit("ctrl_mem_reg_uid");
}
