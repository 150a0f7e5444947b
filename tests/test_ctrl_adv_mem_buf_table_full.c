/* SPDX-License-Identifier: MIT */
/*
 * Adversary, the data arena's buffer table: "bad input gets a clear error
 * naming what was wrong". ssqd keeps at most SSQ_DATA_MAX_BUFS (4096)
 * buffers, whatever their size; two uids at their 2048 keyed buffers each
 * fill it, and so do two clients under --arena-rkey (no count per uid)
 * with --max-client-bufs 4096. The next ssq_buf_alloc of 64 bytes was refused "no room
 * for 64 bytes in the 8 MiB data arena" while the arena had 7.75 MiB free: the limit met
 * was the count of buffers, which the message must name. Fails while a full buffer table
 * is reported as a full arena.
 */
#include <errno.h>
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

int main(void)
{
	const char *ssqd = getenv("SSQD");
	struct ssq_client *c, *first;
	struct ssq_buf x;
	unsigned n = 0;
	int rc, status;
	pid_t d;

	if (!ssqd)
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-adv-mem-bt-%d.sock", getpid());
	d = fork();
	if (d == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock_path,
		      "--hugepages=off", "--data-mib", "8", "--sq-size", "256",
		      "--arena-rkey", "--max-client-bufs=4096", (char *)NULL);
		_exit(127);
	}
	first = connect_retry(d);
	c = first ? connect_retry(d) : NULL;
	if (!c) {
		kill(d, SIGKILL);
		waitpid(d, NULL, 0);
		return 1;
	}
	for (; n < 2048; n++)
		if (ssq_buf_alloc(first, 64, &x))
			break;
	while (!(rc = ssq_buf_alloc(c, 64, &x)))
		n++;
	fprintf(stderr, "stopped at %u buffers of 64 bytes: %d (%s)\n", n, rc,
	        ssq_client_error(c));
	CHECK(n == 4096, "two clients under --max-client-bufs 4096: %u buffers", n);
	CHECK(rc == -ENOMEM, "a full buffer table: %d, want -ENOMEM", rc);
	CHECK(strstr(ssq_client_error(c), "4096") &&
	          strstr(ssq_client_error(c), "buffers") &&
	          !strstr(ssq_client_error(c), "no room for"),
	      "the refusal names the buffer count, not the arena's bytes: %s",
	      ssq_client_error(c));
	/* One freed, one more fits, and the next is refused again. */
	rc = ssq_buf_free(c, &x);
	CHECK(rc == 0, "free one: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_buf_alloc(c, 64, &x);
	CHECK(rc == 0, "one more after a free: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_buf_alloc(c, 64, &x);
	CHECK(rc == -ENOMEM, "and the next refused again: %d", rc);
	ssq_client_close(c);
	ssq_client_close(first);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock_path);
	return test_exit("ctrl_adv_mem_buf_table_full");
}
