/* SPDX-License-Identifier: MIT */
/*
 * Held memory (clients/held.c) stays within the quotas after the client
 * that freed it is gone (found by an adversarial review: before, a held
 * buffer whose client had gone counted against nobody, since request.c's
 * uid_bytes and uid_bufs added up live clients only, and pin.c's charged
 * live connections only). A GRANT needs no ATTACH, so the
 * client that grants and frees is not attached and its close is a plain
 * drop, with no kill. The hole that keeps the binds waiting is the
 * attacker's own (H, one reserved WQEBB): it lasts 10 x --stall-ms, and H
 * may reserve another after each repair.
 *
 * bob --stall-ms 1000 --data-mib 16 --max-uid-mib 2 --max-client-mib 2.
 * H (uid 0) opens alice/q0 and reserves one WQEBB. Then, 8 times: a new
 * client of uid 0 allocates 2 MiB, grants it on alice/q0 (its bind waits
 * behind H's hole: -ETIMEDOUT), frees it (held) and closes. Expected: one
 * such buffer at a time, as --max-uid-mib 2 says; before: 8 of them, the
 * whole 16 MiB arena, after which a new client's 1 MiB is refused -ENOMEM
 * ("no room") though its uid holds nothing it is charged for: any other
 * uid sharing this ssqd is locked out of the arena for as long as the
 * holes last (forever under --stall-ms 0, held.c).
 * The same for a process's RLIMIT_MEMLOCK (pin.c charged: live connections
 * of the pid only): a process of uid 65534 (--allow-uid 65534) with
 * RLIMIT_MEMLOCK 64 KiB holds its own hole, and 8 connections in turn each
 * register a 64 KiB memfd, grant it behind the hole, deregister it (held)
 * and close: expected one at a time; before: 8, 512 KiB pinned by ssqd for a
 * process allowed 64 KiB.
 * Runs on the model of libmlx5 (the emulated device binds at once: no
 * hold): ctest runs it with the model's environment.
 */
#define _GNU_SOURCE /* memfd_create */
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cap_flow.h"
#include "ctrl/client/client_pvt.h"

#define N      2
#define ACC    (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define LEN    (2u << 20)
#define ROUNDS 8u
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* One round: a client that allocates, grants behind the hole, frees, leaves. */
static int round_once(unsigned i)
{
	struct ssq_client *g = t_cluster_connect(&cl, 1);
	struct ssq_buf b;
	struct ssq_desc d;
	int rc, grc;

	if (!g)
		return -ENOTCONN;
	rc = ssq_buf_alloc(g, LEN, &b);
	if (rc) {
		printf("round %u: alloc of %u bytes: %d %s\n", i, LEN, rc,
		       ssq_client_error(g));
		ssq_client_close(g);
		return rc;
	}
	grc = ssq_buf_grant(g, "alice/q0", &b, 0, 4096, ACC, &d);
	rc = ssq_buf_free(g, &b);
	printf("round %u: 2 MiB at %llu, grant %d, free %d\n", i,
	       (unsigned long long)b.off, grc, rc);
	ssq_client_close(g);
	return grc == -ETIMEDOUT ? 0 : 1;
}

/* A 64 KiB memfd registered by @c (ssqd pins it: charged): 0, or -errno. */
static int reg_memfd(struct ssq_client *c, struct ssq_mr *mr)
{
	int fd = memfd_create("ssq-adv-held", MFD_CLOEXEC), rc;

	if (fd < 0 || ftruncate(fd, 64 << 10))
		return -errno;
	rc = ssq_mem_reg_fd(c, fd, 0, 64 << 10, IBV_ACCESS_LOCAL_WRITE | ACC, mr);
	close(fd);
	return rc;
}

