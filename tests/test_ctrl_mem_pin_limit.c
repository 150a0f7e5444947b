/* SPDX-License-Identifier: MIT */
/*
 * What ssqd registers for a client is charged to the client's own
 * RLIMIT_MEMLOCK, as the kernel charges a process that pins memory for a
 * ConnectX (ib_umem_get: ENOMEM past the limit without CAP_IPC_LOCK). A
 * client with a 1 MiB limit and no CAP_IPC_LOCK: 2 MiB of its memory is
 * refused with -ENOMEM naming RLIMIT_MEMLOCK; two 512 KiB registrations
 * fit, a third page does not, nor a page of a memfd (a file ssqd pins for
 * it counts the same); after one is deregistered the memfd page fits. A
 * client with CAP_IPC_LOCK (root here) or a larger limit registers 2 MiB.
 * The limit holds across a process's connections, and a fork()ed child
 * has its own (per_process).
 * Before, ssqd registered anything, so any client could pin the host's
 * memory through it (ssqd holds CAP_IPC_LOCK).
 */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "cluster_flow.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* Drop CAP_IPC_LOCK from this process's effective set (if it has it). */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &h, data) == 0) {
		data[0].effective &= ~(1u << CAP_IPC_LOCK);
		(void)syscall(SYS_capset, &h, data);
	}
}

/*
 * The limit is the process's, over all its connections (ib_umem_get charges
 * the mm's pinned_vm): with 516 KiB held through @c, a second connection
 * cannot add 512 KiB (before, each connection had a limit of its own: one
 * process pinned 8 times its limit over 8), but can add 256 KiB. A fork()ed
 * child is another mm (mm_init starts pinned_vm at 0, kernel/fork.c) and
 * another process here: its own 768 KiB fit while the parent holds 772.
 */
static void per_process(const char *sock, struct ssq_client *c, void *p512)
{
	struct ssq_client *c2;
	struct ssq_mr y;
	void *p256 = aligned_alloc(4096, 256 * KIB),
	     *p768 = aligned_alloc(4096, 768 * KIB);
	int rc, st;
	pid_t kid;

	(void)c;
	if (!p256 || !p768 || ssq_client_connect(sock, &c2)) {
		CHECK(0, "a second connection");
		return;
	}
	rc = ssq_mem_reg(c2, p512, 512 * KIB, IBV_ACCESS_LOCAL_WRITE, &y);
	CHECK(rc == -ENOMEM && strstr(ssq_client_error(c2), "RLIMIT_MEMLOCK"),
	      "512 KiB more through a second connection of the same process: %d (%s)", rc,
	      ssq_client_error(c2));
	rc = ssq_mem_reg(c2, p256, 256 * KIB, IBV_ACCESS_LOCAL_WRITE, &y);
	CHECK(rc == 0, "256 KiB through the second connection: %d (%s)", rc,
	      ssq_client_error(c2));
	kid = fork();
	if (kid == 0) {
		struct ssq_client *k;
		struct ssq_mr z;

		memset(p768, 3, 768 * KIB);
		if (ssq_client_connect(sock, &k))
			_exit(2);
		rc = ssq_mem_reg(k, p768, 768 * KIB, IBV_ACCESS_LOCAL_WRITE, &z);
		if (rc)
			fprintf(stderr, "fork child: %d (%s)\n", rc, ssq_client_error(k));
		_exit(rc ? 1 : 0);
	}
	waitpid(kid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a fork()ed child's own 768 KiB: status 0x%x", st);
	ssq_client_close(c2);
}

static int limited_client(const char *sock)
{
	struct rlimit rl = { MIB, MIB };
	struct ssq_client *c;
	struct ssq_mr a, b, x;
	void *big = aligned_alloc(4096, 2 * MIB), *p1 = aligned_alloc(4096, 512 * KIB),
	     *p2 = aligned_alloc(4096, 512 * KIB), *p3 = aligned_alloc(4096, 4096);
	int fd = memfd_create("ssq-pin", MFD_CLOEXEC), rc;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || fd < 0 || ftruncate(fd, 4096))
		return 1;
	drop_ipc_lock();
	if (ssq_client_connect(sock, &c))
		return 1;
	memset(big, 1, 2 * MIB);
	rc = ssq_mem_reg(c, big, 2 * MIB, IBV_ACCESS_LOCAL_WRITE, &x);
	CHECK(rc == -ENOMEM && strstr(ssq_client_error(c), "RLIMIT_MEMLOCK"),
	      "2 MiB under a 1 MiB limit: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_mem_reg(c, p1, 512 * KIB, IBV_ACCESS_LOCAL_WRITE, &a);
	CHECK(rc == 0, "the first 512 KiB: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_mem_reg(c, p2, 512 * KIB, IBV_ACCESS_LOCAL_WRITE, &b);
	CHECK(rc == 0, "the second 512 KiB: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_mem_reg(c, p3, 4096, IBV_ACCESS_LOCAL_WRITE, &x);
	CHECK(rc == -ENOMEM, "one more page: %d", rc);
	rc = ssq_mem_reg_fd(c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &x);
	CHECK(rc == -ENOMEM, "a memfd page past the limit: %d", rc);
	rc = ssq_mem_dereg(c, &a);
	CHECK(rc == 0, "dereg: %d", rc);
	rc = ssq_mem_reg_fd(c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &x);
	CHECK(rc == 0, "the memfd page once 512 KiB went: %d (%s)", rc,
	      ssq_client_error(c));
	per_process(sock, c, p1);
	ssq_client_close(c);
	return test_failures != 0;
}

int main(void)
{
	char sock[108];
	struct ssq_client *c;
	struct ssq_mr m;
	void *big = aligned_alloc(4096, 2 * MIB);
	int st, rc;
	pid_t d, kid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-pin-%d.sock", getpid());
	d = cf_start(sock, NULL, 0, NULL, NULL);
	c = ssqd_connect_pid(sock, d);
	if (!c) {
		kill(d, SIGKILL);
		return 1;
	}
	kid = fork();
	if (kid == 0)
		_exit(limited_client(sock));
	waitpid(kid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the limited client's checks (status 0x%x; its lines above)", st);
	memset(big, 2, 2 * MIB);
	rc = ssq_mem_reg(c, big, 2 * MIB, IBV_ACCESS_LOCAL_WRITE, &m);
	CHECK(rc == 0, "2 MiB with CAP_IPC_LOCK or an 8 MiB limit: %d (%s)", rc,
	      ssq_client_error(c));
	ssq_client_close(c);
	free(big);
	t_ssqd_stop(d, &st, sock);
	return test_exit("ctrl_mem_pin_limit");
}
