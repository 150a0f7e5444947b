/* SPDX-License-Identifier: MIT */
/*
 * ssqd's descriptor limit at start. systemd gives a service a soft
 * RLIMIT_NOFILE of 1024 and asks one that needs more to raise it to the
 * hard limit itself (systemd.exec(5), LimitNOFILE=; systemd/ssqd.service.in
 * sets 65536): ssqd does, saying nothing. Where the hard limit is too low
 * for all it serves at most (SSQD_MAX_CLIENTS clients, each a socket and a
 * pidfd, SSQD_MAX_MRS registrations, each a descriptor), it says once at
 * start what it has room for, instead of refusing registrations later
 * with no word at start.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "cluster_flow.h"

/* ssqd started with RLIMIT_NOFILE @soft / @hard (this process's, inherited). */
static pid_t start_with(const char *sock, const char *log, rlim_t soft, rlim_t hard)
{
	const char *args[] = { NULL };
	struct rlimit mine, rl = { soft, hard };
	pid_t d;

	getrlimit(RLIMIT_NOFILE, &mine);
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("setrlimit");
		return -1;
	}
	d = cf_start(sock, log, 0, NULL, args);
	setrlimit(RLIMIT_NOFILE, &mine);
	return d;
}

/* ssqd at @soft / @hard: serves a client; its limit then into @now. */
static pid_t up(const char *sock, const char *log, rlim_t soft, rlim_t hard,
                struct rlimit *now)
{
	struct ssq_client *c;
	pid_t d = start_with(sock, log, soft, hard);

	CHECK(d > 0, "ssqd started with RLIMIT_NOFILE %llu / %llu",
	      (unsigned long long)soft, (unsigned long long)hard);
	if (d <= 0)
		return d;
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd with RLIMIT_NOFILE %llu / %llu serves a client",
	      (unsigned long long)soft, (unsigned long long)hard);
	if (c)
		ssq_client_close(c);
	memset(now, 0, sizeof(*now));
	CHECK(prlimit(d, RLIMIT_NOFILE, NULL, now) == 0, "ssqd's RLIMIT_NOFILE read");
	printf("started with %llu / %llu: ssqd runs with %llu / %llu\n",
	       (unsigned long long)soft, (unsigned long long)hard,
	       (unsigned long long)now->rlim_cur, (unsigned long long)now->rlim_max);
	return d;
}

int main(void)
{
	char sock[108], log[108], said[512] = "";
	struct rlimit mine, now;
	int st;
	pid_t d;

	t_need_ssqd();
	getrlimit(RLIMIT_NOFILE, &mine);
	if (mine.rlim_max < 8192)
		SKIP("this process's hard RLIMIT_NOFILE is %llu, under 8192",
		     (unsigned long long)mine.rlim_max);
	snprintf(sock, sizeof(sock), "/tmp/ssq-nofilestart-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-nofilestart-%d.log", getpid());

	/* A soft limit under a hard one that holds everything: raised, silently. */
	d = up(sock, log, 256, 8192, &now);
	if (d > 0) {
		CHECK(now.rlim_cur == 8192, "ssqd raised its soft limit to the hard one");
		CHECK(!cf_file_has(log, "RLIMIT_NOFILE"),
		      "ssqd says nothing of a limit that holds all it serves");
		CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd stops cleanly: status 0x%x",
		      st);
	}

	/* A hard limit too low for all of it: said once, at start. */
	d = up(sock, log, 1024, 1024, &now);
	if (d > 0) {
		FILE *f = fopen(log, "r");

		while (f && fgets(said, sizeof(said), f) &&
		       !strstr(said, "RLIMIT_NOFILE"))
			said[0] = 0;
		if (f)
			fclose(f);
		printf("ssqd said: %s", said[0] ? said : "nothing of RLIMIT_NOFILE\n");
		CHECK(strstr(said, "RLIMIT_NOFILE 1024 (hard limit 1024) holds") &&
		          strstr(said, "of the 256 clients") &&
		          strstr(said, "of the 1024 memory registrations"),
		      "ssqd says at start what its hard limit of 1024 holds");
		CHECK(t_log_count(log, "RLIMIT_NOFILE") == 1, "said once");
		CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd stops cleanly: status 0x%x",
		      st);
	}
	if (!getenv("KEEP_LOGS"))
		unlink(log);
	return test_exit("ctrl_nofile_start");
}
