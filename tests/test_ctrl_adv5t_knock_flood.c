/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): a stranger at the peer
 * port floods TENANT {uid U} for a tenant whose ssqd runs. Each is handed
 * over its socketpair (serve.c hand_knocks_over, tenants.c
 * ssqd_tenant_send), the same socket U's clients' connections take; the
 * socketpair holds net.unix.max_dgram_qlen messages (10 by default), and
 * a full one refuses U's own clients -EAGAIN "tenant U's ssqd is not
 * taking connections". The promise (issue 28): no stranger at the peer
 * port may stall ssqd (or, here, a tenant's ssqd) for its own users.
 *
 * bob --tenants uid --allow-gid 65534: uid 60040 connects (its tenant
 * runs); 4 stranger processes open connections to the peer port as fast
 * as they can for 4 s, each saying TENANT {60040} and closing; meanwhile
 * uid 60040 connects, lists and closes 60 times: all must be served.
 * Needs root (the client runs as uid 60040).
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N      2
#define UID    60040u
#define FLOODS 4
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

static unsigned count(const char *needle)
{
	return t_log_count(cl.log[1], needle);
}

/* uid UID: @n connections, each listed and closed: how many failed. */
static int clients(unsigned n)
{
	struct t_uid_clients u = {
		.sock = cl.sock[1], .uid = UID, .gid = 65534, .n = n, .pause_ms = 50
	};

	return t_uid_clients(&u);
}

/* A stranger: TENANT {UID} connections as fast as it can for @secs. */
static pid_t flood(double secs)
{
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct proto_peer_tenant t = { PROTO_TENANT_UID, 1, UID };
		uint8_t buf[SSQ_PEER_TENANT_LEN];
		double t0 = now_s();

		proto_peer_encode_tenant(&t, buf);
		while (now_s() - t0 < secs) {
			int s = t_tcp_connect(-1, cl.port[1]);

			if (s >= 0) {
				(void)!write(s, buf, sizeof(buf));
				close(s);
			}
		}
		_exit(0);
	}
	return kid;
}

int main(void)
{
	const char *const extra[] = { "--tenants",  "uid", "--allow-gid", "65534",
		                      "--data-mib", "2",   NULL };
	pid_t f[FLOODS];
	unsigned i;
	int rc;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the client runs as uid %u", UID);
	signal(SIGPIPE, SIG_IGN);
	cf_cluster_files(&cl, "adv5fl", N, names, 0);
	CHECK(t_cluster_start(&cl, 1, extra) > 0, "start bob");
	ssq_client_close(t_cluster_connect(&cl, 1));
	chmod(cl.sock[1], 0666);
	CHECK(clients(1) == 0, "uid %u's first client", UID);
	for (i = 0; i < FLOODS; i++)
		f[i] = flood(4);
	rc = clients(60);
	for (i = 0; i < FLOODS; i++)
		waitpid(f[i], NULL, 0);
	printf("uid %u beside a stranger's TENANT flood: %d of 60 connections failed; "
	       "links handed over (logged, rate-limited): %u\n",
	       UID, rc, count("handed to its ssqd"));
	CHECK(rc == 0,
	      "%d of 60 connections of uid %u failed under a stranger's "
	      "TENANT flood",
	      rc, UID);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv5t_knock_flood");
}
