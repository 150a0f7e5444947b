/* SPDX-License-Identifier: MIT */
/*
 * Peers under tenants refuse what is not the same tenant on both hosts
 * (peers/tenant.c), a cluster of alice and bob on the emulated wire:
 *  - kinds: alice --tenants uid, bob --tenants gid; then bob without
 *    --tenants: alice's open of bob/q0 fails and both logs say which
 *    daemon runs which kind ("this ssqd runs --tenants gid, the peer
 *    --tenants uid"); bob's want (its open of alice/q0) the same, the
 *    other way;
 *  - a forged tenant: with --peer-key, alice reaches bob through a man in
 *    the middle (a TCP relay of this test) that rewrites the tenant of
 *    alice's uid-0 link to uid 65534: bob hands it to uid 65534's ssqd,
 *    and the handshake fails (the tenant is in both MACs), so alice's
 *    open fails and nothing links; the same relay passing the bytes as
 *    they are lets the same open succeed; a link for uid 4242, whose
 *    ssqd no client of bob started, is refused and starts nothing.
 * Before: ssqd refused --tenants with peers at start.
 */
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* Open @name on a client of daemon @i: its return, *@why its error. */
static int open_on(unsigned i, const char *name, char *why, size_t whylen)
{
	struct ssq_client *c = t_cluster_connect(&cl, i);
	struct ssq_queue *q = NULL;
	int rc;

	if (!c)
		return -ENOTCONN;
	rc = ssq_queue_open(c, name, &q);
	snprintf(why, whylen, "%s", ssq_client_error(c));
	if (q)
		ssq_queue_close(q);
	ssq_client_close(c);
	return rc;
}

/* alice with @a, bob with @b (NULL-terminated), a kind each; both refuse. */
static void kinds(const char *const *a, const char *const *b, const char *bob_says,
                  const char *alice_says)
{
	char why[256];
	int rc;

	cf_cluster_files(&cl, "tenant-refuse", N, names, 0);
	CHECK(t_cluster_start(&cl, 0, a) > 0 && t_cluster_start(&cl, 1, b) > 0, "start");
	rc = open_on(0, "bob/q0", why, sizeof(why));
	CHECK(rc != 0, "alice opened bob/q0 across --tenants kinds");
	rc = open_on(1, "alice/q0", why, sizeof(why));
	CHECK(rc != 0, "bob opened alice/q0 across --tenants kinds");
	CHECK(cf_file_has(cl.log[1], bob_says), "bob's log says '%s'", bob_says);
	CHECK(cf_file_has(cl.log[0], bob_says), "alice's log tells bob's '%s'", bob_says);
	CHECK(cf_file_has(cl.log[0], alice_says), "alice's log says '%s'", alice_says);
	CHECK(cf_file_has(cl.log[1], alice_says), "bob's log tells alice's '%s'",
	      alice_says);
	t_cluster_stop(&cl);
}

/*
 * The man in the middle, in a child: on @port, each connection relayed to
 * 127.0.0.1:@to, its first 16 bytes (the TENANT) with the id set to
 * @forge_id unless @forge_id is 0. One connection at a time, until killed.
 */
static void relay(int ls, uint16_t to, uint32_t forge_id)
{
	for (;;) {
		uint8_t buf[4096];
		int c = accept(ls, NULL, NULL), s, got = 0;
		struct pollfd pfd[2];

		if (c < 0)
			continue;
		s = t_tcp_connect(-1, to);
		if (s < 0) {
			close(c);
			continue;
		}
		while (got < 16) {
			ssize_t r = read(c, buf + got, 16 - got);

			if (r <= 0)
				break;
			got += (int)r;
		}
		if (got == 16 && forge_id) {
			uint32_t be = htonl(forge_id);

			memcpy(buf + 12, &be, 4); /* peer_msg.c's TOFF_ID */
		}
		if (got != 16 || write(s, buf, 16) != 16)
			goto next;
		pfd[0] = (struct pollfd){ c, POLLIN, 0 };
		pfd[1] = (struct pollfd){ s, POLLIN, 0 };
		while (poll(pfd, 2, -1) > 0) {
			int from = pfd[0].revents ? 0 : 1;
			ssize_t r = read(pfd[from].fd, buf, sizeof(buf));

			if (r <= 0 || write(pfd[1 - from].fd, buf, (size_t)r) != r)
				break;
		}
	next:
		close(c);
		close(s);
	}
}

static pid_t relay_start(uint16_t port, uint16_t to, uint32_t forge_id)
{
	struct sockaddr_in sa;
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 8)) {
		perror("relay");
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		relay(ls, to, forge_id);
		_exit(0);
	}
	close(ls);
	return pid;
}

