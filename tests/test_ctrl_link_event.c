/* SPDX-License-Identifier: MIT */
/*
 * A queue's wait fd wakes its program when the queue's link to its peer
 * goes and when it comes back, and ssq_queue_link says which peer and that
 * its descriptors went stale (issue 30, newcomer review F4: after bob's
 * ssqd restarted, alice's client got no event, only RETRY_EXC_ERR and
 * REM_ACCESS_ERR). A cluster of alice and bob; a client of alice opens
 * bob/q0 and its wait fd, and nothing is posted:
 *  - ssq_queue_link: peer "bob", up, gen >= 1;
 *  - bob killed: the fd becomes readable and the link reads down;
 *  - bob started again (the link asked for by a try_open): the fd becomes
 *    readable again and the link reads up with a larger gen.
 */
#include <poll.h>
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* Wait up to @secs for @fd readable and the link's up to be @up; read it. */
static int wait_link(struct ssq_client *a, struct ssq_queue *q, int fd, uint32_t up,
                     double secs, struct ssq_link_info *li)
{
	double t0 = now_s();
	int woke = 0;

	while (now_s() - t0 < secs) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		uint64_t n;

		if (poll(&pfd, 1, 50) == 1) {
			woke = 1;
			(void)!read(fd, &n, sizeof(n));
		}
		if (ssq_queue_link(q, li) == 0 && li->up == up && woke)
			return 0;
		if (up && !li->up) {
			/* Ask alice to link bob again (on demand), without blocking. */
			struct ssq_queue *q2 = NULL;

			if (ssq_queue_try_open(a, "bob/q0", &q2) == 0)
				ssq_queue_close(q2);
		}
	}
	return woke ? -2 : -1;
}

int main(void)
{
	struct ssq_client *a = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_link_info li;
	uint32_t g0 = 0;
	int fd, rc;

	t_need_ssqd();
	cf_cluster_files(&cl, "linkev", N, names, 0);
	t_cluster_start(&cl, 0, NULL);
	t_cluster_start(&cl, 1, NULL);
	a = t_cluster_connect(&cl, 0);
	CHECK(a, "alice serves");
	if (!a)
		goto out;
	rc = ssq_queue_open(a, "bob/q0", &q);
	CHECK(rc == 0, "open bob/q0: %d (%s)", rc, ssq_client_error(a));
	if (rc)
		goto out;
	fd = ssq_queue_wait_fd(q);
	CHECK(fd >= 0, "wait fd: %d", fd);
	if (fd < 0)
		goto out;
	CHECK(ssq_queue_link(q, &li) == 0 && !strcmp(li.peer, "bob") && li.up &&
	          li.gen >= 1,
	      "link of bob/q0: peer '%s' up %u gen %u", li.peer, li.up, li.gen);
	g0 = li.gen;

	kill(cl.pid[1], SIGKILL);
	waitpid(cl.pid[1], NULL, 0);
	cl.pid[1] = 0;
	rc = wait_link(a, q, fd, 0, 20, &li);
	printf("bob killed: %d, peer '%s' up %u gen %u\n", rc, li.peer, li.up, li.gen);
	CHECK(rc == 0, "bob killed: wait fd %s, link up %u",
	      rc == -1 ? "never readable" : "readable", li.up);

	t_cluster_start(&cl, 1, NULL);
	rc = wait_link(a, q, fd, 1, 20, &li);
	printf("bob back: %d, peer '%s' up %u gen %u (was %u)\n", rc, li.peer, li.up,
	       li.gen, g0);
	CHECK(rc == 0 && li.gen > g0, "bob back: %d, up %u gen %u (was %u)", rc, li.up,
	      li.gen, g0);
	CHECK(ssq_queue_link(NULL, &li) == -EINVAL, "NULL queue");
out:
	if (q)
		ssq_queue_close(q);
	if (a)
		ssq_client_close(a);
	t_cluster_stop(&cl);
	return test_exit("ctrl_link_event");
}
