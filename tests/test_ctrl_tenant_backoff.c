/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd that fails is not started again at every connection of
 * its uid: ssqd --tenants uid --allow-gid 65534 on the emulated device with
 * SSQ_EMU_TRACE naming a file, which the test then replaces with a
 * directory, so that every tenant's ssqd started afterwards fails opening
 * its device (fopen of a directory: EISDIR) and exits at start, as one
 * with a broken device or memory would.
 *  - uid 65534 connects again and again for 3 s: its tenant's ssqd is
 *    started at most 7 times (waits of 100, 200, 400, ... ms between
 *    starts; 6 fit in 3 s), and the connections meanwhile fail with
 *    -EAGAIN saying when the tenant is started again;
 *  - with the trace path a file again, a connection succeeds once the
 *    wait is over (within the 10 s cap);
 *  - after that tenant has run more than 10 s, a crash (SIGKILL) is
 *    followed by a start at the next connection, no wait.
 * Before: a fork and exec per connection (the test saw as many starts as
 * connections, and never -EAGAIN).
 * Needs root (the tenant's client runs as uid 65534).
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"
#include "ctrl/daemon/daemon.h"

static char sock[108], logf[128], dir[128], trace[160];

/* What uid 65534's connections saw. */
struct tally {
	unsigned attempts, ok, eagain, said_when, other;
	int last_other;
	char sample[256];
};

/* Times ssqd's log says it started uid 65534's tenant. */
static unsigned starts(void)
{
	return t_log_count(logf, "tenant uid 65534: its ssqd is pid ");
}

/* The pid of the last tenant ssqd of uid 65534 started; -1: none. */
static pid_t last_tenant(void)
{
	return (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
}

/*
 * As uid 65534 (a child): connect for @secs seconds, once at least (until
 * the first success when @until_ok), 20 ms apart; the tally comes back
 * through a pipe.
 */
static struct tally connects(double secs, int until_ok)
{
	struct tally t;
	int p[2], st;
	pid_t kid;

	memset(&t, 0, sizeof(t));
	if (pipe(p))
		return t;
	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		double end = now_s() + secs;
		struct ssq_client *c;
		int rc;

		close(p[0]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(2);
		/* One try at least: @secs may be over before the first. */
		while (!t.attempts || now_s() < end) {
			t.attempts++;
			rc = ssq_client_connect(sock, &c);
			if (rc == 0) {
				t.ok++;
				ssq_client_close(c);
				if (until_ok)
					break;
			} else if (rc == -EAGAIN) {
				t.eagain++;
				if (strstr(ssq_client_strerror_last(),
				           "is started again at a connection in")) {
					t.said_when++;
					snprintf(t.sample, sizeof(t.sample), "%s",
					         ssq_client_strerror_last());
				}
			} else {
				t.other++;
				t.last_other = rc;
			}
			usleep(20000);
		}
		_exit(write(p[1], &t, sizeof(t)) == sizeof(t) ? 0 : 3);
	}
	close(p[1]);
	if (read(p[0], &t, sizeof(t)) != sizeof(t))
		memset(&t, 0, sizeof(t));
	close(p[0]);
	waitpid(kid, &st, 0);
	return t;
}

int main(void)
{
	const char *args[] = {
		"--device",   "emu",         "--socket",  sock,  "--hugepages=off",
		"--data-mib", "8",           "--sq-size", "256", "--tenants",
		"uid",        "--allow-gid", "65534",     NULL
	};
	struct ssq_client *c;
	struct tally t;
	unsigned s0, s1;
	pid_t d, tp;
	int st;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the tenant's client runs as uid 65534");
	snprintf(sock, sizeof(sock), "/tmp/ssq-tbo-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tbo-%d.log", (int)getpid());
	snprintf(dir, sizeof(dir), "/tmp/ssq-tbo-%d.d", (int)getpid());
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	if (mkdir(dir, 0755) && errno != EEXIST)
		SKIP("mkdir %s: %s", dir, strerror(errno));
	d = t_ssqd_exec(args, "SSQ_EMU_TRACE", trace, logf, 0);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants uid");
	if (!c)
		goto out;
	ssq_client_close(c);
	chmod(sock, 0666);
	/* Every tenant's ssqd from now on fails to open its device. */
	unlink(trace);
	CHECK(mkdir(trace, 0755) == 0, "mkdir %s", trace);

	t = connects(3.0, 0);
	s0 = starts();
	printf("3 s of connections with a failing tenant: %u tries, %u ok, %u "
	       "-EAGAIN (%u saying when), %u other (last %d); %u tenant starts\n"
	       "  e.g. %s\n",
	       t.attempts, t.ok, t.eagain, t.said_when, t.other, t.last_other, s0,
	       t.sample);
	CHECK(t.attempts >= 15, "only %u connections in 3 s: the test proves nothing",
	      t.attempts);
	CHECK(s0 >= 1 && s0 <= 7, "%u starts of a failing tenant in 3 s (want 1..7)", s0);
	CHECK(t.said_when >= 1 && t.said_when == t.eagain,
	      "%u -EAGAIN, %u of them saying when the tenant starts again", t.eagain,
	      t.said_when);
	CHECK(t.ok == 0, "%u connections to a tenant that cannot start worked", t.ok);
	CHECK(cf_file_has(logf, "not started again for"),
	      "ssqd's log does not say it waits");

	/* It can start again: a connection works once the wait is over. */
	rmdir(trace);
	t = connects(20.0, 1);
	printf("after the fix: %u tries until one worked (%u -EAGAIN, %u other)\n",
	       t.attempts, t.eagain, t.other);
	CHECK(t.ok == 1, "no connection worked within 20 s of the tenant's repair");
	tp = last_tenant();
	CHECK(tp > 0 && kill(tp, 0) == 0, "the repaired tenant (pid %d) is not running",
	      (int)tp);

	/* A run longer than SSQD_TENANT_HEALTHY_MS: its crash costs no wait. */
	sleep(SSQD_TENANT_HEALTHY_MS / 1000 + 1);
	s1 = starts();
	if (tp > 0)
		kill(tp, SIGKILL);
	usleep(200000);
	t = connects(0, 1);
	printf("after a crash of a tenant that ran %d s: %u tries, %u ok, %u -EAGAIN "
	       "(%s)\n",
	       SSQD_TENANT_HEALTHY_MS / 1000 + 1, t.attempts, t.ok, t.eagain, t.sample);
	CHECK(t.ok == 1 && t.attempts == 1,
	      "the first connection after a long run's crash did not work");
	CHECK(starts() == s1 + 1,
	      "the tenant was not started again (%u starts, %u before)", starts(), s1);
out:
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	rmdir(trace);
	unlink(trace);
	rmdir(dir);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_backoff");
}
