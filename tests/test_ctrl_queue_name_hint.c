/* SPDX-License-Identifier: MIT */
/*
 * A queue name ssqd does not have gets an answer that lists the ones it
 * has (issue 30, newcomer review F10: "q0" on a cluster daemon, whose
 * loopback queue is "alice/q0", got only 'no queue named "q0"'). alice,
 * of a cluster of alice and bob (bob need not run), answers:
 *  - "q0": -ENOENT, 'did you mean "alice/q0"?' (its own queue before
 *    bob/q0, which also ends in q0), and the queues' names;
 *  - "nosuch": -ENOENT and the names, no guess.
 */
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

int main(void)
{
	struct ssq_client *a = NULL;
	struct ssq_queue *q = NULL;
	const char *why;
	int rc;

	t_need_ssqd();
	cf_cluster_files(&cl, "qhint", N, names, 0);
	t_cluster_start(&cl, 0, NULL);
	a = t_cluster_connect(&cl, 0);
	CHECK(a, "alice serves");
	if (!a)
		goto out;
	rc = ssq_queue_open(a, "q0", &q);
	why = ssq_client_error(a);
	printf("open \"q0\": %d '%s'\n", rc, why);
	CHECK(rc == -ENOENT, "open \"q0\" on alice: %d, want -ENOENT", rc);
	CHECK(strstr(why, "did you mean \"alice/q0\"?"), "no guess of alice/q0: '%s'",
	      why);
	CHECK(strstr(why, "queues:") && strstr(why, " bob/q0") &&
	          strstr(why, " alice/q0"),
	      "the queues are not listed: '%s'", why);
	rc = ssq_queue_open(a, "nosuch", &q);
	why = ssq_client_error(a);
	printf("open \"nosuch\": %d '%s'\n", rc, why);
	CHECK(rc == -ENOENT && !strstr(why, "did you mean") && strstr(why, "alice/q0"),
	      "open \"nosuch\": %d '%s'", rc, why);
out:
	if (a)
		ssq_client_close(a);
	t_cluster_stop(&cl);
	return test_exit("ctrl_queue_name_hint");
}
