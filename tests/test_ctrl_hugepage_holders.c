/* SPDX-License-Identifier: MIT */
/*
 * Clients of an ssqd that was killed keep its arena mapped, and with it
 * its 2 MiB pages; an ssqd restarted with --hugepages=required that cannot
 * get enough pages must say so and name the processes that hold them
 * (before, it only said how to reserve more).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

static long free_pages(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	const char *ssqd = getenv("SSQD");
	char out[2048] = "", mib[32], want[64];
	struct ssq_client *c;
	int pipefd[2], status;
	pid_t d, holder, d2;
	FILE *f;
	size_t n;

	if (ensure_hugepages(64) < 40)
		SKIP("fewer than 40 2 MiB hugepages and not root to reserve them");
	c = flow_up("hph", "required", &d);
	if (!c)
		return 1;
	ssq_client_close(c);
	if (pipe(pipefd))
		return 1;
	holder = fork();
	if (holder == 0) { /* a client that stays */
		char ok = ssq_client_connect(sock_path, &c) == 0;

		(void)!write(pipefd[1], &ok, 1);
		pause();
		_exit(0);
	}
	CHECK(read(pipefd[0], &status, 1) == 1, "the holder did not connect");
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);

	/* More pages than are free: the holder keeps the dead ssqd's. */
	snprintf(mib, sizeof(mib), "%ld", (free_pages() + 4) * 2);
	snprintf(want, sizeof(want), "pid %d (", (int)holder);
	if (pipe(pipefd))
		return 1;
	d2 = fork();
	if (d2 == 0) {
		dup2(pipefd[1], 2);
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock_path,
		      "--hugepages=required", "--data-mib", mib, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = 0;
	waitpid(d2, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1, "ssqd status 0x%x", status);
	CHECK(strstr(out, "stop what holds them") && strstr(out, want),
	      "the message does not name holder %s...): %s", want, out);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	unlink(sock_path);
	return test_exit("ctrl_hugepage_holders");
}
