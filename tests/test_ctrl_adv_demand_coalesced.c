/* SPDX-License-Identifier: MIT */
/*
 * A dial whose answer comes in one read with what follows it. Right after
 * the exchange the accepting peer tells, over the kept link, whether it has
 * a queue of the pair open (IDLE here): TCP may hand the dialer both in
 * one read, as it does whenever the dialer is a little late to read. Here
 * a relay between alice (which dials) and bob holds bob's bytes back until
 * its addresses and the next message are all there, then sends them in one
 * piece. alice must still hear bob idle: with --idle-ms 300 the link closes
 * once alice's client closes bob/q0, and ssq_client_peers shows no queue
 * open at bob. Before, the dialer read past the addresses into its
 * exchange buffer and dropped the rest: bob stayed "open there" for good,
 * the link was never idle (nor, under --max-active-peers, ever closed for
 * another), and a message cut in two by that read made the link fail.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static char socks[N][108], logs[N][108], peers_path[108];
static uint16_t ports[N], relay_port;
static pid_t pids[N];
static int relay_fd;
static volatile int stop;

static pid_t start(int i, const char *opt, const char *val)
{
	char lport[16];
	const char *args[] = { "--name", names[i], "--peers", peers_path, "--listen",
		               lport,    opt,      val,       NULL };

	snprintf(lport, sizeof(lport), "%u", ports[i]);
	return cf_start(socks[i], logs[i], 0, NULL, args);
}

static int tcp_to(uint16_t port)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -1;
	}
	return s;
}

/*
 * Each connection alice makes, relayed to bob. Bob's first bytes are held
 * until its address (one queue) and one more message are in, then sent
 * in one send.
 */
static void *relay(void *arg)
{
	(void)arg;
	while (!stop) {
		struct pollfd pfd[2];
		uint8_t buf[4096], held[4096];
		size_t nheld = 0;
		int a, b, first = 1;

		pfd[0].fd = relay_fd;
		pfd[0].events = POLLIN;
		if (poll(pfd, 1, 50) <= 0)
			continue;
		a = accept4(relay_fd, NULL, NULL, SOCK_CLOEXEC);
		b = a >= 0 ? tcp_to(ports[1]) : -1;
		if (b < 0) {
			if (a >= 0)
				close(a);
			continue;
		}
		pfd[0].fd = a;
		pfd[1].fd = b;
		pfd[1].events = POLLIN;
		while (!stop) {
			ssize_t r;

			if (poll(pfd, 2, 50) <= 0)
				continue;
			if (pfd[0].revents) {
				r = recv(a, buf, sizeof(buf), 0);
				if (r <= 0 || send(b, buf, (size_t)r, MSG_NOSIGNAL) != r)
					break;
			}
			if (pfd[1].revents) {
				r = recv(b, buf, sizeof(buf), 0);
				if (r <= 0)
					break;
				if (!first) {
					if (send(a, buf, (size_t)r, MSG_NOSIGNAL) != r)
						break;
					continue;
				}
				memcpy(held + nheld, buf, (size_t)r);
				nheld += (size_t)r;
				if (nheld >= SSQ_PEER_MSG_LEN + SSQ_PEER_RESTART_LEN) {
					if (send(a, held, nheld, MSG_NOSIGNAL) !=
					    (ssize_t)nheld)
						break;
					first = 0;
				}
			}
		}
		close(a);
		close(b);
	}
	return NULL;
}

int main(void)
{
	struct sockaddr_in sa;
	struct ssq_client *a = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_peer_info pi[2];
	pthread_t t;
	int i, st, n, one = 1;
	FILE *f;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	relay_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(relay_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	{
		socklen_t len = sizeof(sa);

		if (bind(relay_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(relay_fd, 8) ||
		    getsockname(relay_fd, (struct sockaddr *)&sa, &len))
			SKIP("no TCP port for the relay");
	}
	relay_port = ntohs(sa.sin_port);
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-ci-co-peers-%d", getpid());
	f = fopen(peers_path, "w");
	for (i = 0; i < N; i++) {
		ports[i] = free_tcp_port();
		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-ci-co-%s-%d.sock",
		         names[i], getpid());
		snprintf(logs[i], sizeof(logs[i]), "/tmp/ssq-ci-co-%s-%d.log", names[i],
		         getpid());
	}
	/* alice reaches bob through the relay; bob's own line is its port. */
	fprintf(f, "alice 127.0.0.1:%u\nbob 127.0.0.1:%u\n", ports[0], relay_port);
	fclose(f);
	pthread_create(&t, NULL, relay, NULL);
	pids[0] = start(0, "--idle-ms", "300");
	/* bob listens on its own port, whatever its line says. */
	{
		char lport[16];
		const char *args[] = { "--name", "bob",      "--peer", NULL, "--peer",
			               NULL,     "--listen", lport,    NULL };
		char pa[64], pb[64];

		snprintf(lport, sizeof(lport), "%u", ports[1]);
		snprintf(pa, sizeof(pa), "alice=127.0.0.1:%u", ports[0]);
		snprintf(pb, sizeof(pb), "bob=127.0.0.1:%u", ports[1]);
		args[3] = pa;
		args[5] = pb;
		pids[1] = cf_start(socks[1], logs[1], 0, NULL, args);
	}
	a = ssqd_connect_pid(socks[0], pids[0]);
	CHECK(a != NULL, "alice serves");
	if (!a)
		goto out;
	{
		struct ssq_client *b = ssqd_connect_pid(socks[1], pids[1]);

		CHECK(b != NULL, "bob serves");
		ssq_client_close(b);
	}
	st = ssq_queue_open(a, "bob/q0", &q);
	CHECK(!st, "alice's client opens bob/q0 through the relay: %d (%s)", st,
	      st ? ssq_client_error(a) : "");
	if (st)
		goto out;
	usleep(100000); /* bob's word that it has nothing open has come */
	n = ssq_client_peers(a, pi, 2);
	CHECK(n == 1 && pi[0].state == SSQ_PEER_READY &&
	          (pi[0].flags & SSQ_PEER_OPEN_HERE) &&
	          !(pi[0].flags & SSQ_PEER_OPEN_THERE),
	      "alice: bob ready, open here and not there: %d state %d flags 0x%x", n,
	      n > 0 ? (int)pi[0].state : -1, n > 0 ? pi[0].flags : 0);
	ssq_queue_close(q);
	CHECK(cf_wait_ready(a, "bob/q0", 0, 3),
	      "idle at both ends: alice closes the link (--idle-ms 300)");
	CHECK(!cf_file_has(logs[0], "link down"), "alice's link never failed");
out:
	stop = 1;
	pthread_join(t, NULL);
	if (a)
		ssq_client_close(a);
	for (i = 0; i < N; i++) {
		kill(pids[i], SIGTERM);
		waitpid(pids[i], &st, 0);
		unlink(socks[i]);
		if (!getenv("KEEP_LOGS"))
			unlink(logs[i]);
	}
	close(relay_fd);
	unlink(peers_path);
	return test_exit("ctrl_adv_demand_coalesced");
}
