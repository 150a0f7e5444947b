/* SPDX-License-Identifier: MIT */
/*
 * engine.c - options, ssqd start-up, fan-out, results for the perftest-style
 * tools. Shape after perftest (linux-rdma/perftest): the same flags where
 * they apply, the same tables; -P, --mode and --json are ssq's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "engine.h"

static const char *const mode_names[] = { "lockfree", "spinlock", "qp-per-process",
	                                  "proxy" };

/* One table row, kept for --json. */
struct row {
	uint32_t size;
	uint64_t iters;
	double peak_mbs, avg_mbs, mpps;                 /* bandwidth */
	double tmin, tmax, ttyp, tavg, tstd, p99, p999; /* latency, usec */
};

double pt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int is_lat(const struct pt_opts *o)
{
	return o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT;
}

static void usage(FILE *f, const struct pt_opts *o)
{
	fprintf(
	    f,
	    " Usage:\n"
	    "   %s [options]    run against a running ssqd (-S), else start one\n"
	    "\n"
	    " Options:\n"
	    "  -a, --all                  Run sizes from 2 till 2^20\n"
	    "  -d, --ib-dev=<dev>         Use IB device <dev> (mlx5_N or emu; default:\n"
	    "                             the first mlx5 device, else the emulated one)\n"
	    "  -D, --duration=<sec>       Run for <sec> seconds instead of -n\n"
	    "  -h, --help                 Show this help screen\n"
	    "  -I, --inline_size=<size>   Max size of message to be sent in inline\n"
	    "                             (default 0)\n"
	    "  -l, --post_list=<n>        Post a list of <n> WQEs at once, one doorbell\n"
	    "                             (1..64, default 1)\n"
	    "  -n, --iters=<n>            Number of exchanges per process (default %u)\n"
	    "  -q, --qp=<n>               Num of QPs per process: 1 (see --mode)\n"
	    "  -Q, --cqe_poll=<n>         Generate a CQE every <n> messages\n"
	    "                             (CQ moderation, 1..%u, default 100)\n"
	    "  -t, --tx-depth=<dep>       Messages a sender keeps in flight\n"
	    "                             (1..%u, >= -Q, default %u)\n"
	    "  -s, --size=<size>          Size of message to exchange (1..%u, default "
	    "%u)\n"
	    "      --report_gbits         Report max/average BW in Gbit/sec\n"
	    "  -P, --procs=<n>            Sender processes sharing the queue (1..%u)\n"
	    "      --mode=<mode>          lockfree (ssq, default), spinlock (one\n"
	    "                             process-shared lock around the same queue),\n"
	    "                             qp-per-process (each its own QP, <= 16),\n"
	    "                             proxy (one posting process, SPSC rings)\n"
	    "  -S, --socket=<path>        A running ssqd's socket (default\n"
	    "                             $SSQ_SOCKET; neither: start ssqd)\n"
	    "      --json=<file>          Write the results as JSON\n",
	    o->tool, is_lat(o) ? 1000u : 5000u, PT_MAX_TX, PT_MAX_TX, PT_TX_DEPTH,
	    PT_MAX_SIZE, is_lat(o) ? 2u : 65536u, PT_MAX_PROCS);
}

static void bad_flag(const struct pt_opts *o, const char *fmt, const char *flag,
                     const char *val)
{
	fprintf(stderr, "%s: ", o->tool);
	fprintf(stderr, fmt, flag, val);
	fputc('\n', stderr);
	usage(stderr, o);
	exit(1);
}

static uint64_t num(const struct pt_opts *o, const char *flag, const char *s, uint64_t lo,
                    uint64_t hi)
{
	char *end, range[64];
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || *s == '-' || errno || v < lo || v > hi) {
		snprintf(range, sizeof(range), "%llu..%llu", (unsigned long long)lo,
		         (unsigned long long)hi);
		fprintf(stderr, "%s: %s '%s': want %s\n", o->tool, flag, s, range);
		usage(stderr, o);
		exit(1);
	}
	return v;
}

