/* SPDX-License-Identifier: MIT */
/* An ssqd whose clients run as other uids (tlib.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tlib.h"

#define T_TENANTS_ARGS 24

pid_t t_tenants_ssqd(const char *tag, char *sock, char *log, const char *const *args,
                     int *answered)
{
	const char *argv[T_TENANTS_ARGS + 6] = { "--device", "emu", "--socket", sock,
		                                 "--hugepages=off" };
	struct ssq_client *c;
	unsigned i;
	pid_t d;

	snprintf(sock, 108, "/tmp/ssq-%s-%d.sock", tag, (int)getpid());
	snprintf(log, 128, "/tmp/ssq-%s-%d.log", tag, (int)getpid());
	for (i = 0; args[i] && i < T_TENANTS_ARGS; i++)
		argv[5 + i] = args[i];
	d = t_ssqd_exec(argv, NULL, NULL, log, 0);
	c = t_ssqd_connect(sock, d);
	*answered = c != NULL;
	if (c)
		ssq_client_close(c);
	else
		fprintf(stderr, "t_tenants_ssqd: ssqd (pid %d) did not answer at %s\n",
		        (int)d, sock);
	chmod(sock, 0666);
	return d;
}

pid_t t_tenants_ssqd_shim(const char *tag, const char *so, const char *arm, char *sock,
                          char *log, const char *const *args, int *answered)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[512];
	pid_t d;

	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", asan ? asan : "",
	         asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	setenv("LD_PRELOAD", so, 1);
	setenv("SSQ_SEND_NOBUFS_ARM", arm, 1);
	d = t_tenants_ssqd(tag, sock, log, args, answered);
	unsetenv("LD_PRELOAD");
	unsetenv("SSQ_SEND_NOBUFS_ARM");
	return d;
}
