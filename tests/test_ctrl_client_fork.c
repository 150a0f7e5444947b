/* SPDX-License-Identifier: MIT */
/*
 * A client process forks, and the child closes what it inherited
 * (ssq_client_close, as a child that cleans up before exec or exit does).
 * The parent's connection, queue and watcher must be untouched: before,
 * the child's close detached the parent's producer record (ssqd healed it
 * under the live parent: its next reservation got -EINVAL) and stopped the
 * parent's watcher thread through the pipe they share (after ssqd died the
 * parent never got -ENOTCONN). Nor does the child inherit the arena or the
 * doorbell page (MADV_DONTFORK): a child that kept them could write into a
 * ring ssqd heals once the parent has exited.
 */
#include <dirent.h>
#include "ctrl_flow.h"

/* Threads of this process. */
static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	uint64_t pos;
	int status, before, rc = 0;
	double t0;
	pid_t d, kid;

	d = flow_start_q0("cfork", &c, &q, &a, &b);
	if (d < 0)
		return test_exit("ctrl_client_fork");
	before = threads();
	kid = fork();
	if (kid == 0) {
		/* The queues' memory is not inherited: only the parent writes them. */
		char path[256];
		int inherited = flow_mapping(a.addr, path, sizeof(path)) ||
		                flow_mapping(ssq_queue_sq(q)->bf_reg, path, sizeof(path));

		ssq_client_close(c);
		_exit(inherited ? 3 : 0);
	}
	CHECK(waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
	          WEXITSTATUS(status) == 0,
	      "child status 0x%x", status);
	usleep(200 * 1000); /* what a detach would have set off in ssqd */
	CHECK(threads() == before,
	      "the parent has %d threads after the child closed, %d before", threads(),
	      before);
	memset(a.addr, 0x21, 64);
	CHECK(write_and_wait(q, &a, &b, 64) == 0 && !memcmp(a.addr, b.addr, 64),
	      "the parent's WRITE after the child closed");
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	t0 = now_s();
	while (now_s() - t0 < 2 &&
	       (rc = ssq_reserve(ssq_queue_producer(q), 1, &pos)) == 0) {
		ssq_publish(ssq_queue_producer(q), pos, 1, 0, 0);
		usleep(1000);
	}
	CHECK(rc == -ENOTCONN, "the parent's reservation after ssqd died: %d", rc);
	ssq_client_close(c);
	unlink(sock_path);
	return test_exit("ctrl_client_fork");
}
