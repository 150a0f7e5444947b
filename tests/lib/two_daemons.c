/* SPDX-License-Identifier: MIT */
/* Two daemons linked as a pair, alice and bob (tlib.h). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "tlib.h"

static const char *const pair_names[2] = { "alice", "bob" };

/* q0 READY as @c's LIST shows it within @secs: 1, else 0. */
static int q0_ready(struct ssq_client *c, double secs)
{
	struct ssq_queue_info info[1];
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (ssq_client_list(c, info, 1) == 1 && info[0].ready)
			return 1;
		usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
	         secs);
	return 0;
}

void t_pair_exec(struct t_pair *p, int i)
{
	const char *args[24] = { "--eager",  "--name",   pair_names[i], "--peer",
		                 p->peer[i], "--listen", p->port[i] };
	int n = 7;

	while (p->extra[i] && p->extra[i][n - 7] && n < 23) {
		args[n] = p->extra[i][n - 7];
		n++;
	}
	args[n] = NULL;
	p->pid[i] =
	    t_rssqd_start(p->sock[i], p->recv_depth, p->recv_size, NULL, args, NULL, 0);
}

void t_pair_init(struct t_pair *p, const char *tag, unsigned recv_depth,
                 unsigned recv_size)
{
	unsigned port[2];
	int i;

	memset(p, 0, sizeof(*p));
	p->recv_depth = recv_depth;
	p->recv_size = recv_size;
	for (i = 0; i < 2; i++) {
		snprintf(p->sock[i], sizeof(p->sock[i]), "/tmp/ssq-%s-%c-%d.sock", tag,
		         "ab"[i], getpid());
		port[i] = t_free_tcp_port();
		snprintf(p->port[i], sizeof(p->port[i]), "%u", port[i]);
		p->pid[i] = -1;
	}
	/*
	 * From the numbers, not from p->port: gcc -O1 takes a string of *p
	 * written into another member of *p for an overlap (-Wrestrict).
	 */
	for (i = 0; i < 2; i++)
		snprintf(p->peer[i], sizeof(p->peer[i]), "%s=127.0.0.1:%u",
		         pair_names[!i], port[!i]);
}

int t_pair_run(struct t_pair *p)
{
	int i;

	for (i = 0; i < 2; i++)
		t_pair_exec(p, i);
	for (i = 0; i < 2; i++) {
		p->c[i] = t_ssqd_connect(p->sock[i], p->pid[i]);
		if (!p->c[i]) {
			fprintf(stderr, "%s does not serve at %s\n", pair_names[i],
			        p->sock[i]);
			return -1;
		}
	}
	for (i = 0; i < 2; i++)
		if (!q0_ready(p->c[i], 10)) {
			fprintf(stderr, "%s: q0 not READY within 10 s\n", pair_names[i]);
			return -1;
		}
	return 0;
}

int t_pair_start(struct t_pair *p, const char *tag, unsigned recv_depth,
                 unsigned recv_size, const char *const *extra)
{
	t_pair_init(p, tag, recv_depth, recv_size);
	p->extra[0] = p->extra[1] = extra;
	return t_pair_run(p);
}

int t_pair_restart(struct t_pair *p, int i)
{
	t_ssqd_kill(p->pid[i], p->sock[i]);
	if (p->c[i])
		ssq_client_close(p->c[i]);
	unlink(p->sock[i]);
	t_pair_exec(p, i);
	p->c[i] = t_ssqd_connect(p->sock[i], p->pid[i]);
	if (!p->c[i]) {
		fprintf(stderr, "%s does not serve again at %s\n", pair_names[i],
		        p->sock[i]);
		return -1;
	}
	return 0;
}

void t_pair_stop(struct t_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (p->c[i])
			ssq_client_close(p->c[i]);
		p->c[i] = NULL;
		if (p->pid[i] > 0) {
			kill(p->pid[i], SIGTERM);
			waitpid(p->pid[i], NULL, 0);
		}
		p->pid[i] = -1;
		if (p->sock[i][0]) {
			unlink(p->sock[i]);
			t_ssqd_gone(p->sock[i]);
		}
	}
}