/* The flag getopt stopped at: -c for a short one, else the word itself. */
static const char *flag_name(char *buf, const char *word)
{
	if (optopt > 0 && optopt < 128 && !(word[0] == '-' && word[1] == '-')) {
		buf[1] = (char)optopt;
		return buf;
	}
	return word;
}

int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o)
{
	enum { OPT_GBITS = 256, OPT_MODE, OPT_JSON };
	static const struct option longs[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "post_list", required_argument, NULL, 'l' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qp", required_argument, NULL, 'q' },
		{ "cqe_poll", required_argument, NULL, 'Q' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "procs", required_argument, NULL, 'P' },
		{ "socket", required_argument, NULL, 'S' },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", required_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	int opt, i, q_given = 0;
	char flag[4] = "-?", val[16];

	memset(o, 0, sizeof(*o));
	o->test = test;
	o->tool = tool;
	o->mode = PT_LOCKFREE;
	o->size = is_lat(o) ? 2 : 65536;
	o->iters = is_lat(o) ? 1000 : 5000;
	o->qps = 1;
	o->post_list = 1;
	o->cq_mod = 100;
	o->tx_depth = PT_TX_DEPTH;
	o->procs = 1;
	o->socket = getenv("SSQ_SOCKET");
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ad:D:hI:l:n:q:Q:s:t:P:S:", longs,
	                          NULL)) != -1) {
		switch (opt) {
		case 'a':
			o->all_sizes = 1;
			break;
		case 'd':
			o->device = optarg;
			break;
		case 'D':
			o->duration = (double)num(o, "-D", optarg, 1, 3600);
			break;
		case 'h':
			usage(stdout, o);
			exit(0);
		case 'I':
			o->inline_size = (uint32_t)num(o, "-I", optarg, 0, 912);
			break;
		case 'l':
			o->post_list = (uint32_t)num(o, "-l", optarg, 1, 64);
			break;
		case 'n':
			o->iters = num(o, "-n", optarg, 1, 1000000000);
			break;
		case 'q':
			o->qps = (uint32_t)num(o, "-q", optarg, 1, 1);
			break;
		case 'Q':
			o->cq_mod = (uint32_t)num(o, "-Q", optarg, 1, PT_MAX_TX);
			q_given = 1;
			break;
		case 't':
			o->tx_depth = (uint32_t)num(o, "-t", optarg, 1, PT_MAX_TX);
			break;
		case 's':
			o->size = (uint32_t)num(o, "-s", optarg, 1, PT_MAX_SIZE);
			break;
		case 'P':
			o->procs = (uint32_t)num(o, "-P", optarg, 1, PT_MAX_PROCS);
			break;
		case 'S':
			o->socket = optarg;
			break;
		case OPT_GBITS:
			o->gbits = 1;
			break;
		case OPT_MODE:
			for (i = 0; i < 4 && strcmp(optarg, mode_names[i]); i++)
				;
			if (i == 4)
				bad_flag(
				    o,
				    "%s '%s': want lockfree, spinlock, qp-per-process or "
				    "proxy",
				    "--mode", optarg);
			o->mode = (enum pt_mode)i;
			break;
		case OPT_JSON:
			o->json = optarg;
			break;
		case ':':
			bad_flag(o, "%s%s: needs a value",
			         flag_name(flag, argv[optind - 1]), "");
			break;
		default:
			bad_flag(o, "unknown flag %s%s",
			         flag_name(flag, argv[optind - 1]), "");
		}
	}
	if (optind < argc)
		bad_flag(o, "unexpected argument %s%s (no server name: one host)",
		         argv[optind], "");
	if (o->mode == PT_QP_PER_PROCESS && o->procs > 16)
		bad_flag(o,
		         "%s%s with --mode qp-per-process: at most 16 queues (-P 1..16)",
		         "-P", "");
	if (!q_given && o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth; /* perftest lowers its default too */
	snprintf(val, sizeof(val), " %u", o->cq_mod);
	if (o->cq_mod > o->tx_depth)
		bad_flag(o, "%s%s: more than the tx depth (-t): it would never complete",
		         "-Q", val);
	snprintf(val, sizeof(val), " %u", o->post_list);
	if (o->post_list > o->tx_depth)
		bad_flag(o, "%s%s: a post list longer than the tx depth (-t)", "-l", val);
	if (o->test == PT_ATOMIC_BW)
		o->size = 8; /* perftest: atomics are 8 bytes, -s ignored */
	if (o->inline_size && (o->test == PT_READ_BW || o->test == PT_ATOMIC_BW))
		bad_flag(o, "%s%s: READ and atomics cannot be inline", "-I", "");
	if (o->iters > 10000000 && is_lat(o))
		bad_flag(o, "%s%s: latency tests keep every sample: at most 10000000",
		         "-n", "");
	return 0;
}

