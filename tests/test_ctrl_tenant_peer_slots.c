/* SPDX-License-Identifier: MIT */
/*
 * A link to the peer port starts no tenant's ssqd (issue 28, adversarial
 * review h-adv4 finding 1: peers/accept.c knock_route, peers/tenant.c
 * ssqd_peer_tenant_ok, tenants.c ssqd_tenant_pass), with and without
 * --peer-key; and links still form once the tenant does start here.
 *
 * The users: this test runs in a mount namespace of its own with a copy
 * of /etc/passwd bind-mounted over it, holding 20 users 5000..5019 of
 * primary group 4000 (needs root; skips otherwise, saying why).
 *
 * slots: bob runs --tenants uid --allow-gid 4000 in a cluster. A stranger
 * sends 16 TENANT messages, one per uid 5000..5015 of the group, and
 * nothing else: each is refused (without --peer-key saying "uid U has no
 * ssqd here: none of its clients has connected", with it "authentication
 * failed"), bob's log says why, and no tenant's ssqd starts; uid 5019's
 * local client connects (its tenant started by it), and then a TENANT for
 * uid 5019 is handed to that running ssqd.
 * Before: the 16 TENANTs started 16 tenants that never end, and uid
 * 5019's client was refused -EUSERS "ssqd serves 16 tenants besides its
 * own" until ssqd restarted.
 *
 * links: alice and bob both --tenants uid --allow-gid 4000 (no tenant
 * started at start). uid 5002 on alice opens bob/q0 (alice dials bob)
 * while bob runs no tenant 5002: refused, the open told why; once it was,
 * uid 5002's client connects to bob (starting bob's tenant 5002) and the
 * open on alice succeeds soon (alice's dialer, refused for 3.5 s by then,
 * backs off 2 s at most). The
 * other way: uid 5003 on bob opens alice/q0 (bob sends a want), alice
 * runs no tenant 5003: refused; uid 5003's client connects to alice and
 * the open on bob succeeds.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N      2
#define GID    4000u
#define UID0   5000u
#define NUSERS 20u
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* A mount namespace where /etc/passwd also lists uids 5000..5019, gid 4000. */
static int fake_users(void)
{
	char path[64], line[256];
	FILE *in, *out;
	unsigned i;

	snprintf(path, sizeof(path), "/tmp/ssq-tenslot-passwd-%d", (int)getpid());
	in = fopen("/etc/passwd", "r");
	out = fopen(path, "w");
	if (!in || !out)
		return -1;
	while (fgets(line, sizeof(line), in))
		fputs(line, out);
	for (i = 0; i < NUSERS; i++)
		fprintf(out, "tenslot%u:x:%u:%u::/:/bin/false\n", i, UID0 + i, GID);
	fclose(in);
	fclose(out);
	if (unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(path, "/etc/passwd", NULL, MS_BIND, NULL))
		return -1;
	unlink(path); /* the mount keeps it */
	return 0;
}

static int become(uint32_t uid)
{
	return setgroups(0, NULL) || setgid(GID) || setuid(uid) ? -1 : 0;
}

/*
 * A stranger's connection to @port naming tenant uid @uid, then nothing:
 * bob's refusal's reason into @no (empty when none came within 10 s, or
 * the connection was taken without a word), the connection closed.
 */
static void stranger(uint16_t port, uint32_t uid, char *no, size_t nolen)
{
	struct proto_peer_tenant t = { PROTO_TENANT_UID, 1, uid };
	uint8_t buf[SSQ_PEER_TENANT_LEN], r[SSQ_PEER_REFUSAL_LEN + 1];
	int s = t_tcp_connect(-1, port), got = 0;
	struct pollfd pfd = { s, POLLIN, 0 };
	ssize_t n;

	no[0] = 0;
	proto_peer_encode_tenant(&t, buf);
	if (s < 0 || write(s, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		snprintf(no, nolen, "(no connection)");
		if (s >= 0)
			close(s);
		return;
	}
	while (got < (int)SSQ_PEER_REFUSAL_LEN && poll(&pfd, 1, 10000) == 1 &&
	       (n = read(s, r + got, SSQ_PEER_REFUSAL_LEN - got)) > 0)
		got += (int)n;
	close(s);
	r[got] = 0;
	if (got == (int)SSQ_PEER_REFUSAL_LEN)
		snprintf(no, nolen, "%s", (const char *)r + 8);
}

/* Wait up to @secs for @needle in daemon @i's log; 1 if it came. */
static int log_wait(unsigned i, const char *needle, double secs)
{
	double t0 = now_s();

	while (!cf_file_has(cl.log[i], needle) && now_s() - t0 < secs)
		usleep(20000);
	return cf_file_has(cl.log[i], needle);
}

static int count_started(unsigned i, unsigned from, unsigned to)
{
	char line[64];
	unsigned u;
	int n = 0;

	for (u = from; u < to; u++) {
		snprintf(line, sizeof(line), "tenant uid %u: its ssqd is pid", u);
		n += cf_file_has(cl.log[i], line);
	}
	return n;
}

/*
 * A client of daemon @i as uid @uid, in a child, held open until a byte
 * on @hold (its pipe's read end; closed: let go): its connect's return,
 * then the child's exit as its status (-errno).
 */
static pid_t holder(unsigned i, uint32_t uid, int *hold)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(stdout); /* the child's exit writes no copy of ours */
	pid = fork();
	if (pid == 0) {
		struct ssq_client *c = NULL;
		char b;
		int rc;

		close(p[1]);
		if (become(uid))
			_exit(200);
		rc = ssq_client_connect(cl.sock[i], &c);
		printf("uid %u's client of %s: %d %s\n", (unsigned)uid, names[i], rc,
		       rc ? strerror(-rc) : "connected");
		fflush(stdout);
		if (!rc)
			(void)!read(p[0], &b, 1);
		if (c)
			ssq_client_close(c);
		_exit(rc < 0 ? -rc : 0);
	}
	close(p[0]);
	*hold = p[1];
	return pid;
}

