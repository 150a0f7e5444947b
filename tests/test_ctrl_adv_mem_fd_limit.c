/* SPDX-License-Identifier: MIT */
/*
 * Adversary: every registration keeps one descriptor open in ssqd (the
 * client's /proc/PID/mem or its file), up to SSQD_MAX_MRS = 1024 of them,
 * 64 a client. ssqd under a limit of 1024 (the soft limit of most shells,
 * and systemd's default; systemd/ssqd.service.in sets LimitNOFILE=65536,
 * and ssqd raises its soft limit to its hard one, but a hard limit of 1024
 * is anyone's to set) cannot hold that many beside its own and its
 * clients' sockets. Here ssqd runs with RLIMIT_NOFILE 1024, hard too, and
 * 16 connections of one process register 64 small buffers each.
 * Wanted: ssqd refuses registrations before it runs out of descriptors
 * (or holds none per registration), so that a new client can still
 * connect and be served, and ssqd does not spin.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include "stall_flow.h"

#define NCONN 17

static double cpu_s(pid_t d)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)d);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	                 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int main(void)
{
	struct rlimit rl = { 1024, 1024 }, mine;
	struct ssq_client *c[NCONN] = { 0 }, *late = NULL;
	static struct ssq_mr mr[NCONN][64];
	uint8_t *mem = malloc(4096);
	int i, k, ok = 0, refused = 0, rc, first_err = 0;
	double c0, c1;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	/* ssqd inherits the limit; this process needs far fewer. */
	getrlimit(RLIMIT_NOFILE, &mine);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		SKIP("cannot set RLIMIT_NOFILE 1024");
	d = stall_ssqd_up("adv-fdlimit");
	setrlimit(RLIMIT_NOFILE, &mine);
	if (d < 0 || !mem)
		return 1;
	printf("ssqd holds %d descriptors at start (limit 1024)\n", t_proc_fds(d));
	for (i = 0; i < NCONN; i++) {
		if (ssq_client_connect(sock_path, &c[i])) {
			printf("client %d: connect failed\n", i);
			break;
		}
		for (k = 0; k < 64; k++) {
			rc = ssq_mem_reg(c[i], mem, 4096, IBV_ACCESS_LOCAL_WRITE,
			                 &mr[i][k]);
			if (rc) {
				if (!first_err) {
					first_err = rc;
					printf("first refusal after %d registrations: %d "
					       "(%s)\n",
					       ok, rc, ssq_client_error(c[i]));
				}
				refused++;
				continue;
			}
			ok++;
		}
	}
	printf("%d registrations held, %d refused; ssqd holds %d descriptors\n", ok,
	       refused, t_proc_fds(d));
	rc = ssq_client_connect(sock_path, &late);
	CHECK(rc == 0, "a new client connects while the table is full: %d", rc);
	c0 = cpu_s(d);
	sleep(2);
	c1 = cpu_s(d);
	printf("ssqd used %.2f s of CPU in 2 s idle\n", c1 - c0);
	CHECK(c1 - c0 < 0.5, "ssqd does not spin: %.2f s of CPU in 2 s", c1 - c0);
	if (late)
		ssq_client_close(late);
	for (i = 0; i < NCONN; i++)
		if (c[i])
			ssq_client_close(c[i]);
	free(mem);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_fd_limit");
}
