/* SPDX-License-Identifier: MIT */
/*
 * ssqd's loop when poll(2) refuses its descriptors. The kernel refuses
 * more entries than RLIMIT_NOFILE with EINVAL (do_sys_poll,
 * fs/select.c), and ssqd polls about 27 fixed entries besides its
 * clients, so an RLIMIT_NOFILE lowered under a running ssqd (prlimit)
 * to 16 makes every poll fail. Before, the loop went round on the error
 * at once, a core busy and nothing served, and said nothing. Now it says
 * so once, naming the limit, sleeps as poll would have, and serves again
 * once the limit is raised.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "cluster_flow.h"

#define WINDOW_S 4.0

/* How many times @needle occurs in the file at @path (its first 64 KiB). */
static unsigned occurs_in(const char *path, const char *needle)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return t_occurs(buf, needle);
}

int main(void)
{
	char sock[108], log[108];
	const char *args[] = { NULL };
	struct rlimit was, low;
	struct ssq_client *c;
	double cpu0, cpu;
	pid_t d;
	int st, i;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-pollnofile-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-pollnofile-%d.log", getpid());
	d = cf_start(sock, log, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd serves a client");
	if (!c)
		goto out;
	ssq_client_close(c);

	/* Only the soft limit: the hard one stays, so it can be raised again. */
	CHECK(prlimit(d, RLIMIT_NOFILE, NULL, &was) == 0, "ssqd's RLIMIT_NOFILE read");
	low = was;
	low.rlim_cur = 16;
	CHECK(prlimit(d, RLIMIT_NOFILE, &low, NULL) == 0,
	      "ssqd's RLIMIT_NOFILE lowered to 16");
	for (i = 0; i < 400 && !cf_file_has(log, "poll(2) refuses"); i++)
		usleep(50000);
	CHECK(cf_file_has(log, "poll(2) refuses the loop's") &&
	          cf_file_has(log, "more than RLIMIT_NOFILE (16)"),
	      "ssqd says poll refuses its descriptors, naming the limit");

	/* Not a spin: a loop that goes round on the error keeps a core busy. */
	cpu0 = t_proc_cpu_s(d);
	usleep((useconds_t)(WINDOW_S * 1e6));
	cpu = t_proc_cpu_s(d) - cpu0;
	printf("ssqd used %.3f s of CPU in %.1f s with poll refused\n", cpu, WINDOW_S);
	CHECK(cpu < 0.25, "ssqd spins while poll is refused: %.3f s of CPU in %.1f s",
	      cpu, WINDOW_S);
	CHECK(occurs_in(log, "poll(2) refuses") == 1, "said once, not once a loop");

	CHECK(prlimit(d, RLIMIT_NOFILE, &was, NULL) == 0,
	      "ssqd's RLIMIT_NOFILE restored");
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd serves a client again once the limit is raised");
	if (c)
		ssq_client_close(c);
	CHECK(cf_file_has(log, "poll(2) takes the loop's"), "ssqd says it polls again");
out:
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd stops cleanly: status 0x%x", st);
	if (!getenv("KEEP_LOGS"))
		unlink(log);
	return test_exit("ctrl_poll_nofile");
}