/* The first mlx5 device in /sys/class/infiniband, into @out; 0 if none. */
static int first_mlx5(char *out, size_t len)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)) != NULL)
		if (!strncmp(e->d_name, "mlx5", 4))
			found = snprintf(out, len, "%s", e->d_name) < (int)len;
	closedir(d);
	return found;
}

/* $SSQD, else ssqd in the build tree (the tool is <build>/bench/perftest/x). */
static void ssqd_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("SSQD")) {
		snprintf(out, len, "%s", getenv("SSQD"));
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, len, "%s/../../ssqd", self) < (int)len &&
			    access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, len, "ssqd"); /* $PATH */
}

/* Copy ssqd's log to stderr: why it did not start. */
static void show_log(const char *log)
{
	char buf[512];
	size_t n;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

/*
 * Start ssqd at @sock for @o, its output in @log, and connect. Returns the
 * client or NULL (ssqd stopped then).
 */
static struct ssq_client *ssqd_start(const struct pt_opts *o, const char *dev,
                                     const char *sock, const char *log, pid_t *pid)
{
	char path[PATH_MAX], queues[16], mib[16];
	struct ssq_client *c = NULL;
	uint64_t data = (uint64_t)(o->procs + 2) * (o->all_sizes ? PT_MAX_SIZE : o->size);
	int i, st;

	ssqd_path(path, sizeof(path));
	snprintf(queues, sizeof(queues), "%u",
	         o->mode == PT_QP_PER_PROCESS ? o->procs : 1);
	snprintf(mib, sizeof(mib), "%llu", (unsigned long long)(data >> 20) + 16);
	fflush(stdout); /* not twice: the child's copy of the buffer */
	*pid = fork();
	if (*pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execlp(path, path, "--device", dev, "--socket", sock, "--queues", queues,
		       "--data-mib", mib, "--sq-size", "4096",
		       strcmp(dev, "emu") ? "--hugepages=auto" : "--hugepages=off",
		       (char *)NULL);
		fprintf(stderr, "%s: cannot run %s: %s\n", o->tool, path,
		        strerror(errno));
		_exit(127);
	}
	for (i = 0; i < 400 && ssq_client_connect(sock, &c); i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			fprintf(stderr, "%s: ssqd (%s) exited at start:\n", o->tool,
			        path);
			show_log(log);
			*pid = 0;
			return NULL;
		}
		usleep(25 * 1000);
	}
	if (!c) {
		fprintf(stderr, "%s: ssqd at %s: %s\n", o->tool, sock,
		        ssq_client_strerror_last());
		show_log(log);
	}
	return c;
}