static int reap_child(pid_t pid)
{
	int st = 0;

	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void slots(int key)
{
	const char *const extra[] = { "--tenants",  "uid", "--allow-gid", "4000",
		                      "--data-mib", "2",   NULL };
	const char *want = key ? "authentication failed" : NULL;
	char no[SSQ_PEER_REFUSAL_LEN], says[128];
	unsigned i, refused = 0;
	int hold, rc;
	pid_t pid;

	printf("slots, --peer-key: %s\n", key ? "yes" : "no");
	cf_cluster_files(&cl, key ? "tenslot-key" : "tenslot", N, names, 0);
	CHECK(t_cluster_start(&cl, 1, extra) > 0, "start bob");
	ssq_client_close(t_cluster_connect(&cl, 1)); /* bob's ports are up */
	chmod(cl.sock[1], 0666);
	for (i = 0; i < 16; i++) {
		snprintf(says, sizeof(says),
		         "uid %u has no ssqd here: none of its clients has connected",
		         UID0 + i);
		stranger(cl.port[1], UID0 + i, no, sizeof(no));
		if (strstr(no, want ? want : says))
			refused++;
		else
			printf("uid %u's TENANT: refusal '%s'\n", UID0 + i, no);
	}
	CHECK(refused == 16, "%u of 16 TENANTs refused saying '%s'", refused,
	      want ? want : "uid U has no ssqd here: ...");
	CHECK(log_wait(1,
	               "refused: uid 5000 has no ssqd here: none of its clients has "
	               "connected",
	               10),
	      "bob's log says why uid 5000's TENANT was refused");
	rc = count_started(1, UID0, UID0 + 16);
	printf("tenants a stranger started on bob: %d\n", rc);
	CHECK(rc == 0, "a stranger's TENANTs started %d tenants on bob", rc);
	/* The local user's own: its client starts its tenant. */
	pid = holder(1, UID0 + NUSERS - 1, &hold);
	CHECK(log_wait(1, "tenant uid 5019: its ssqd is pid", 30),
	      "uid 5019's client started its tenant on bob");
	/* A second past the log's rate limit (the refusals' lines used it). */
	usleep(1200000);
	stranger(cl.port[1], UID0 + NUSERS - 1, no, sizeof(no));
	CHECK(log_wait(1, "for tenant 5019: handed to its ssqd", 10),
	      "a link for uid 5019, whose ssqd runs, was not handed to it ('%s')", no);
	close(hold);
	rc = reap_child(pid);
	CHECK(rc == 0, "uid %u, allowed by --allow-gid %u, was refused by bob (%d %s)",
	      UID0 + NUSERS - 1, GID, rc, rc > 0 ? strerror(rc) : "?");
	t_cluster_stop(&cl);
}

/*
 * uid @uid's client of daemon @i, in a child: opens @queue, asking again
 * (ssq_queue_try_open) until it is open or 60 s passed. Writes 'r' on
 * @out once an answer said the peer refused the link (its reason in the
 * answer, and @reason in it), then 'o' when it is open, 'f' if never. Its
 * exit status: 0 when it opened after a refusal.
 */
static int opener(unsigned i, uint32_t uid, const char *queue, const char *reason,
                  int out)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	int saw = 0, rc = -1;
	double t0 = now_s(), t_saw = 0;

	if (become(uid) || ssq_client_connect(cl.sock[i], &c))
		return 2;
	while (now_s() - t0 < 60) {
		rc = ssq_queue_try_open(c, queue, &q);
		if (!rc)
			break;
		if (!saw && strstr(ssq_client_error(c), "refused") &&
		    strstr(ssq_client_error(c), reason)) {
			saw = 1;
			t_saw = now_s();
			printf("uid %u on %s, %s: %d '%s'\n", (unsigned)uid, names[i],
			       queue, rc, ssq_client_error(c));
			fflush(stdout);
			if (write(out, "r", 1) != 1)
				return 3;
		}
		usleep(20000);
	}
	printf("uid %u on %s, %s: %s %.1f s after the first refusal\n", (unsigned)uid,
	       names[i], queue, rc ? "not open" : "open", saw ? now_s() - t_saw : 0);
	if (rc)
		printf("  last: %d %s\n", rc, ssq_client_error(c));
	fflush(stdout);
	(void)!write(out, rc ? "f" : "o", 1);
	if (q)
		ssq_queue_close(q);
	ssq_client_close(c);
	return !saw ? 4 : rc ? 5 : 0;
}

