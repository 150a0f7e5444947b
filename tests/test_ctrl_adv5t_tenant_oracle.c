/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): with --peer-key, "nothing
 * of this host's tenants before the proof" (peers/accept.c
 * ssqd_knock_handed; knock_route refuses an unknown tenant with the one
 * AUTH_REFUSAL). But a TENANT {uid U} is refused at once when U has no
 * ssqd here, and handed to U's ssqd - which waits for the dialer's
 * handshake, saying nothing - when U has one. A stranger (any user of a
 * peer's host: --peer-key takes connections from peers' hosts only) that
 * sends TENANT and waits a second learns which uids use ssq on this host
 * now, and which tenants to keep alive (test_ctrl_adv5t_stranger_pins).
 *
 * bob: --tenants uid --allow-gid 65534, --peer-key. uid 60020 connects
 * (its tenant runs); uid 60021 never did. A stranger sends TENANT for
 * each and reads what comes within 1.5 s: the two must look the same.
 * Needs root (the client runs as uid 60020).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* uid @uid connects to bob, lists, closes, in a child: 0, or -errno. */
static int client(uid_t uid)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int st = 0;
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c = NULL;
		int rc;

		if (setgroups(0, NULL) || setgid(65534) || setuid(uid))
			_exit(200);
		rc = ssq_client_connect(cl.sock[1], &c);
		if (!rc)
			rc = ssq_client_list(c, info, SSQ_MAX_QUEUES) > 0 ? 0 : -ENODATA;
		if (c)
			ssq_client_close(c);
		_exit(rc < 0 ? -rc : 0);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -255;
	return -WEXITSTATUS(st);
}

/*
 * A stranger's TENANT {uid @uid} to bob's peer port, then 1.5 s of
 * listening: what it saw, in @saw (bytes, the refusal's text if one,
 * whether bob closed).
 */
static void observe(uint32_t uid, char *saw, size_t len)
{
	struct proto_peer_tenant t = { PROTO_TENANT_UID, 1, uid };
	uint8_t buf[SSQ_PEER_TENANT_LEN], r[512];
	int s = t_tcp_connect(-1, cl.port[1]), got = 0, closed = 0;
	struct pollfd pfd = { s, POLLIN, 0 };
	double t0 = now_s();
	ssize_t n;

	proto_peer_encode_tenant(&t, buf);
	if (s < 0 || write(s, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		snprintf(saw, len, "(no connection)");
		if (s >= 0)
			close(s);
		return;
	}
	while (!closed && got < (int)sizeof(r) - 1 && now_s() - t0 < 1.5) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = read(s, r + got, sizeof(r) - 1 - got);
		if (n <= 0)
			closed = 1;
		else
			got += (int)n;
	}
	close(s);
	r[got] = 0;
	snprintf(saw, len, "%d bytes%s%s%s, %s", got,
	         got >= (int)SSQ_PEER_REFUSAL_LEN ? " '" : "",
	         got >= (int)SSQ_PEER_REFUSAL_LEN ? (const char *)r + 8 : "",
	         got >= (int)SSQ_PEER_REFUSAL_LEN ? "'" : "",
	         closed ? "closed" : "still open");
}

int main(void)
{
	const char *const extra[] = { "--tenants",  "uid", "--allow-gid", "65534",
		                      "--data-mib", "2",   NULL };
	char running[600], none[600];

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the client runs as uid 60020");
	signal(SIGPIPE, SIG_IGN);
	setenv("SSQ_TEST_PEER_KEY", "1", 1);
	cf_cluster_files(&cl, "adv5orc", N, names, 0);
	CHECK(t_cluster_start(&cl, 1, extra) > 0, "start bob");
	ssq_client_close(t_cluster_connect(&cl, 1));
	chmod(cl.sock[1], 0666);
	CHECK(client(60020) == 0, "uid 60020's client");
	observe(60020, running, sizeof(running));
	observe(60021, none, sizeof(none));
	printf("--peer-key, a stranger's TENANT: uid 60020 (its ssqd runs): %s; uid "
	       "60021 (none): %s\n",
	       running, none);
	CHECK(!strcmp(running, none),
	      "a stranger tells a uid whose ssqd runs (%s) from one without (%s) "
	      "before any proof",
	      running, none);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv5t_tenant_oracle");
}
