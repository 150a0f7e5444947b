/* SPDX-License-Identifier: MIT */
/*
 * An open racing the other side's --idle-ms close. alice and bob both run
 * --idle-ms 10; bob's client opens alice/q0 again and again, each time
 * just as the link has been idle long enough for alice to close it, holds
 * it 30 ms and closes it. An open that succeeded must keep its queue:
 * alice may close the link only once bob agrees it is idle. Before,
 * alice closed it on what bob last told (idle), though bob's client had
 * attached meanwhile and bob's BUSY was still on its way: the queue just
 * opened went to error under its client, a third of the time here.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N     2
#define ROUND 40
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

int main(void)
{
	struct ssq_client *b = NULL;
	struct ssq_queue *q;
	int i, st, opened = 0, lost = 0, failed = 0;

	t_need_ssqd();
	cf_cluster_files(&cl, "ci-ir", N, names, 0);
	for (i = 0; i < N; i++)
		t_cluster_start(&cl, i, T_ARGS("--idle-ms", "10"));
	ssq_client_close(t_cluster_connect(&cl, 0));
	b = t_cluster_connect(&cl, 1);
	CHECK(b != NULL, "bob serves");
	if (!b)
		goto out;
	for (i = 0; i < ROUND; i++) {
		st = ssq_queue_open(b, "alice/q0", &q);
		if (st) {
			fprintf(stderr, "open %d: %d (%s)\n", i, st, ssq_client_error(b));
			failed++;
			continue;
		}
		opened++;
		usleep(30000);
		if (cf_ready(b, "alice/q0") != 1)
			lost++;
		ssq_queue_close(q);
		usleep(5000 + (i % 4) * 4000); /* about when alice's --idle-ms is up */
	}
	CHECK(opened == ROUND && !failed, "%d of %d opens succeeded", opened, ROUND);
	CHECK(!lost, "%d of %d queues just opened lost their link under their client",
	      lost, opened);
out:
	ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_demand_idle_race");
}
