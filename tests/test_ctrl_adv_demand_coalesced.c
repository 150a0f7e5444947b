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
static struct t_cluster cl;
static uint16_t relay_port;
static int relay_fd;
static volatile int stop;

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
		b = a >= 0 ? t_tcp_connect(-1, cl.port[1]) : -1;
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
	int st, n, one = 1;
	FILE *f;

	t_need_ssqd();
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
	cf_cluster_files(&cl, "ci-co", N, names, 0);
	f = fopen(cl.peers, "w");
	/* alice reaches bob through the relay; bob's own line is its port. */
	fprintf(f, "alice 127.0.0.1:%u\nbob 127.0.0.1:%u\n", cl.port[0], relay_port);
	fclose(f);
	pthread_create(&t, NULL, relay, NULL);
	t_cluster_start(&cl, 0, T_ARGS("--idle-ms", "300"));
	/* bob listens on its own port, whatever its line says. */
	{
		char lport[16];
		const char *args[] = { "--name", "bob",      "--peer", NULL, "--peer",
			               NULL,     "--listen", lport,    NULL };
		char pa[64], pb[64];

		snprintf(lport, sizeof(lport), "%u", cl.port[1]);
		snprintf(pa, sizeof(pa), "alice=127.0.0.1:%u", cl.port[0]);
		snprintf(pb, sizeof(pb), "bob=127.0.0.1:%u", cl.port[1]);
		args[3] = pa;
		args[5] = pb;
		cl.pid[1] = cf_start(cl.sock[1], cl.log[1], 0, NULL, args);
	}
	a = t_cluster_connect(&cl, 0);
	CHECK(a != NULL, "alice serves");
	if (!a)
		goto out;
	{
		struct ssq_client *b = t_cluster_connect(&cl, 1);

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
	CHECK(!cf_file_has(cl.log[0], "link down"), "alice's link never failed");
out:
	stop = 1;
	pthread_join(t, NULL);
	ssq_client_close(a);
	t_cluster_stop(&cl);
	close(relay_fd);
	return test_exit("ctrl_adv_demand_coalesced");
}
