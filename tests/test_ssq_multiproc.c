/* SPDX-License-Identifier: MIT */
/*
 * P processes (1, 2, 4, 8) share one queue of ssqd on the emulated device
 * in full mode; each posts M messages (ssq_flow.h: a tagged 64-byte RDMA
 * WRITE and an ATOMIC_FA of +1, reserved as one batch). Afterwards the
 * destination holds every payload, every counter is exactly 1 (nothing
 * lost, nothing executed twice), and each process got exactly its
 * signaled completions, in its posting order, with its wr_ids.
 */
#include "ssq_flow.h"

#define M    2000u
#define PMAX 8u

static char sock[108];

int main(void)
{
	static const uint32_t procs[] = { 1, 2, 4, 8 };
	const char *ssqd = getenv("SSQD");
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_buf dst, cnt;
	struct msg_area a;
	pid_t d, kids[PMAX];
	unsigned r, i;
	int status;

	if (!ssqd)
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock, sizeof(sock), "/tmp/ssq-mp-%d.sock", getpid());
	c = ssqd_start(sock, "16", "1024", NULL, &d);
	if (!c || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, PMAX * M * CELL, &dst) ||
	    ssq_buf_alloc(c, PMAX * M * 8, &cnt)) {
		fprintf(stderr, "setup: %s\n",
		        c ? ssq_client_error(c) : ssq_client_strerror_last());
		kill(d, SIGKILL);
		return 1;
	}
	msg_area_place(&a, &dst, &cnt);
	a.per_proc = M;
	a.nlong = PMAX;
	a.short_len = 0;

	for (r = 0; r < sizeof(procs) / sizeof(procs[0]); r++) {
		uint32_t P = procs[r];
		double t0 = now_s();
		unsigned bad = 0;

		memset(dst.addr, 0, dst.len);
		memset(cnt.addr, 0, cnt.len);
		for (i = 0; i < P; i++) {
			kids[i] = fork();
			if (kids[i] == 0)
				_exit(producer_process(sock, &a, i, M));
		}
		for (i = 0; i < P; i++) {
			waitpid(kids[i], &status, 0);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "P=%u: producer %u exit 0x%x", P, i, status);
		}
		for (i = 0; i < P; i++)
			bad += check_msgs(&a, i, M, 1);
		CHECK(bad == 0, "P=%u: %u messages wrong", P, bad);
		printf("P=%u: %u messages (%u WQEs) through one queue in %.2f s\n", P,
		       P * M, 2 * P * M, now_s() - t0);
	}
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ssq_multiproc");
}
