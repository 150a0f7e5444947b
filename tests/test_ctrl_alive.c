/* SPDX-License-Identifier: MIT */
/*
 * ssq_client_alive is a predicate, documented as the one exception to
 * client.h's 0-or-negative-errno rule (issue 30, newcomer review F10: a
 * reader of the rule wrote `== 0` for alive; F4: after ssqd died,
 * ssq_client_alive() was 0 with ssq_client_error() ""):
 *  - exactly 1 while ssqd runs, never negative;
 *  - exactly 0 within 10 s of ssqd's SIGKILL, and then ssq_client_error()
 *    says ssqd closed the connection.
 */
#include "ctrl_flow.h"

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	double t0;
	int rc = 1;
	pid_t d;

	d = flow_start_q0("alive", &c, &q, &a, &b);
	if (d < 0)
		return test_exit("ctrl_alive");
	if (test_failures)
		goto out;
	rc = ssq_client_alive(c);
	CHECK(rc == 1, "ssq_client_alive with ssqd running: %d, want 1", rc);
	CHECK(ssq_client_error(c)[0] == '\0', "a sentence while alive: '%s'",
	      ssq_client_error(c));
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	d = 0;
	t0 = now_s();
	while ((rc = ssq_client_alive(c)) == 1 && now_s() - t0 < 10)
		usleep(10000);
	CHECK(rc == 0, "ssq_client_alive after ssqd was killed: %d, want 0", rc);
	CHECK(strstr(ssq_client_error(c), "ssqd closed the connection") != NULL,
	      "ssq_client_error after ssq_client_alive said 0: '%s'",
	      ssq_client_error(c));
	printf("ssqd killed: ssq_client_alive %d, ssq_client_error '%s'\n", rc,
	       ssq_client_error(c));
out:
	if (d > 0) {
		kill(d, SIGKILL);
		waitpid(d, NULL, 0);
	}
	ssq_queue_close(q);
	ssq_client_close(c);
	unlink(sock_path);
	return test_exit("ctrl_alive");
}
