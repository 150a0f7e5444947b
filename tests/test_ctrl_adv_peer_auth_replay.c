/* SPDX-License-Identifier: MIT */
/*
 * A message replayed on an authenticated link (ssqd --peer-key; issue 28
 * item 3). alice dials bob through a relay that can write on the
 * connection, as anyone on the path can. Once alice's client has bob/q0
 * open, the last message alice sent (its BUSY, MACed under the link's
 * seq for it) is sent to bob again: bob refuses it (its MAC is for a seq
 * already taken), says so, and drops the link, acting on nothing; alice
 * dials again and bob/q0 is READY again over a fresh handshake. Before,
 * a link message was believed as it came: a CLOSE or a restart ASK
 * replayed by anyone on the path was acted on.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;
static int relay_fd;
static volatile int stop, replay_now, replayed;
static uint8_t rec[8192]; /* alice -> bob, the current connection's */
static size_t rec_len;

/* Each connection alice makes, relayed to bob; on replay_now, alice's last message again.
 */
static void *relay(void *arg)
{
	(void)arg;
	while (!stop) {
		struct pollfd pfd[2];
		uint8_t buf[4096];
		int a, b;

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
		rec_len = 0;
		pfd[0].fd = a;
		pfd[0].events = POLLIN;
		pfd[1].fd = b;
		pfd[1].events = POLLIN;
		while (!stop) {
			ssize_t r;

			if (replay_now &&
			    rec_len >= SSQ_PEER_RESTART_LEN + SSQ_PEER_MAC_LEN) {
				size_t n = SSQ_PEER_RESTART_LEN + SSQ_PEER_MAC_LEN;

				replay_now = 0;
				replayed = send(b, rec + rec_len - n, n, MSG_NOSIGNAL) ==
				           (ssize_t)n;
			}
			if (poll(pfd, 2, 20) <= 0)
				continue;
			if (pfd[0].revents) {
				r = recv(a, buf, sizeof(buf), 0);
				if (r <= 0 || send(b, buf, (size_t)r, MSG_NOSIGNAL) != r)
					break;
				if (rec_len + (size_t)r <= sizeof(rec)) {
					memcpy(rec + rec_len, buf, (size_t)r);
					rec_len += (size_t)r;
				}
			}
			if (pfd[1].revents) {
				r = recv(b, buf, sizeof(buf), 0);
				if (r <= 0 || send(a, buf, (size_t)r, MSG_NOSIGNAL) != r)
					break;
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
	char key[108], lport[16], pa[64], pb[64];
	uint8_t k[32];
	pthread_t t;
	int st, one = 1, fd;
	double t0;
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
	snprintf(key, sizeof(key), "/tmp/ssq-par-key-%d", getpid());
	fd = open(key, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && getrandom(k, sizeof(k), 0) == sizeof(k) &&
	          write(fd, k, sizeof(k)) == sizeof(k),
	      "key written");
	if (fd >= 0)
		close(fd);
	cf_cluster_files(&cl, "par", N, names, 0);
	f = fopen(cl.peers, "w");
	/* alice reaches bob through the relay; bob's own line is its port. */
	fprintf(f, "alice 127.0.0.1:%u\nbob 127.0.0.1:%u\n", cl.port[0],
	        ntohs(sa.sin_port));
	fclose(f);
	pthread_create(&t, NULL, relay, NULL);
	t_cluster_start(&cl, 0, T_ARGS("--peer-key", key));
	snprintf(lport, sizeof(lport), "%u", cl.port[1]);
	snprintf(pa, sizeof(pa), "alice=127.0.0.1:%u", cl.port[0]);
	snprintf(pb, sizeof(pb), "bob=127.0.0.1:%u", cl.port[1]);
	cl.pid[1] = cf_start(cl.sock[1], cl.log[1], 0, NULL,
	                     T_ARGS("--name", "bob", "--peer", pa, "--peer", pb,
	                            "--listen", lport, "--peer-key", key));
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
	/* alice's BUSY, its last message, is through. */
	for (t0 = now_s(); now_s() - t0 < 5; usleep(10000))
		if (rec_len >= 2 * SSQ_PEER_AUTH_LEN + SSQ_PEER_MSG_LEN +
		                   2 * SSQ_PEER_MAC_LEN + SSQ_PEER_RESTART_LEN)
			break;
	usleep(200000);
	replay_now = 1;
	for (t0 = now_s(); now_s() - t0 < 10; usleep(20000))
		if (cf_file_has(cl.log[1], "fails its MAC"))
			break;
	CHECK(replayed, "the relay replayed alice's last message");
	CHECK(cf_file_has(cl.log[1], "peer alice: link down (message ") &&
	          cf_file_has(cl.log[1],
	                      "on the link fails its MAC (replayed, altered or "
	                      "not from the peer))"),
	      "bob refuses the replay, saying so, and drops the link");
	CHECK(cf_wait_ready(a, "bob/q0", 1, 15),
	      "alice links again (a fresh handshake) and bob/q0 is READY");
	ssq_queue_close(q);
out:
	stop = 1;
	pthread_join(t, NULL);
	if (a)
		ssq_client_close(a);
	if (test_failures)
		setenv("KEEP_LOGS", "1", 1);
	t_cluster_stop(&cl);
	close(relay_fd);
	unlink(key);
	return test_exit("ctrl_adv_peer_auth_replay");
}
