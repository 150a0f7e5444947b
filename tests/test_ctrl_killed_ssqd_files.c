/* SPDX-License-Identifier: MIT */
/*
 * The test fixtures leave no file of an ssqd they killed (tests/lib
 * t_ssqd_gone, t_ssqd_kill): an ssqd that stops removes its socket's lock
 * file itself (ssqd_socket_unclaim), one SIGKILLed cannot, and /tmp
 * filled with /tmp/ssq-*.sock.lock (7297 on the lead's machine).
 *  - t_ssqd_gone on the socket of an ssqd that serves removes nothing, and
 *    the ssqd goes on serving (it holds the lock);
 *  - t_ssqd_kill removes the socket and the lock once the ssqd is reaped;
 *  - an ssqd that a test process started (t_ssqd_exec), then killed and
 *    reaped itself, leaves nothing once that process exits.
 * Before: no t_ssqd_gone or t_ssqd_kill; the lock of every killed ssqd
 * stayed.
 */
#include "ssq_flow.h"

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A child that starts ssqd at @sock, kills and reaps it, and exits 0. */
static pid_t kill_in_child(const char *sock)
{
	pid_t kid = fork();

	if (kid == 0) {
		struct ssq_client *c;
		pid_t d;

		c = ssqd_start(sock, "8", "256", NULL, &d);
		if (!c)
			_exit(2);
		ssq_client_close(c);
		kill(d, SIGKILL);
		waitpid(d, NULL, 0);
		exit(exists(sock) ? 0 : 3); /* exit(): its atexit handlers run */
	}
	return kid;
}

int main(void)
{
	struct ssq_queue_info info[1];
	struct ssq_client *c;
	char sock[108], lock[120];
	int status = 0;
	pid_t d, kid;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-killed-files-%d.sock", getpid());
	snprintf(lock, sizeof(lock), "%s.lock", sock);

	c = ssqd_start(sock, "8", "256", NULL, &d);
	CHECK(c != NULL, "ssqd did not start");
	if (!c)
		return test_exit("ctrl_killed_ssqd_files");
	CHECK(exists(lock), "no %s while ssqd serves", lock);
	t_ssqd_gone(sock);
	CHECK(exists(sock) && exists(lock),
	      "t_ssqd_gone removed the files of an ssqd that serves (socket %d, lock %d)",
	      exists(sock), exists(lock));
	CHECK(ssq_client_list(c, info, 1) >= 0,
	      "ssqd does not answer after t_ssqd_gone: %s", ssq_client_error(c));
	ssq_client_close(c);
	t_ssqd_kill(d, sock);
	CHECK(!exists(sock) && !exists(lock),
	      "t_ssqd_kill left the files of a killed ssqd (socket %d, lock %d)",
	      exists(sock), exists(lock));

	kid = kill_in_child(sock);
	CHECK(kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
	          WEXITSTATUS(status) == 0,
	      "the child that kills its ssqd: status 0x%x", status);
	CHECK(
	    !exists(sock) && !exists(lock),
	    "a process that killed its ssqd left its files at exit (socket %d, lock %d)",
	    exists(sock), exists(lock));
	unlink(sock);
	unlink(lock);
	return test_exit("ctrl_killed_ssqd_files");
}