static void ssqd_stop(pid_t pid, const char *sock, const char *log)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	if (sock)
		unlink(sock);
	if (log)
		unlink(log);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void lat_stats(double *s, uint64_t n, struct row *r)
{
	double sum = 0, sq = 0;
	uint64_t i;

	qsort(s, n, sizeof(*s), cmp_double);
	for (i = 0; i < n; i++)
		sum += s[i];
	r->tavg = sum / n / 1e3;
	for (i = 0; i < n; i++)
		sq += (s[i] / 1e3 - r->tavg) * (s[i] / 1e3 - r->tavg);
	r->tstd = sqrt(sq / n);
	r->tmin = s[0] / 1e3;
	r->tmax = s[n - 1] / 1e3;
	r->ttyp = s[n / 2] / 1e3;
	r->p99 = s[(uint64_t)((n - 1) * 0.99)] / 1e3;
	r->p999 = s[(uint64_t)((n - 1) * 0.999)] / 1e3;
}

/* One size: fork the senders (and the proxy), start them together, collect. */
static int run_size(const struct pt_opts *o, struct pt_env *e, uint32_t size,
                    struct row *r)
{
	uint32_t nproc = o->procs + (o->mode == PT_PROXY), i;
	pid_t kids[PT_MAX_PROCS + 1];
	double t0 = 1e300, t1 = 0, peak = 0, start;
	uint64_t total = 0;
	int st, fail = 0;
	size_t lat_bytes = is_lat(o) ? (size_t)o->procs * o->iters * sizeof(double) : 0;

	e->sh = mmap(NULL, sizeof(*e->sh), PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	e->lat = lat_bytes ? mmap(NULL, lat_bytes, PROT_READ | PROT_WRITE,
	                          MAP_SHARED | MAP_ANONYMOUS, -1, 0)
	                   : NULL;
	if (e->sh == MAP_FAILED || e->lat == MAP_FAILED) {
		fprintf(stderr, "%s: mmap: %s\n", o->tool, strerror(errno));
		return 1;
	}
	pthread_spin_init(&e->sh->lock, PTHREAD_PROCESS_SHARED);
	if (e->check_data)
		memset(e->dst, 0, size);
	fflush(stdout);
	for (i = 0; i < nproc; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(i < o->procs ? pt_sender(o, e, i, size) : pt_proxy(o, e));
		if (kids[i] < 0) {
			fprintf(stderr, "%s: fork: %s\n", o->tool, strerror(errno));
			e->sh->abort = 1;
			nproc = i;
		}
	}
	start = pt_now();
	while (__atomic_load_n(&e->sh->ready, __ATOMIC_ACQUIRE) < nproc &&
	       !__atomic_load_n(&e->sh->abort, __ATOMIC_RELAXED) && pt_now() - start < 30)
		usleep(200);
	__atomic_store_n(&e->sh->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nproc; i++) {
		struct pt_result *res = &e->sh->res[i];

		waitpid(kids[i], &st, 0);
		if (res->rc || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s: %s %u failed: %s\n", o->tool,
			        i < o->procs ? "sender" : "proxy", i,
			        res->why[0]       ? res->why
			        : WIFSIGNALED(st) ? strsignal(WTERMSIG(st))
			        : e->sh->abort    ? "stopped: another process failed"
			                          : "no reason given");
			fail = 1;
			continue;
		}
		if (i >= o->procs)
			continue;
		total += res->msgs;
		t0 = res->t0 < t0 ? res->t0 : t0;
		t1 = res->t1 > t1 ? res->t1 : t1;
		peak += res->peak_mps;
	}
	/* Every sender's source holds 0x5a: the last WRITE left that. */
	for (i = 0; e->check_data && !fail && i < size; i++)
		if (e->dst[i] != 0x5a) {
			fprintf(
			    stderr,
			    "%s: destination byte %u is 0x%02x after the run, not 0x5a\n",
			    o->tool, i, e->dst[i]);
			fail = 1;
		}
	if (!fail) {
		memset(r, 0, sizeof(*r));
		r->size = size;
		r->iters = total;
		r->mpps = total / (t1 - t0) / 1e6;
		if (peak < r->mpps * 1e6)
			peak = r->mpps * 1e6; /* runs shorter than a window */
		r->peak_mbs = peak * size / 1e6;
		r->avg_mbs = r->mpps * size;
		if (lat_bytes)
			lat_stats(e->lat, (uint64_t)o->procs * o->iters, r);
	}
	munmap(e->sh, sizeof(*e->sh));
	if (lat_bytes)
		munmap(e->lat, lat_bytes);
	return fail;
}

