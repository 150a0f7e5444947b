/* SPDX-License-Identifier: MIT */
/*
 * The device's progress: emu_process(), one bounded step over all QPs
 * that tests and benchmarks call directly, and the device thread that
 * calls the same step in a polling loop (the daemon hosts it).
 */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "emu/emu_pvt.h"

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
#error "ssq emu: no cpu_relax for this architecture"
#endif
}

/* A pass that finds this many WQEs is behind the producers: no wait after it. */
#define STREAM_BATCH 16u

/*
 * The wait of a streaming device (SSQ_EMU_STREAM_POLL_NS_DEFAULT in
 * <ssq/emu.h>): spin without touching any line a producer writes. A spin,
 * not a sleep: the shortest sleep the kernel gives is tens of microseconds.
 */
static void stream_wait(uint32_t ns)
{
	uint64_t end = emu_now_ns() + ns;

	while (emu_now_ns() < end)
		cpu_relax();
}

/* One step; lock held. QPs are visited round-robin from dev->rr so a busy
 * low-numbered QP cannot starve the others under a small budget. */
static unsigned process_locked(struct emu_dev *dev, unsigned budget)
{
	unsigned n = 0, k, nqp = dev->nqp, start, rx;

	dev->pass++;
	if (ssq_unlikely(dev->fault.stall) || !nqp)
		return 0;
	/* Packets from the wire first: ACKs free WQEs, requests complete.
	 * They count as work done, not against the WQE budget. */
	rx = emu_wire_rx(dev, budget);
	start = dev->rr < nqp ? dev->rr : 0;
	for (k = 0; k < nqp && n < budget; k++) {
		unsigned i = start + k < nqp ? start + k : start + k - nqp;
		struct emu_qp *qp = dev->qps[i];

		if (!qp)
			continue;
		/* A peer in another process: the wire requester. */
		if (qp->state == IBV_QPS_RTS)
			n += ssq_unlikely(qp->wire != NULL)
			         ? emu_wire_sq_run(qp, budget - n)
			         : emu_sq_run(qp, budget - n);
		if (ssq_unlikely(qp->state == IBV_QPS_ERR) && n < budget)
			n += emu_qp_flush(qp, budget - n);
	}
	dev->rr = start + 1 < nqp ? start + 1 : 0;
	emu_wire_tx(dev);
	if (ssq_unlikely(dev->trace != NULL) && n)
		fflush(dev->trace);
	return n + rx;
}

int emu_process(struct emu_dev *dev, unsigned budget)
{
	struct emu_cq_event ev[SSQ_EMU_MAX_CQ];
	unsigned nev;
	int n;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->thread_running) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	n = (int)process_locked(dev, budget > INT32_MAX ? INT32_MAX : budget);
	nev = emu_cq_events_take(dev, ev);
	pthread_mutex_unlock(&dev->lock);
	emu_cq_events_fire(dev, ev, nev);
	return n;
}

/*
 * Naps of an idle device: 50 us at first, growing to 1 ms once idle 20 ms,
 * and to the idle nap (NAP_DOZE_NS unless emu_set_idle_nap raised it) once
 * idle about a second.
 */
#define NAP_FIRST_NS    50000L
#define NAP_MAX_NS      1000000L
#define NAP_DOZE_NS     10000000L
#define NAPS_SHORT      400u
#define NAPS_DOZE       (NAPS_SHORT + 1000u)
#define IDLE_NAP_MAX_NS 1000000000L

