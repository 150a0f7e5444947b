/* SPDX-License-Identifier: MIT */
/*
 * ssq_line_ns - what one cache line costs to move between two cores of this
 * machine: two threads, pinned to the first two CPUs this process may use,
 * hand a counter back and forth; prints the one-way time in ns.
 *
 * scripts/bench.sh runs it before every benchmark run and keeps the figure
 * with the run: single-message posting is bound by such transfers (the
 * WQE, doorbell record and UAR lines go from the sender's core to the
 * device thread's and back), and on a shared virtual machine the figure
 * moves several fold as the host places the two vCPUs (50 ns to 2 us seen
 * on the 2-core machine the README's tables come from).
 *
 *	ssq_line_ns [round-trips]     (default 100000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bounce {
	uint64_t turn; /* odd: the pong side's turn; even: the ping side's */
	uint8_t pad[56];
	uint64_t trips;
	int cpu;
	int ready; /* 1: the pong side is pinned and waiting; -1: it could not pin */
};

static struct bounce b __attribute__((aligned(64)));

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *pong(void *arg)
{
	uint64_t i;

	(void)arg;
	if (pin(b.cpu)) {
		__atomic_store_n(&b.ready, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&b.ready, 1, __ATOMIC_RELEASE);
	for (i = 1; i <= b.trips; i++) {
		while (__atomic_load_n(&b.turn, __ATOMIC_ACQUIRE) != 2 * i - 1)
			;
		__atomic_store_n(&b.turn, 2 * i, __ATOMIC_RELEASE);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	cpu_set_t allowed;
	int cpus[2], n = 0, c, rc;
	struct timespec t0, t1;
	pthread_t t;
	uint64_t i;
	char *end;

	b.trips = 100000;
	if (argc > 2) {
		fprintf(stderr, "usage: ssq_line_ns [round-trips 1..100000000]\n");
		return 2;
	}
	if (argc == 2) {
		errno = 0;
		b.trips = strtoull(argv[1], &end, 10);
		if (*end || !*argv[1] || argv[1][0] == '-' || errno || b.trips < 1 ||
		    b.trips > 100000000) {
			fprintf(stderr,
			        "ssq_line_ns: round-trips '%s': want 1..100000000\n"
			        "usage: ssq_line_ns [round-trips 1..100000000]\n",
			        argv[1]);
			return 2;
		}
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		perror("ssq_line_ns: sched_getaffinity");
		return 1;
	}
	for (c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n < 2) {
		fprintf(stderr, "ssq_line_ns: needs two CPUs, this process may use %d\n",
		        n);
		return 1;
	}
	b.cpu = cpus[1];
	rc = pin(cpus[0]);
	if (!rc)
		rc = pthread_create(&t, NULL, pong, NULL);
	if (rc) {
		fprintf(stderr, "ssq_line_ns: %s\n", strerror(rc));
		return 1;
	}
	while (!(rc = __atomic_load_n(&b.ready, __ATOMIC_ACQUIRE)))
		;
	if (rc < 0) {
		fprintf(stderr, "ssq_line_ns: cannot pin a thread to CPU %d\n", b.cpu);
		pthread_join(t, NULL);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i <= b.trips; i++) {
		__atomic_store_n(&b.turn, 2 * i - 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b.turn, __ATOMIC_ACQUIRE) != 2 * i)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	printf("%.1f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	                  (double)(t1.tv_nsec - t0.tv_nsec)) /
	                     (double)b.trips / 2);
	return 0;
}
