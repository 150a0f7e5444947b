/* SPDX-License-Identifier: MIT */
/*
 * Adversary: registrations that outlive their client. 40 client
 * processes each register 64 buffers (the most one may: 40 x 64 is past
 * the table's 1024, so the later ones are refused until earlier ones are
 * reaped) and die with SIGKILL, half of them with a SEND stuck in flight
 * (ssqd --recv-depth 0: it waits for a receive WQE for ever).
 * Wanted: ssqd holds as many descriptors as before the clients came, and
 * a new client registers. Before a fix: a dead client's registrations go
 * only once every queue has completed what was reserved at its death
 * (reap_graves), and a SEND that waits for ever (here the dead ones' own;
 * one of a live client does the same) pins every later death's
 * registrations: the table stays full (1024), ssqd keeps 1024 descriptors
 * of dead processes, and nobody can register again. With no SEND stuck
 * (every child i % 2 -> 0) the same run ends with no descriptor left.
 */
#define _GNU_SOURCE
#include <poll.h>
#include "stall_flow.h"

#define NPROC 40

static void child(int stuck, int ready)
{
	uint8_t *mem = malloc(4096);
	struct conn k;
	struct ssq_mr mr;
	int i, n = 0;

	/* The queue may be in error from the last dead ones' SENDs until the
	 * parent, which has it open, recovers it. */
	if (!mem || conn_open_wait(&k, 120.0)) {
		n = -1;
		(void)!write(ready, &n, sizeof(n));
		_exit(3);
	}
	for (i = 0; i < 64; i++)
		n += ssq_mem_reg(k.c, mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) == 0;
	if (stuck && n)
		ssq_post_send(k.p, MLX5_OPCODE_SEND, (uint64_t)(uintptr_t)mem, mr.lkey,
		              64, 0, 1, SSQ_WQE_SIGNALED);
	(void)!write(ready, &n, sizeof(n));
	pause();
	_exit(0);
}

/*
 * What a child reports (the registrations it made, -1 after a failure).
 * Meanwhile the queue is recovered each second, as a child's open waits
 * for that when the dead ones' SENDs put the queue in error.
 */
static int child_report(int fd, struct conn *a)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double end = now_s() + 100.0;
	int n;

	while (poll(&pfd, 1, 1000) == 0 && now_s() < end)
		ssq_queue_recover(a->q);
	if (!(pfd.revents & POLLIN) || read(fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	return n;
}

int main(void)
{
	struct conn a;
	struct ssq_mr mr;
	uint8_t *mem = malloc(4096);
	int p[2], i, n, total = 0, before, after, rc;
	pid_t d, kids[NPROC];
	double t0;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	setenv("SSQ_TEST_STALL_OPT", "--recv-depth=0", 1);
	d = stall_ssqd_up("adv-deadfds");
	if (d < 0 || pipe(p) || conn_open(&a))
		return 1;
	before = t_proc_fds(d);
	for (i = 0; i < NPROC; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			child(i % 2, p[1]);
		n = child_report(p[0], &a);
		CHECK(n >= 0,
		      "child %d reported nothing (its error above, or none for 100 s)",
		      i);
		if (n < 0) {
			/* Leave no child behind. */
			for (; i >= 0 && i % 8 != 7; i--) {
				kill(kids[i], SIGKILL);
				waitpid(kids[i], NULL, 0);
			}
			break;
		}
		total += n;
		if (i % 8 == 7) {
			int j;

			/* Die, and make room for the next ones. */
			for (j = i - 7; j <= i; j++) {
				kill(kids[j], SIGKILL);
				waitpid(kids[j], NULL, 0);
			}
			ssq_queue_recover(a.q);
			usleep(300000);
		}
	}
	printf("%d registrations made by %d processes, all killed\n", total, NPROC);
	rc = ssq_queue_recover(a.q);
	t0 = now_s();
	do {
		usleep(100000);
		after = t_proc_fds(d);
	} while (after > before && now_s() - t0 < 5.0);
	printf("ssqd's descriptors: %d before, %d after (recover: %d)\n", before, after,
	       rc);
	CHECK(after <= before, "no descriptor left behind: %d before, %d after", before,
	      after);
	CHECK(mem && ssq_mem_reg(a.c, mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) == 0,
	      "a new registration: %s", ssq_client_error(a.c));
	ssq_client_close(a.c);
	free(mem);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_dead_fds");
}
