/* SPDX-License-Identifier: MIT */
/*
 * ssq_demo - the main job: several sender processes share one send queue
 * of a running ssqd and post RDMA WRITEs through it at once; the data is
 * checked at the destination and the rates are printed as a perftest-style
 * table.
 *
 *   ssq_demo [-P procs] [-n iterations per process] [-s size] [-S socket]
 *   ssq_demo -V | --version | -h | --help
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "ssq_version.h"

#define CELLS        256u  /* destination cells per process, reused round-robin */
#define SIGNAL_EVERY 32u   /* one completion per 32 WRITEs, as perftest's -Q */
#define MARKS        4096u /* at most this many timestamps per sender */
#define SLICES       10u   /* BW peak: the best tenth of the run */
#define STUCK_S      30u   /* no completion for this long: the run failed */

struct result {
	uint64_t msgs;
	double t0, secs; /* CLOCK_MONOTONIC start, and seconds to the last completion */
	uint64_t mark;   /* messages between timestamps */
	int rc;
	char why[160];
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t tag(uint32_t p, uint64_t i)
{
	return ((uint64_t)(p + 1) << 48) | i;
}

/*
 * Reap what completed: 0, or 1 with res->why set when a WRITE failed, ssqd
 * went away, or nothing completed for STUCK_S seconds (a queue that stopped
 * must fail the run, not hang it). @last: when the last completion came.
 */
static int reap(struct ssq_producer *prod, uint64_t *reaped, double *last,
                struct result *res)
{
	struct ssq_completion comp[16];
	int k, got = ssq_poll(prod, comp, 16);

	if (got < 0) {
		snprintf(res->why, sizeof(res->why), "poll after %llu completions: %s",
		         (unsigned long long)*reaped, strerror(-got));
		return 1;
	}
	for (k = 0; k < got; k++, ++*reaped)
		if (comp[k].status != IBV_WC_SUCCESS) {
			snprintf(res->why, sizeof(res->why), "WRITE %llu: %s",
			         (unsigned long long)comp[k].wr_id,
			         ibv_wc_status_str((enum ibv_wc_status)comp[k].status));
			return 1;
		}
	if (got) {
		*last = now_s();
	} else if (now_s() - *last > STUCK_S) {
		snprintf(res->why, sizeof(res->why),
		         "no completion for %u s after %llu (the queue stopped)", STUCK_S,
		         (unsigned long long)*reaped);
		return 1;
	}
	return 0;
}

/*
 * One sender: N WRITEs of @size bytes, its cells in @dst (the parent's
 * buffer, at its remote descriptor), a completion per 32.
 */
static void sender(const char *sock, uint32_t p, uint64_t n, uint32_t size,
                   const struct ssq_buf *dst, struct result *res, double *marks)
{
	uint64_t raddr = dst->remote_addr + (uint64_t)p * CELLS * size;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *prod;
	struct ssq_buf src;
	uint64_t i, reaped = 0, posted = 0;
	double t0, last;
	int rc;

	res->rc = 1;
	if (ssq_client_connect(sock, &c)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_strerror_last());
		return;
	}
	if (ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, (uint64_t)CELLS * size, &src)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
		return;
	}
	prod = ssq_queue_producer(q);
	/* Each source cell holds its tag in its first 8 bytes when sent. */
	t0 = last = res->t0 = now_s();
	for (i = 0; i < n; i++) {
		uint32_t cell = (uint32_t)(i % CELLS);
		unsigned flags = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1 || i == n - 1)
		                     ? SSQ_WQE_SIGNALED
		                     : 0;

		/* A source cell is rewritten only once its last WRITE completed. */
		while (i >= CELLS && reaped * SIGNAL_EVERY + CELLS <= i)
			if (reap(prod, &reaped, &last, res))
				return;
		*(uint64_t *)((uint8_t *)src.addr + (size_t)cell * size) = tag(p, i);
		/*
		 * Loopback: the peer's data arena is this arena, dst in it,
		 * reached with its own key.
		 */
		while ((rc = ssq_post_write(prod, src.iova + (uint64_t)cell * size,
		                            src.lkey, size, raddr + (uint64_t)cell * size,
		                            dst->rkey, i, flags)) == -EAGAIN)
			if (reap(prod, &reaped, &last, res))
				return;
		if (rc) {
			snprintf(res->why, sizeof(res->why), "post of WRITE %llu: %s",
			         (unsigned long long)i, strerror(-rc));
			return;
		}
		posted++;
		if (posted % res->mark == 0)
			marks[posted / res->mark - 1] = now_s();
	}
	/* The last WRITE is signaled: its completion means all arrived. */
	while (reaped < (n + SIGNAL_EVERY - 1) / SIGNAL_EVERY)
		if (reap(prod, &reaped, &last, res))
			return;
	res->secs = now_s() - t0;
	res->msgs = n;
	res->rc = 0;
	ssq_client_close(c);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: ssq_demo [-P procs 1..%u] [-n iterations per process] [-s size "
	        "8..4096]"
	        " [-S socket]\n"
	        "       ssq_demo -V|--version | -h|--help\n",
	        SSQ_MAX_PRODUCERS - 1);
}