/* The memlock phase, in a child of uid 65534: how many were held at once. */
static int memlock_child(void)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct ssq_client *h, *g;
	struct ssq_producer *p;
	struct ssq_queue *q = NULL;
	struct ssq_desc d;
	struct ssq_mr mr;
	uint64_t pos = 0;
	unsigned i, n = 0;
	int rc, grc;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setgid(65534) ||
	    setuid(65534))
		return 200;
	if (ssq_client_connect(cl.sock[1], &h) || ssq_queue_open(h, "alice/q0", &q))
		return 201;
	p = ssq_queue_producer(q);
	if (ssq_reserve(p, 1, &pos))
		return 202;
	/* The limit works on one connection: a second 64 KiB is refused. */
	if (ssq_client_connect(cl.sock[1], &g) || reg_memfd(g, &mr))
		return 204;
	{
		struct ssq_mr mr2;

		rc = reg_memfd(g, &mr2);
		printf("memlock: a second 64 KiB on one connection: %d %s\n", rc,
		       rc ? ssq_client_error(g) : "registered");
		if (rc != -ENOMEM)
			return 205;
	}
	ssq_mem_dereg(g, &mr);
	ssq_client_close(g);
	for (i = 0; i < ROUNDS; i++) {
		if (ssq_client_connect(cl.sock[1], &g))
			return 203;
		rc = reg_memfd(g, &mr);
		if (rc) {
			printf("memlock round %u: register 64 KiB: %d %s\n", i, rc,
			       ssq_client_error(g));
			ssq_client_close(g);
			break;
		}
		grc = ssq_mem_grant(g, "alice/q0", &mr, 0, 4096, ACC, &d);
		rc = ssq_mem_dereg(g, &mr);
		printf("memlock round %u: 64 KiB registered, grant %d, dereg %d\n", i,
		       grc, rc);
		n += grc == -ETIMEDOUT;
		ssq_client_close(g);
	}
	fflush(stdout);
	cap_hole_fill(p, pos);
	ssq_client_close(h);
	return (int)n;
}

static void memlock_phase(void)
{
	pid_t pid;
	int st = 0;

	chmod(cl.sock[1], 0666);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(memlock_child());
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st), "memlock child");
	printf("memlock: %d registrations of 64 KiB held at once\n", WEXITSTATUS(st));
	CHECK(WEXITSTATUS(st) <= 1,
	      "a process of uid 65534 with RLIMIT_MEMLOCK 64 KiB had %d registrations "
	      "of 64 KiB pinned by ssqd at once (exit status %d)",
	      WEXITSTATUS(st), WEXITSTATUS(st));
}

int main(void)
{
	struct ssq_client *ch = NULL, *x = NULL;
	struct ssq_producer *hp;
	struct ssq_queue *qh = NULL;
	struct ssq_buf nb;
	uint64_t pos = 0;
	unsigned i, held = 0;
	double t0;
	int rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set");
	if (!getenv("SSQ_MLX5MODEL"))
		SKIP("the emulated device binds at once: run on the model of libmlx5");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1;
	cf_cluster_files(&cl, "adv-held-quota", N, names, 0);
	for (i = 0; i < N; i++)
		CHECK(t_cluster_start(&cl, i,
		                      T_ARGS("--stall-ms", "1000", "--data-mib", "16",
		                             "--max-uid-mib", "2", "--max-client-mib",
		                             "2", "--allow-uid", "65534")) > 0,
		      "start %s", names[i]);
	ch = t_cluster_connect(&cl, 1);
	rc = ch ? ssq_queue_open(ch, "alice/q0", &qh) : -ENOTCONN;
	CHECK(rc == 0, "H opens alice/q0: %d", rc);
	if (rc)
		goto out;
	hp = ssq_queue_producer(qh);
	CHECK(ssq_reserve(hp, 1, &pos) == 0, "H reserves its hole");
	for (i = 0; i < ROUNDS; i++) {
		rc = round_once(i);
		if (rc < 0)
			break;
		held += rc == 0;
	}
	x = t_cluster_connect(&cl, 1);
	rc = x ? ssq_buf_alloc(x, 1u << 20, &nb) : -ENOTCONN;
	printf("then a new client of uid 0 asks 1 MiB: %d %s\n", rc,
	       x ? (rc ? ssq_client_error(x) : "ok") : "-");
	if (x && !rc)
		ssq_buf_free(x, &nb);
	CHECK(held <= 1,
	      "uid 0 (--max-uid-mib 2) had %u buffers of 2 MiB held at once (%u MiB "
	      "of the 16 MiB arena) by freeing each behind a hole and leaving",
	      held, held * 2);
	/* The hole filled: the held memory comes back (the test leaves it clean). */
	CHECK(cap_hole_fill(hp, pos) == 0, "H fills its hole");
	for (t0 = now_s(); x && now_s() - t0 < 10; usleep(10000))
		if (!ssq_buf_alloc(x, 8u << 20, &nb)) {
			ssq_buf_free(x, &nb);
			break;
		}
	memlock_phase();
out:
	if (x)
		ssq_client_close(x);
	if (ch)
		ssq_client_close(ch);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_held_quota");
}
