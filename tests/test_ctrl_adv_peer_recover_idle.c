/* SPDX-License-Identifier: MIT */
/*
 * A RECOVER of an on-demand link's queue while the far ssqd would close
 * the link as idle (--idle-ms): nothing of the pair is open there, only a
 * client here has the queue open. Each round the queue is put in error (a
 * WRITE to a bad R_Key: the far end NAKs it), recovered, and must carry
 * a WRITE again. The RECOVER closes the link and asks for a fresh one at
 * once; the far ssqd, which has nothing open, must link again for it all
 * the same, whichever side dials, also when it was stopped (SIGSTOP, 200
 * ms) across the RECOVER. Each RECOVER is answered with the queue READY.
 * (ctrl_cap_grant once saw a RECOVER fail for its whole 20 s under ASan,
 * said to be the far ssqd closing the link as idle mid-recovery; not
 * reproduced here, nor by that test without its held ends.)
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "cluster_flow.h"

#define ROUNDS 16
/*
 * ssqd answers a RECOVER once the link is back, or after SSQD_RELINK_MS
 * (3 s) with -EHOSTDOWN, and the link is back in milliseconds on a quiet
 * machine; the race held it for 20 s. A RECOVER asked again after
 * -EHOSTDOWN on a loaded machine still counts from the first.
 */
#define LIMIT_S 10.0

static const char *const names[2] = { "alice", "bob" };
static struct t_cluster cl;

/* One signaled 8-byte WRITE from @l to (@raddr, @rkey); its status. */
static int write8(struct ssq_queue *q, const struct ssq_buf *l, uint64_t raddr,
                  uint32_t rkey, uint64_t id)
{
	struct ssq_buf r = { 0 };

	r.remote_addr = raddr;
	r.rkey = rkey;
	return cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, l, 0, 8, &r, 0, id, 10,
	              0);
}

/*
 * Rounds of error and RECOVER on @near's queue to @far, which runs with
 * --idle-ms 10; @far_client holds the WRITEs' target. Returns the slowest
 * RECOVER, seconds, or -1 after a failure (said).
 */
static double rounds(unsigned near, unsigned far)
{
	struct ssq_client *c = t_cluster_connect(&cl, near),
	                  *fc = t_cluster_connect(&cl, far);
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	char qname[32];
	double worst = 0;
	int i, rc = -1;

	snprintf(qname, sizeof(qname), "%s/q0", names[far]);
	if (!c || !fc || ssq_queue_open(c, qname, &q) || ssq_buf_alloc(c, 4096, &src) ||
	    ssq_buf_alloc(fc, 4096, &dst)) {
		fprintf(stderr, "set-up of %s: %s\n", qname,
		        c ? ssq_client_error(c) : "no client");
		goto out;
	}
	for (i = 0; i < ROUNDS; i++) {
		double t0, took;
		int st;

		*(volatile uint64_t *)src.addr = 0x1000 + (uint64_t)i;
		st = write8(q, &src, dst.remote_addr, dst.rkey, 1);
		if (st != IBV_WC_SUCCESS ||
		    *(volatile uint64_t *)dst.addr != 0x1000 + (uint64_t)i) {
			fprintf(stderr, "%s round %d: WRITE status %d, landed 0x%llx\n",
			        qname, i, st,
			        (unsigned long long)*(volatile uint64_t *)dst.addr);
			goto out;
		}
		/* The far ssqd's link idles (nothing open there) meanwhile. */
		usleep(10000 * (i % 5));
		st = write8(q, &src, dst.remote_addr, dst.rkey ^ 0x5a5a, 2);
		if (st != IBV_WC_REM_ACCESS_ERR) {
			fprintf(stderr, "%s round %d: bad R_Key gave status %d\n", qname,
			        i, st);
			goto out;
		}
		/*
		 * Every other round the far ssqd is stopped for 200 ms from
		 * just before the RECOVER: the close of the old link, our
		 * want or dial and its idle timer all wait for it together.
		 */
		if (i % 2) {
			kill(cl.pid[far], SIGSTOP);
			if (fork() == 0) {
				usleep(200000);
				kill(cl.pid[far], SIGCONT);
				_exit(0);
			}
		}
		t0 = now_s();
		while ((rc = ssq_queue_recover(q)) && now_s() - t0 < 30)
			usleep(20000);
		took = now_s() - t0;
		if (i % 2) {
			kill(cl.pid[far], SIGCONT);
			wait(NULL);
		}
		if (rc || !cf_wait_ready(c, qname, 1, 30)) {
			fprintf(stderr, "%s round %d: RECOVER %d after %.2f s (%s)\n",
			        qname, i, rc, took, ssq_client_error(c));
			rc = -1;
			goto out;
		}
		if (took > worst)
			worst = took;
	}
	rc = 0;
	printf("%s: %d rounds, the slowest RECOVER %.3f s\n", qname, ROUNDS, worst);
out:
	if (q)
		ssq_queue_close(q);
	if (c)
		ssq_client_close(c);
	if (fc)
		ssq_client_close(fc);
	return rc ? -1 : worst;
}

int main(void)
{
	double w;

	t_need_ssqd();
	cf_cluster_files(&cl, "advri", 2, names, 0);
	/* alice sorts first: she dials. Far alice idles: bob's RECOVER sends
	 * a want and alice must dial back. */
	t_cluster_start(&cl, 0, T_ARGS("--idle-ms", "10"));
	t_cluster_start(&cl, 1, NULL);
	w = rounds(1, 0);
	CHECK(w >= 0 && w < LIMIT_S,
	      "bob recovers alice/q0 (alice --idle-ms 10, dials): slowest %.2f s", w);
	t_cluster_stop(&cl);

	/* Far bob idles: alice's RECOVER dials it at once. */
	cf_cluster_files(&cl, "advri", 2, names, 0);
	t_cluster_start(&cl, 0, NULL);
	t_cluster_start(&cl, 1, T_ARGS("--idle-ms", "10"));
	w = rounds(0, 1);
	CHECK(w >= 0 && w < LIMIT_S,
	      "alice recovers bob/q0 (bob --idle-ms 10, accepts): slowest %.2f s", w);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_peer_recover_idle");
}