static const char *dashes =
    "---------------------------------------------------------------------------------"
    "------";

static void print_header(const struct pt_opts *o)
{
	printf("%s\n", dashes);
	if (is_lat(o))
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
		       "percentile[usec] \n");
	else if (o->gbits)
		printf(
		    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
		    "MsgRate[Mpps]\n");
	else
		printf(
		    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
		    "MsgRate[Mpps]\n");
}

static void print_row(const struct pt_opts *o, const struct row *r)
{
	double k = o->gbits ? 8e6 / 1e9 : 1; /* MB/s to Gb/s */

	if (is_lat(o))
		printf(
		    " %-7u %-10llu %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
		    "%-7.2f\t\t%-7.2f   \t\t%-7.2f\n",
		    r->size, (unsigned long long)r->iters, r->tmin, r->tmax, r->ttyp,
		    r->tavg, r->tstd, r->p99, r->p999);
	else
		printf(" %-10u %-14llu %-18.2f %-20.2f %-.6f\n", r->size,
		       (unsigned long long)r->iters, r->peak_mbs * k, r->avg_mbs * k,
		       r->mpps);
	fflush(stdout);
}

static int write_json(const struct pt_opts *o, const char *dev, const char *emu_mode,
                      const struct row *rows, unsigned n)
{
	FILE *f = fopen(o->json, "w");
	unsigned i;

	if (!f) {
		fprintf(stderr, "%s: --json %s: %s\n", o->tool, o->json, strerror(errno));
		return 1;
	}
	fprintf(f, "[\n");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		fprintf(
		    f,
		    "  {\"tool\": \"%s\", \"mode\": \"%s\", \"procs\": %u, \"size\": %u, "
		    "\"iterations\": %llu, \"device\": \"%s\", \"emu_mode\": \"%s\", "
		    "\"post_list\": %u, \"cq_mod\": %u, \"tx_depth\": %u, "
		    "\"inline_size\": %u, "
		    "\"bw_peak_mb_s\": %.2f, \"bw_avg_mb_s\": %.2f, "
		    "\"msg_rate_mpps\": %.6f, \"ns_per_wqe\": %.2f",
		    o->tool, mode_names[o->mode], o->procs, r->size,
		    (unsigned long long)r->iters, dev, emu_mode, o->post_list, o->cq_mod,
		    o->tx_depth, o->inline_size, r->peak_mbs, r->avg_mbs, r->mpps,
		    r->mpps > 0 ? 1e3 / r->mpps : 0.0);
		if (is_lat(o))
			fprintf(
			    f,
			    ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": "
			    "%.3f, \"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, "
			    "\"p99_us\": %.3f, \"p999_us\": %.3f",
			    r->tmin, r->tmax, r->ttyp, r->tavg, r->tstd, r->p99, r->p999);
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "]\n");
	return fclose(f) ? 1 : 0;
}

