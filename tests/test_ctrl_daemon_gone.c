/* SPDX-License-Identifier: MIT */
/*
 * ssqd killed (SIGKILL: no chance to fence its queues) while clients are
 * attached. On a ConnectX its QPs would stay in RTS, held open by the
 * clients' UAR mappings, with nobody healing, routing or refilling. The
 * client library notices the hang-up by itself, with no call into it:
 *  - a second client process that only spins in the inline ssq_poll sees
 *    -ENOTCONN within a bound;
 *  - in this process ssq_reserve, ssq_submit and ssq_poll return -ENOTCONN;
 *  - the UAR page no longer maps the device's file (here the emulated
 *    device's memfd; on a ConnectX the uverbs command fd), so the
 *    connection's end lets the device's resources go.
 * Before, reservations kept succeeding and the UAR stayed mapped.
 */
#include "ctrl_flow.h"

/* A second client: attach, then only ssq_poll until -ENOTCONN. 0: seen. */
static int poller(int ready)
{
	struct ssq_completion comp;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *p;
	double t0;
	int rc = 0;

	if (ssq_client_connect(sock_path, &c) || ssq_queue_open(c, "q0", &q))
		return 2;
	p = ssq_queue_producer(q);
	(void)!write(ready, "r", 1);
	close(ready);
	t0 = now_s();
	while (now_s() - t0 < 20 && (rc = ssq_poll(p, &comp, 1)) == 0)
		ssq_cpu_relax();
	return rc == -ENOTCONN ? 0 : 3;
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	struct ssq_producer *p;
	struct ssq_completion comp;
	char before[256], after[256], r;
	uint64_t pos;
	double t0, took;
	int ready[2], status, rc, rrc = 0;
	pid_t d, kid;

	d = flow_start_q0("gone", &c, &q, &a, &b);
	if (d < 0)
		return test_exit("ctrl_daemon_gone");
	if (test_failures)
		goto out;
	p = ssq_queue_producer(q);
	CHECK(write_and_wait(q, &a, &b, 64) == 0, "a WRITE before ssqd dies");
	flow_mapping(ssq_queue_sq(q)->bf_reg, before, sizeof(before));
	CHECK(before[0] != 0, "the UAR page is not a file mapping: '%s'", before);

	if (pipe(ready))
		return 1;
	kid = fork();
	if (kid == 0) {
		close(ready[0]);
		_exit(poller(ready[1]));
	}
	close(ready[1]);
	CHECK(read(ready[0], &r, 1) == 1, "the second client never attached");

	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	/* No call into the library here: only the inline fast path. */
	t0 = now_s();
	while ((rc = ssq_reserve(p, 1, &pos)) == 0 && now_s() - t0 < 5) {
		ssq_prep_nop(ssq_producer_sq(p), (uint32_t)pos,
		             ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
		ssq_publish(p, pos, 1, 0, SSQ_WQE_SIGNALED);
		ssq_submit(p);
		while (ssq_poll(p, &comp, 1) > 0)
			;
		usleep(1000);
	}
	took = now_s() - t0;
	rrc = rc;
	CHECK(rc == -ENOTCONN, "ssq_reserve after ssqd was killed: %d (want -ENOTCONN)",
	      rc);
	CHECK(took < 2.0, "ssq_reserve took %.2f s to see ssqd gone", took);
	CHECK(ssq_submit(p) == -ENOTCONN, "ssq_submit after ssqd was killed");
	while ((rc = ssq_poll(p, &comp, 1)) > 0)
		;
	CHECK(rc == -ENOTCONN, "ssq_poll after ssqd was killed: %d", rc);
	/* The library unmaps the UAR before it marks the producer gone. */
	flow_mapping(ssq_queue_sq(q)->bf_reg, after, sizeof(after));
	CHECK(after[0] == 0, "the UAR still maps '%s' after ssqd was killed", after);
	status = -1;
	t0 = now_s();
	while (now_s() - t0 < 10 && waitpid(kid, &status, WNOHANG) != kid)
		usleep(10000);
	if (status == -1) {
		kill(kid, SIGKILL);
		waitpid(kid, &status, 0);
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the client spinning in ssq_poll did not see -ENOTCONN (status 0x%x)",
	      status);
	printf("ssqd killed: ssq_reserve returned %d after %.3f s; UAR was '%s'\n", rrc,
	       took, before);
out:
	ssq_client_close(c);
	unlink(sock_path);
	return test_exit("ctrl_daemon_gone");
}