static long num(const char *flag, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, "ssq_demo: %s '%s': want %ld..%ld\n", flag, s, lo, hi);
		usage(stderr);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *sock = NULL;
	uint32_t procs = 4, size = 64, p, bad = 0;
	uint64_t n = 200000, i, total = 0;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf dst;
	struct result *res;
	double secs, peak, tb = 0, te = 0, *marks;
	pid_t kids[SSQ_MAX_PRODUCERS];
	int opt, status, fail = 0;
	static const struct option longopts[] = {
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	while ((opt = getopt_long(argc, argv, "P:n:s:S:Vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'P':
			procs = (uint32_t)num("-P", optarg, 1, SSQ_MAX_PRODUCERS - 2);
			break;
		case 'n':
			n = (uint64_t)num("-n", optarg, 1, 1000000000);
			break;
		case 's':
			size = (uint32_t)num("-s", optarg, 8, 4096);
			break;
		case 'S':
			sock = optarg;
			break;
		case 'V':
			printf("ssq_demo %s (git %s)\n", SSQ_VERSION_STRING,
			       SSQ_GIT_REVISION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (ssq_client_connect(sock, &c)) {
		fprintf(stderr, "ssq_demo: %s (is ssqd running?)\n",
		        ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, (uint64_t)procs * CELLS * size, &dst)) {
		fprintf(stderr, "ssq_demo: %s\n", ssq_client_error(c));
		return 1;
	}
	memset(dst.addr, 0, dst.len);
	res = mmap(NULL, sizeof(*res) * procs, PROT_READ | PROT_WRITE,
	           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	marks = mmap(NULL, sizeof(*marks) * MARKS * procs, PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED || marks == MAP_FAILED) {
		perror("ssq_demo: mmap");
		return 1;
	}
	printf("%u sender processes share queue q0 (QPN 0x%x) on device %s: %llu RDMA "
	       "WRITEs of "
	       "%u bytes each\n",
	       procs, ssq_queue_qpn(q), ssq_client_device(c), (unsigned long long)n,
	       size);
	for (p = 0; p < procs; p++) {
		memset(&res[p], 0, sizeof(res[p]));
		res[p].mark = (n + MARKS - 1) / MARKS;
		kids[p] = fork();
		if (kids[p] == 0) {
			sender(sock, p, n, size, &dst, &res[p],
			       marks + (size_t)p * MARKS);
			_exit(res[p].rc);
		}
	}
	for (p = 0; p < procs; p++) {
		waitpid(kids[p], &status, 0);
		if (res[p].rc || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "ssq_demo: sender %u failed: %s\n", p,
			        res[p].why);
			fail = 1;
			continue;
		}
		total += res[p].msgs;
		if (!tb || res[p].t0 < tb)
			tb = res[p].t0;
		if (res[p].t0 + res[p].secs > te)
			te = res[p].t0 + res[p].secs;
	}
	/*
	 * The senders together: average over the whole run (first start to
	 * last completion); peak, the best of its SLICES equal parts, counting
	 * every sender's timestamped messages in each. Never below average.
	 */
	secs = te - tb;
	peak = total / secs;
	for (i = 0; i < SLICES && !fail; i++) {
		double lo = tb + secs * (double)i / SLICES, hi = lo + secs / SLICES;
		uint64_t in = 0, k;

		for (p = 0; p < procs; p++)
			for (k = 0; k < res[p].msgs / res[p].mark; k++)
				if (marks[(size_t)p * MARKS + k] >= lo &&
				    marks[(size_t)p * MARKS + k] < hi)
					in += res[p].mark;
		if (in / (secs / SLICES) > peak)
			peak = in / (secs / SLICES);
	}
	/* The destination holds, in each cell, the tag of the last WRITE sent to it. */
	for (p = 0; p < procs && !fail; p++)
		for (i = n > CELLS ? n - CELLS : 0; i < n; i++) {
			uint64_t got =
			    *(uint64_t *)((uint8_t *)dst.addr +
			                  ((uint64_t)p * CELLS + i % CELLS) * size);

			if (got != tag(p, i) && bad++ < 5)
				fprintf(stderr,
				        "ssq_demo: sender %u WRITE %llu: found 0x%llx\n",
				        p, (unsigned long long)i,
				        (unsigned long long)got);
		}
	if (fail || bad) {
		fprintf(stderr, "ssq_demo: FAILED (%u cells wrong)\n", bad);
		return 1;
	}
	printf("data verified: every sender's last %u WRITEs are in place\n",
	       (unsigned)(n < CELLS ? n : CELLS));
	printf("-------------------------------------------------------------------------"
	       "--------"
	       "------\n");
	printf(" %-7s %-10s %-14s %-18s %-20s %-14s\n", "#procs", "#bytes", "#iterations",
	       "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]");
	printf(" %-7u %-10u %-14llu %-18.2f %-20.2f %-14.6f\n", procs, size,
	       (unsigned long long)total, peak * size / 1e6, total * size / secs / 1e6,
	       total / secs / 1e6);
	printf("-------------------------------------------------------------------------"
	       "--------"
	       "------\n");
	ssq_client_close(c);
	return 0;
}