/*
 * A link to bob's peer port for uid 4242, whose ssqd no client of bob
 * started: refused, nothing started for it (under --peer-key as any
 * failure before the proof; bob's own log says why).
 */
static void stranger(uint16_t port)
{
	struct proto_peer_tenant t = { PROTO_TENANT_UID, 1, 4242 };
	uint8_t buf[SSQ_PEER_TENANT_LEN], no[SSQ_PEER_REFUSAL_LEN + 1];
	int s = t_tcp_connect(-1, port), got = 0;
	ssize_t r;

	proto_peer_encode_tenant(&t, buf);
	CHECK(s >= 0 && write(s, buf, sizeof(buf)) == (ssize_t)sizeof(buf),
	      "a link for uid 4242");
	while (s >= 0 && got < (int)SSQ_PEER_REFUSAL_LEN &&
	       (r = read(s, no + got, SSQ_PEER_REFUSAL_LEN - got)) > 0)
		got += (int)r;
	no[got] = 0;
	CHECK(got == (int)SSQ_PEER_REFUSAL_LEN &&
	          strstr((const char *)no + 8, "authentication failed"),
	      "uid 4242's link refused (%d bytes)", got);
	if (s >= 0)
		close(s);
	CHECK(cf_file_has(cl.log[1], "uid 4242 has no ssqd here: none of its clients has "
	                             "connected"),
	      "bob's log says uid 4242 has no ssqd here");
	CHECK(!cf_file_has(cl.log[1], "tenant uid 4242"), "bob started uid 4242's ssqd");
}

static void forged(void)
{
	const char *const extra[] = { "--tenants", "uid", "--allow-uid", "65534", NULL };
	uint16_t mitm = t_free_tcp_port();
	char why[256];
	FILE *f;
	pid_t r;
	int rc;

	setenv("SSQ_TEST_PEER_KEY", "1", 1); /* tests/lib: --peer-key for both */
	cf_cluster_files(&cl, "tenant-forge", N, names, 0);
	/* alice finds bob at the relay's port. */
	f = fopen(cl.peers, "w");
	CHECK(f && fprintf(f, "alice 127.0.0.1:%u\nbob 127.0.0.1:%u\n", cl.port[0],
	                   mitm) > 0,
	      "peers file");
	if (f)
		fclose(f);
	r = relay_start(mitm, cl.port[1], 65534);
	CHECK(r > 0, "the relay");
	CHECK(t_cluster_start(&cl, 0, extra) > 0 && t_cluster_start(&cl, 1, extra) > 0,
	      "start");
	ssq_client_close(t_cluster_connect(&cl, 1)); /* bob's ports are up */
	stranger(cl.port[1]);
	rc = open_on(0, "bob/q0", why, sizeof(why));
	CHECK(rc != 0, "alice uid 0 opened bob/q0 through a relay that said uid 65534");
	CHECK(cf_file_has(cl.log[1], "for tenant 65534: handed to its ssqd"),
	      "bob handed the forged link to uid 65534's ssqd");
	CHECK(cf_file_has(cl.log[0], "authentication failed"),
	      "alice's log: authentication failed");
	CHECK(!cf_file_has(cl.log[1], "connected,"), "bob linked a forged link");
	if (r > 0) {
		kill(r, SIGKILL);
		waitpid(r, NULL, 0);
	}
	/* The same relay, the bytes as they are: linked. */
	r = relay_start(mitm, cl.port[1], 0);
	CHECK(r > 0, "the plain relay");
	rc = open_on(0, "bob/q0", why, sizeof(why));
	CHECK(rc == 0, "alice opens bob/q0 through the plain relay: %d %s", rc, why);
	if (r > 0) {
		kill(r, SIGKILL);
		waitpid(r, NULL, 0);
	}
	t_cluster_stop(&cl);
	unsetenv("SSQ_TEST_PEER_KEY");
}

int main(void)
{
	const char *const uid[] = { "--tenants", "uid", NULL };
	const char *const gid[] = { "--tenants", "gid", NULL };

	t_need_ssqd();
	kinds(uid, gid, "this ssqd runs --tenants gid, the peer --tenants uid",
	      "this ssqd runs --tenants uid, the peer --tenants gid");
	kinds(uid, NULL, "this ssqd runs --tenants none, the peer --tenants uid",
	      "this ssqd runs --tenants uid, the peer none");
	forged();
	return test_exit("ctrl_tenant_peer_refuse");
}
