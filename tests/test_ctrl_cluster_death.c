/* SPDX-License-Identifier: MIT */
/*
 * Deaths that come together are healed together: three producers each
 * caught mid-reservation are killed at once, and a survivor's WRITE behind
 * their holes completes within 2 s. Before, ssqd healed one death at a
 * time, each heal holding its thread for --heal-ms (3 s here) while it
 * waited on the next dying producer it had not seen die yet: 9 s. Now a
 * heal is tried in 1 ms slices between polls, so the next death is seen.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

#define DYING 3

/*
 * Reserve one WQEBB, look as if stopped between the fetch-add and recording
 * it (the state a heal must wait out while the producer lives), say so,
 * and stay so until killed.
 */
static void hold_reservation(int ready)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	uint64_t pos;
	char ok = 0;

	if (ssq_client_connect(sock_path, &c) == 0 && ssq_queue_open(c, "q0", &q) == 0 &&
	    ssq_reserve(ssq_queue_producer(q), 1, &pos) == 0) {
		struct ssq_ctl_producer *me = ssq_queue_producer(q)->me;

		/* An odd generation: "between the fetch-add and the record". */
		__atomic_store_n(&me->resv_gen, me->resv_gen | 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&me->state, SSQ_PROD_RESERVING, __ATOMIC_SEQ_CST);
		ok = 1;
	}
	(void)!write(ready, &ok, 1);
	for (;;)
		pause();
}

int main(void)
{
	const char *ssqd = getenv("SSQD");
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	pid_t d, kids[DYING];
	int i, ready[2], status;
	double t0, took;
	char ok;

	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-cluster-%d.sock", getpid());
	d = fork();
	if (d == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock_path,
		      "--hugepages=off", "--data-mib", "4", "--heal-ms", "3000",
		      (char *)NULL);
		_exit(127);
	}
	c = connect_retry(d);
	if (!c || ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 64, &a) ||
	    ssq_buf_alloc(c, 64, &b)) {
		kill(d, SIGKILL);
		return 1;
	}
	if (pipe(ready))
		return 1;
	for (i = 0; i < DYING; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			hold_reservation(ready[1]);
		CHECK(read(ready[0], &ok, 1) == 1 && ok == 1,
		      "producer %d did not reserve", i);
	}
	t0 = now_s();
	for (i = 0; i < DYING; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < DYING; i++)
		waitpid(kids[i], NULL, 0);
	memset(a.addr, 0x77, 64);
	CHECK(write_and_wait(q, &a, &b, 64) == 0,
	      "a WRITE behind the dead producers' holes");
	took = now_s() - t0;
	CHECK(took < 2.0, "%d deaths healed in %.2f s; one heal may wait 3 s", DYING,
	      took);
	CHECK(((uint8_t *)b.addr)[63] == 0x77, "the WRITE moved no data");
	ssq_client_close(c);
	t_ssqd_stop(d, &status, sock_path);
	return test_exit("ctrl_cluster_death");
}