int pt_main(const struct pt_opts *o)
{
	char dev[64] = "emu", sockbuf[108], log[128] = "";
	const char *sock = o->socket, *emu_mode = "";
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_queue_info qi[16];
	struct ssq_buf dst;
	struct pt_env e;
	struct row rows[24];
	uint32_t sizes[24], nsizes = 0, s;
	pid_t d = 0;
	int rc = 1, n;

	if (o->test == PT_SEND_BW || o->test == PT_SEND_LAT) {
		fprintf(stderr,
		        "%s: not yet supported: the loopback peer posts no receives "
		        "(SEND needs a receive WQE at the peer)\n",
		        o->tool);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (sock) {
		if (ssq_client_connect(sock, &c)) {
			fprintf(stderr, "%s: ssqd at %s: %s\n", o->tool, sock,
			        ssq_client_strerror_last());
			return 1;
		}
		snprintf(dev, sizeof(dev), "%s", ssq_client_device(c));
		printf("running on device %s (ssqd at %s)\n", dev, sock);
	} else {
		if (o->device)
			snprintf(dev, sizeof(dev), "%s", o->device);
		else if (!first_mlx5(dev, sizeof(dev)))
			snprintf(dev, sizeof(dev), "emu");
		if (!strcmp(dev, "emu"))
			printf("%s: running on the emulated mlx5 device\n",
			       o->device ? "-d emu"
			                 : "no mlx5 device in /sys/class/infiniband");
		else
			printf("running on %s\n", dev);
		snprintf(sockbuf, sizeof(sockbuf), "/tmp/ssq-perftest.%d.sock", getpid());
		snprintf(log, sizeof(log), "/tmp/ssq-perftest.%d.log", getpid());
		sock = sockbuf;
		c = ssqd_start(o, dev, sock, log, &d);
		if (!c)
			goto out;
	}
	if (!strcmp(dev, "emu"))
		emu_mode = getenv("SSQ_EMU_MODE") ? getenv("SSQ_EMU_MODE") : "full";
	n = ssq_client_list(c, qi, 16);
	if (o->mode == PT_QP_PER_PROCESS && n < (int)o->procs) {
		fprintf(
		    stderr,
		    "%s: --mode qp-per-process -P %u needs queues q0..q%u; ssqd has %d\n",
		    o->tool, o->procs, o->procs - 1, n);
		goto out;
	}
	if (ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, o->all_sizes ? PT_MAX_SIZE : (o->size < 8 ? 8 : o->size),
	                  &dst)) {
		fprintf(stderr, "%s: %s\n", o->tool, ssq_client_error(c));
		goto out;
	}
	if (o->inline_size > ssq_queue_sq(q)->max_inline) {
		fprintf(stderr, "%s: -I %u: the QP takes at most %u inline bytes\n",
		        o->tool, o->inline_size, ssq_queue_sq(q)->max_inline);
		usage(stderr, o);
		goto out;
	}
	if (o->all_sizes && o->test != PT_ATOMIC_BW)
		for (s = 2; s <= PT_MAX_SIZE; s *= 2)
			sizes[nsizes++] = s;
	else
		sizes[nsizes++] = o->size;
	e.socket = sock;
	e.dst_off = dst.off;
	e.dst_len = dst.len;
	e.dst = dst.addr;
	/* The emulated device's sink mode checks WQEs and moves nothing. */
	e.check_data = (o->test == PT_WRITE_BW || o->test == PT_WRITE_LAT) &&
	               strcmp(emu_mode, "sink") != 0;
	printf("%s: %s, %u sender process%s, mode %s%s%s, %u QP%s\n", o->tool,
	       o->test == PT_READ_BW     ? "RDMA READ"
	       : o->test == PT_ATOMIC_BW ? "ATOMIC fetch-and-add"
	                                 : "RDMA WRITE",
	       o->procs, o->procs > 1 ? "es" : "", mode_names[o->mode],
	       o->mode == PT_PROXY ? " (+1 proxy process)" : "",
	       *emu_mode ? (strcmp(emu_mode, "sink") ? "" : ", device in sink mode") : "",
	       o->mode == PT_QP_PER_PROCESS ? o->procs : 1,
	       o->mode == PT_QP_PER_PROCESS && o->procs > 1 ? "s" : "");
	print_header(o);
	for (s = 0; s < nsizes; s++) {
		if (run_size(o, &e, sizes[s], &rows[s]))
			goto out;
		print_row(o, &rows[s]);
	}
	printf("%s\n", dashes);
	rc = o->json ? write_json(o, dev, emu_mode, rows, nsizes) : 0;
out:
	if (c)
		ssq_client_close(c);
	ssqd_stop(d, d ? sock : NULL, o->socket ? NULL : log);
	return rc;
}
