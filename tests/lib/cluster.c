/* SPDX-License-Identifier: MIT */
/* A cluster of daemons named by a peers file (tlib.h). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "tlib.h"

void t_cluster_files(struct t_cluster *cl, const char *tag, unsigned n,
                     const char *const *names, unsigned recv_depth, unsigned recv_size,
                     int append)
{
	FILE *f;
	unsigned i;

	memset(cl, 0, sizeof(*cl));
	cl->n = n < T_CLUSTER_MAX ? n : T_CLUSTER_MAX;
	cl->names = names;
	cl->recv_depth = recv_depth;
	cl->recv_size = recv_size;
	cl->append = append;
	snprintf(cl->peers, sizeof(cl->peers), "/tmp/ssq-%s-peers-%d", tag, getpid());
	f = fopen(cl->peers, "w");
	for (i = 0; i < cl->n; i++) {
		cl->pid[i] = -1;
		cl->port[i] = t_free_tcp_port();
		snprintf(cl->sock[i], sizeof(cl->sock[i]), "/tmp/ssq-%s-%s-%d.sock", tag,
		         names[i], getpid());
		snprintf(cl->log[i], sizeof(cl->log[i]), "/tmp/ssq-%s-%s-%d.log", tag,
		         names[i], getpid());
		if (f)
			fprintf(f, "%s 127.0.0.1:%u\n", names[i], cl->port[i]);
	}
	if (f)
		fclose(f);
}

pid_t t_cluster_start(struct t_cluster *cl, unsigned i, const char *const *extra)
{
	char lport[16];
	const char *args[24] = { "--name",  cl->names[i], "--peers",
		                 cl->peers, "--listen",   lport };
	int n = 6;

	snprintf(lport, sizeof(lport), "%u", cl->port[i]);
	while (extra && *extra && n < 23)
		args[n++] = *extra++;
	args[n] = NULL;
	cl->pid[i] = t_rssqd_start(cl->sock[i], cl->recv_depth, cl->recv_size, NULL, args,
	                           cl->log[i], cl->append);
	return cl->pid[i];
}

int t_cluster_start_all(struct t_cluster *cl, const char *const *extra)
{
	unsigned i;
	int failed = 0;

	for (i = 0; i < cl->n; i++)
		if (t_cluster_start(cl, i, extra) <= 0) {
			fprintf(stderr, "t_cluster_start_all: %s did not start\n",
			        cl->names[i]);
			failed++;
		}
	return failed;
}

struct ssq_client *t_cluster_connect(const struct t_cluster *cl, unsigned i)
{
	return t_ssqd_connect(cl->sock[i], cl->pid[i]);
}

void t_cluster_stop(struct t_cluster *cl)
{
	unsigned i;
	int st;

	for (i = 0; i < cl->n; i++)
		if (cl->pid[i] > 0)
			kill(cl->pid[i], SIGTERM);
	for (i = 0; i < cl->n; i++) {
		if (cl->pid[i] > 0)
			waitpid(cl->pid[i], &st, 0);
		cl->pid[i] = -1;
		unlink(cl->sock[i]);
		t_ssqd_gone(cl->sock[i]);
		if (!getenv("KEEP_LOGS"))
			unlink(cl->log[i]);
	}
	unlink(cl->peers);
}