int emu_set_idle_nap(struct emu_dev *dev, long max_ns)
{
	uint64_t one = 1;
	long was;

	if (!dev || (max_ns && (max_ns < NAP_DOZE_NS || max_ns > IDLE_NAP_MAX_NS)))
		return -EINVAL;
	was = __atomic_exchange_n(&dev->idle_nap_ns, max_ns, __ATOMIC_RELAXED);
	/*
	 * Shortened: whoever said no doorbell would come now expects one. The
	 * thread's nap ends at once and it polls afresh, so that doorbell
	 * waits no longer than after any short pause.
	 */
	if ((max_ns ? max_ns : NAP_DOZE_NS) < (was ? was : NAP_DOZE_NS) &&
	    write(dev->kick_fd, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

/*
 * Sleep up to @ns, or less if a packet comes on the wire (@wire_fd >= 0)
 * or emu_set_idle_nap shortened the nap. 1: it did that.
 */
static int nap(struct emu_dev *dev, int wire_fd, long ns)
{
	struct pollfd pfd[2] = { { .fd = dev->kick_fd, .events = POLLIN },
		                 { .fd = wire_fd, .events = POLLIN } };
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	uint64_t v;

	/* poll skips a negative fd: a device without a wire waits on the kick. */
	int rc = ppoll(pfd, 2, &ts, NULL);

	/*
	 * Refused (EINVAL: 2 entries over an RLIMIT_NOFILE lowered under the
	 * process, do_sys_poll in fs/select.c): the nap is slept all the same,
	 * or the thread spins.
	 */
	if (rc < 0 && errno == EINVAL)
		nanosleep(&ts, NULL);
	if (rc <= 0 || !(pfd[0].revents & POLLIN))
		return 0;
	return read(dev->kick_fd, &v, sizeof(v)) == sizeof(v);
}

/*
 * Busy-poll while work comes (pausing stream_poll_ns between looks while
 * it streams), relax the CPU (yielding it now and then) for
 * a while when it stops, then sleep briefly: a doorbell waits at most ~50 us on a
 * device idle for less than 20 ms, and an idle device does not burn a core the
 * producers need. Idle longer, the naps double up to 1 ms, and after about a
 * second grow to 10 ms, so that a device nobody uses costs well under 1 % of
 * a core (20 000 looks a second at 50 us cost ~13 %) and several ssqd fit on
 * a small machine; the first doorbell after a long pause waits at most that
 * nap, as a NIC's first packet after idle pays for its power states. A host
 * that knows no doorbell can come (ssqd while no client has a queue
 * attached: a client rings only after its attach is answered) lets the
 * naps grow further with emu_set_idle_nap, and shortens them again before
 * one can come, which wakes the thread at once: that doorbell then pays
 * nothing for the long naps. With a wire the sleep is also a wait on its
 * socket, so a packet from the peer (a request, an ACK) wakes the device at
 * once instead of after the nap: a doorbell is a memory write and can only
 * be polled for, a packet can be waited on.
 */
static void *device_thread(void *arg)
{
	struct emu_dev *dev = arg;
	struct emu_cq_event ev[SSQ_EMU_MAX_CQ]; /* 24 KiB of the thread's stack */
	unsigned idle = 0, streak = 0, naps = 0, nev;
	long nap_ns = NAP_FIRST_NS;

	while (!__atomic_load_n(&dev->stop, __ATOMIC_ACQUIRE)) {
		unsigned n;
		int fd, waiting = 0;

		pthread_mutex_lock(&dev->lock);
		n = process_locked(dev, 1024);
		fd = emu_wire_fd(dev); /* the wire closes only after this thread stops */
		if (!n)
			waiting = emu_wire_waiting(dev);
		nev = emu_cq_events_take(dev, ev);
		pthread_mutex_unlock(&dev->lock);
		emu_cq_events_fire(dev, ev, nev);
		if (n) {
			idle = 0;
			naps = 0;
			nap_ns = NAP_FIRST_NS;
			/* The second busy pass in a row, and not a backlog: a stream. */
			if (streak++ && n < STREAM_BATCH && dev->stream_poll_ns)
				stream_wait(dev->stream_poll_ns);
			continue;
		}
		streak = 0;
		if (++idle < 2048) {
			/*
			 * Poll on, but let a runnable thread have the core now
			 * and then: on a machine with fewer cores than busy
			 * threads the one this device waits for (a sender, a
			 * proxy) may be queued behind it, and a NIC never takes
			 * a host core from the processes it serves.
			 */
			if ((idle & 63) == 0)
				sched_yield();
			else
				cpu_relax();
		} else {
			/* The wire's own timers keep the naps they had. */
			long longest = waiting ? 0
			                       : __atomic_load_n(&dev->idle_nap_ns,
			                                         __ATOMIC_RELAXED);

			if (++naps > NAPS_DOZE)
				nap_ns = longest ? longest : NAP_DOZE_NS;
			else if (naps > NAPS_SHORT && nap_ns < NAP_MAX_NS)
				nap_ns =
				    nap_ns * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap_ns * 2;
			if (nap(dev, fd, nap_ns)) {
				/* A doorbell is due: look as after fresh work. */
				idle = 0;
				naps = 0;
				nap_ns = NAP_FIRST_NS;
			}
		}
	}
	return NULL;
}

int emu_start(struct emu_dev *dev)
{
	int ret;

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->thread_running) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	__atomic_store_n(&dev->stop, 0, __ATOMIC_RELAXED);
	ret = pthread_create(&dev->thread, NULL, device_thread, dev);
	if (!ret)
		dev->thread_running = 1;
	pthread_mutex_unlock(&dev->lock);
	return -ret;
}

int emu_stop(struct emu_dev *dev)
{
	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (!dev->thread_running) {
		pthread_mutex_unlock(&dev->lock);
		return -EINVAL;
	}
	pthread_mutex_unlock(&dev->lock);
	/* R1: pairs with the thread's acquire load of stop. */
	__atomic_store_n(&dev->stop, 1, __ATOMIC_RELEASE);
	pthread_join(dev->thread, NULL);
	pthread_mutex_lock(&dev->lock);
	dev->thread_running = 0;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}