/*
 * uid @uid opens @queue on daemon @from while daemon @to runs no tenant
 * @uid: refused; then @uid's client connects to @to and the open goes on.
 */
static void late_tenant(unsigned from, unsigned to, uint32_t uid, const char *queue,
                        int key)
{
	char says[96], c = 0;
	int p[2], hold, st;
	double t0;
	pid_t op, h;

	snprintf(says, sizeof(says), "uid %u has no ssqd here", (unsigned)uid);
	if (pipe(p))
		return;
	fflush(stdout);
	op = fork();
	if (op == 0) {
		close(p[0]);
		_exit(
		    opener(from, uid, queue, key ? "authentication failed" : says, p[1]));
	}
	close(p[1]);
	/* Refused first (the open said why), then the tenant starts at @to. */
	CHECK(read(p[0], &c, 1) == 1 && c == 'r',
	      "uid %u's open of %s on %s was not refused first ('%c')", (unsigned)uid,
	      queue, names[from], c);
	CHECK(cf_file_has(cl.log[to], says), "%s's log says '%s'", names[to], says);
	/*
	 * Past the first steps of the dialer's backoff (100 ms doubling):
	 * it retries every BACKOFF_MAX_MS (2 s) by now, and the link must
	 * still come up soon after the tenant starts, not after minutes.
	 */
	usleep(3500000);
	t0 = now_s();
	h = holder(to, uid, &hold);
	CHECK(read(p[0], &c, 1) == 1 && c == 'o',
	      "uid %u's open of %s on %s once %s runs its tenant ('%c')", (unsigned)uid,
	      queue, names[from], names[to], c);
	printf("uid %u: linked %.1f s after its client of %s connected\n", (unsigned)uid,
	       now_s() - t0, names[to]);
	/* Generous for a loaded machine: a dialer that gave up would take 60 s. */
	CHECK(now_s() - t0 < 20, "uid %u linked only %.1f s after its tenant started",
	      (unsigned)uid, now_s() - t0);
	close(p[0]);
	st = reap_child(op);
	CHECK(st == 0, "uid %u's opener ended with %d", (unsigned)uid, st);
	close(hold);
	st = reap_child(h);
	CHECK(st == 0, "uid %u's client of %s ended with %d", (unsigned)uid, names[to],
	      st);
}

static void links(int key)
{
	const char *const extra[] = { "--tenants",  "uid", "--allow-gid", "4000",
		                      "--data-mib", "2",   NULL };
	int rc;

	printf("links, --peer-key: %s\n", key ? "yes" : "no");
	cf_cluster_files(&cl, key ? "tenslot-links-key" : "tenslot-links", N, names, 0);
	CHECK(t_cluster_start(&cl, 0, extra) > 0 && t_cluster_start(&cl, 1, extra) > 0,
	      "start");
	ssq_client_close(t_cluster_connect(&cl, 0));
	ssq_client_close(t_cluster_connect(&cl, 1));
	chmod(cl.sock[0], 0666);
	chmod(cl.sock[1], 0666);
	late_tenant(0, 1, UID0 + 2, "bob/q0", key);   /* alice dials bob */
	late_tenant(1, 0, UID0 + 3, "alice/q0", key); /* bob wants, alice dials */
	rc =
	    count_started(0, UID0, UID0 + NUSERS) + count_started(1, UID0, UID0 + NUSERS);
	CHECK(rc == 4, "%d tenants started, not the 4 the clients asked for", rc);
	t_cluster_stop(&cl);
}

int main(void)
{
	int key;

	t_need_ssqd();
	if (geteuid() != 0)
		SKIP("needs root (a mount namespace with users of group 4000)");
	if (fake_users())
		SKIP("no mount namespace for the test's users: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	for (key = 0; key < 2; key++) {
		if (key)
			setenv("SSQ_TEST_PEER_KEY", "1", 1);
		slots(key);
		links(key);
		unsetenv("SSQ_TEST_PEER_KEY");
	}
	return test_exit("ctrl_tenant_peer_slots");
}
