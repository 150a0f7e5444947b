/* SPDX-License-Identifier: MIT */
/*
 * A client that sends requests and never reads the replies must not stall
 * ssqd for anyone else: while one floods LIST requests without reading,
 * another client's calls all complete (before, ssqd waited up to 1 s on
 * each reply the flooder's full socket would not take, and the other's
 * calls timed out), and ssqd drops the flooder once its replies pile up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"
#include "ctrl/proto/msg.h"

#define CALLS 300

/*
 * The flooder: hello, then LIST after LIST, reading nothing; says on @go
 * once 64 are out, more than its socket holds replies to (each list reply
 * is over 1 KiB). 0: ssqd dropped it.
 */
static int flood(int go)
{
	struct proto_msg_hello hello = { (uint32_t)getpid(), 0 };
	struct sockaddr_un sa;
	double end = now_s() + 20;
	uint32_t seq = 1;
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0), rc;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, sock_path);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    proto_msg_send(s, SSQ_MSG_HELLO, seq++, &hello, sizeof(hello), NULL, 0))
		return 2;
	while (now_s() < end) {
		rc = proto_msg_send(s, SSQ_MSG_LIST, seq++, NULL, 0, NULL, 0);
		if (rc == -EPIPE || rc == -ECONNRESET)
			return 0;
		if (seq > 64 && go >= 0) {
			(void)!write(go, "g", 1);
			close(go);
			go = -1;
		}
		if (rc)
			usleep(1000); /* our own side is full: ssqd is behind */
	}
	return 1;
}

int main(void)
{
	struct ssq_queue_info info[4];
	struct ssq_client *c;
	int i, ok = 0, status, rc = 0, go[2];
	pid_t d, f;
	char g;

	c = flow_up("slow", "off", &d);
	if (!c)
		return 1;
	if (pipe(go))
		return 1;
	f = fork();
	if (f == 0)
		_exit(flood(go[1]));
	close(go[1]);
	/* Call while the flooder's replies back up in ssqd. */
	CHECK(read(go[0], &g, 1) == 1, "the flooder never filled its socket");
	for (i = 0; i < CALLS; i++) {
		rc = ssq_client_list(c, info, 4);
		if (rc != 1)
			break;
		ok++;
	}
	CHECK(ok == CALLS,
	      "%d of %d calls answered while another client floods; then %d (%s)", ok,
	      CALLS, rc, ssq_client_error(c));
	waitpid(f, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the flooder was not dropped by ssqd (status 0x%x)", status);
	rc = ssq_client_list(c, info, 4);
	CHECK(rc == 1, "a call after the flood: %d (%s)", rc, ssq_client_error(c));
	ssq_client_close(c);
	t_ssqd_stop(d, &status, sock_path);
	return test_exit("ctrl_slow_reader");
}
