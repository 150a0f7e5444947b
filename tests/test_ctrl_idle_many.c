/* SPDX-License-Identifier: MIT */
/*
 * Eight idle ssqd fit on two cores (issue 17): eight daemons on the
 * emulated device, loopback, each its own socket, left idle together use
 * under 8 x IDLE_BOUND_PCT of a core between them; and a long idle sleep
 * (SSQD_IDLE_MS, src/ctrl/daemon/idle.c) must not make a client wait for
 * it afterwards: each answers a new client's hello, and runs its first
 * WRITE (the device woken by the attach, not at the end of its nap), well
 * within that sleep. A machine loaded by other work may delay a few of
 * them: at most SLOW_MAX of the eight may take longer than PROMPT_S. The
 * deadlines an idle ssqd keeps shorten its sleep: a connection that never
 * says hello is closed at --hello-ms (HELLO_MS, not a multiple of the
 * sleep), not at the next wake after it.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include "stall_flow.h"
#include "idle_flow.h"
#include "ctrl/proto/msg.h"

#define NDAEMONS 8
#define PROMPT_S 0.05 /* a fifth of SSQD_IDLE_MS */
#define SLOW_MAX 3
#define HELLO_MS 300

/*
 * A connection to ssqd at sock_path that says nothing: how long until
 * ssqd closes it with its -ETIMEDOUT, in s, or -1.
 */
static double silent_closed_after(void)
{
	struct sockaddr_un sa;
	struct proto_msg m;
	char why[160];
	double t0 = now_s(), t = -1;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (s >= 0 && !connect(s, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !proto_msg_recv(s, &m, NULL, 0, NULL, 3000, why, sizeof(why)) &&
	    m.hdr.type == SSQ_MSG_ERROR && m.u.error.err == -ETIMEDOUT)
		t = now_s() - t0;
	if (s >= 0)
		close(s);
	return t;
}

static char socks[NDAEMONS][108];

int main(void)
{
	double t0, secs, pct, hello_s[NDAEMONS], write_s[NDAEMONS];
	unsigned long long a = 0, b = 0;
	int i, up = 0, slow_hello = 0, slow_write = 0;
	pid_t d[NDAEMONS];

	signal(SIGPIPE, SIG_IGN);
	flow_ssqd_opt = "--hello-ms=300"; /* HELLO_MS */
	for (i = 0; i < NDAEMONS; i++) {
		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-idle%d-%d.sock", i,
		         getpid());
		memcpy(sock_path, socks[i], sizeof(sock_path));
		d[i] = start_ssqd("off");
	}
	for (i = 0; i < NDAEMONS; i++) {
		struct ssq_client *c;

		memcpy(sock_path, socks[i], sizeof(sock_path));
		c = connect_retry(d[i]);
		if (!c)
			break;
		ssq_client_close(c);
		up++;
	}
	CHECK(up == NDAEMONS, "only %d of %d ssqd answered", up, NDAEMONS);
	if (up == NDAEMONS) {
		sleep(IDLE_SETTLE_S);
		for (i = 0; i < NDAEMONS; i++)
			a += idle_cpu_ns(d[i]);
		t0 = now_s();
		sleep(3);
		for (i = 0; i < NDAEMONS; i++)
			b += idle_cpu_ns(d[i]);
		secs = now_s() - t0;
		pct = 100.0 * (double)(b - a) / 1e9 / secs;
		printf("%d idle ssqd: %.3f %% of a core together over %.1f s\n", NDAEMONS,
		       pct, secs);
		CHECK(a > 0 && pct < NDAEMONS * IDLE_BOUND_PCT,
		      "%d idle ssqd used %.3f %% of a core (want < %.2f %%)", NDAEMONS,
		      pct, NDAEMONS * IDLE_BOUND_PCT);
		memcpy(sock_path, socks[0], sizeof(sock_path));
		secs = silent_closed_after();
		printf("a silent connection to an idle ssqd closed after %.1f ms "
		       "(--hello-ms %d)\n",
		       secs * 1e3, HELLO_MS);
		CHECK(secs * 1e3 >= HELLO_MS - 1 && secs * 1e3 < HELLO_MS + 100,
		      "a silent connection closed after %.1f ms (want --hello-ms %d, "
		      "at most 100 ms late)",
		      secs * 1e3, HELLO_MS);
	}
	for (i = 0; i < up && up == NDAEMONS; i++) {
		struct conn k;

		memset(&k, 0, sizeof(k));
		memcpy(sock_path, socks[i], sizeof(sock_path));
		t0 = now_s();
		if (ssq_client_connect(sock_path, &k.c)) {
			CHECK(0, "ssqd %d: connect: %s", i, ssq_client_strerror_last());
			continue;
		}
		hello_s[i] = now_s() - t0;
		if (ssq_queue_open(k.c, "q0", &k.q) || ssq_buf_alloc(k.c, 4096, &k.src) ||
		    ssq_buf_alloc(k.c, 4096, &k.dst)) {
			CHECK(0, "ssqd %d: %s", i, ssq_client_error(k.c));
			ssq_client_close(k.c);
			continue;
		}
		k.p = ssq_queue_producer(k.q);
		write_s[i] = write_timed(&k, 1, WAIT_S);
		printf("ssqd %d: hello answered in %.1f ms, first WRITE completed in "
		       "%.1f ms\n",
		       i, hello_s[i] * 1e3, write_s[i] * 1e3);
		CHECK(write_s[i] >= 0, "ssqd %d: the WRITE did not complete", i);
		slow_hello += hello_s[i] > PROMPT_S;
		slow_write += write_s[i] > PROMPT_S;
		ssq_client_close(k.c);
	}
	CHECK(slow_hello <= SLOW_MAX && slow_write <= SLOW_MAX,
	      "after idling, %d hellos and %d first WRITEs of %d took over %.0f ms "
	      "(want at most %d each)",
	      slow_hello, slow_write, NDAEMONS, PROMPT_S * 1e3, SLOW_MAX);
	for (i = 0; i < NDAEMONS; i++) {
		t_ssqd_stop(d[i], NULL, socks[i]);
	}
	return test_exit("ctrl_idle_many");
}
