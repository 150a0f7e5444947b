/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a receive asleep (ssq_recv_wait). The futex word is the
 * log's wake_seq, in the arena every process of the queue maps, so the
 * futex is a shared one (no FUTEX_PRIVATE_FLAG): ssqd's poller, another
 * process, wakes it after logging (wake_readers in recv_pool.c). A sleeper
 * sleeps at most SSQ_WAIT_SLICE_NS at a time and looks at the log between
 * slices, so a wake that was missed costs at most a slice, and a sleeper
 * learns of ssqd's end within a slice of the client's watcher noticing it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "ctrl/client/client_pvt.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Look at the log for up to SPIN_NS before going to sleep: a message due
 * within that (a reply to what this process just sent) then costs no
 * system call and no wake-up, which take several microseconds, and a
 * reader that has to sleep after all has spent less than one of them.
 * Short, because on a small machine the spinning reader holds a core the
 * device (the emulated one's thread) may need to deliver the message.
 */
#define SPIN_NS 2000

/* 1 once message @k arrived within SPIN_NS (or @deadline), else 0. */
static int spin_first(const struct shm_recv_log *log, uint64_t k, uint64_t now,
                      uint64_t deadline)
{
	uint64_t end = deadline - now < SPIN_NS ? deadline : now + SPIN_NS;

	do {
		/* R1 (pairs with W3, recv_pool.c): record k is complete. */
		if (__atomic_load_n(&log->arrived, __ATOMIC_ACQUIRE) > k)
			return 1;
		ssq_cpu_relax();
	} while (now_ns() < end);
	return 0;
}

/*
 * Message @k arrived (0), the time ran out, or ssqd is gone; @log's waiter
 * count already holds us.
 */
static int wait_counted(struct ssq_queue *q, struct shm_recv_log *log, uint64_t k,
                        uint64_t now, uint64_t deadline)
{
	struct timespec slice;
	uint32_t seq;
	uint64_t n;

	for (;;) {
		/*
		 * The sequence before the look: a poller that logs after our
		 * look bumps it, and the futex then returns at once (EAGAIN)
		 * instead of sleeping. R5 (pairs with W5, recv_pool.c): our
		 * count was stored before this look, so such a poller sees it.
		 * Seeing the bump (acquire) also makes this look see what the
		 * poller logged before it.
		 */
		seq = __atomic_load_n(&log->wake_seq, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&log->arrived, __ATOMIC_SEQ_CST) > k)
			return 0;
		if (__atomic_load_n(&q->prod.gone, __ATOMIC_RELAXED))
			return -ENOTCONN;
		if (now >= deadline)
			return -ETIMEDOUT;
		__atomic_fetch_add(&log->beat, 1, __ATOMIC_RELAXED); /* keep it polling */
		n = deadline - now < SSQ_WAIT_SLICE_NS ? deadline - now
		                                       : SSQ_WAIT_SLICE_NS;
		slice.tv_sec = 0;
		slice.tv_nsec = (long)n;
		syscall(SYS_futex, &log->wake_seq, FUTEX_WAIT, seq, &slice, NULL, 0);
		now = now_ns();
	}
}

int ssq_recv_wait(struct ssq_queue *q, uint64_t k, int64_t timeout_ns)
{
	struct shm_recv_log *log;
	uint64_t deadline, now;
	int rc;

	if (!q || timeout_ns < 0)
		return -EINVAL;
	if (!q->rlog)
		return -ENOTSUP;
	/* The sleepers' line is the one part of the log clients write. */
	log = (struct shm_recv_log *)q->rlog;
	/* R1 (pairs with W3, recv_pool.c): record k is complete. */
	if (__atomic_load_n(&log->arrived, __ATOMIC_ACQUIRE) > k)
		return 0;
	now = now_ns();
	deadline = now + (uint64_t)timeout_ns;
	if (deadline < now)
		deadline = UINT64_MAX;
	if (spin_first(log, k, now, deadline))
		return 0;
	now = now_ns();
	/*
	 * Beating and counted from here: the poller stops napping, and the
	 * device's events wake us. The beat first: whoever sees the count
	 * (its add releases) sees the beat moved.
	 */
	__atomic_fetch_add(&log->beat, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&log->waiters, 1, __ATOMIC_SEQ_CST);
	rc = wait_counted(q, log, k, now, deadline);
	__atomic_fetch_sub(&log->waiters, 1, __ATOMIC_RELAXED);
	return rc;
}
