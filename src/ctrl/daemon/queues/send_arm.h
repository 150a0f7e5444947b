/* SPDX-License-Identifier: MIT */
/*
 * Waking ssq_wait's sleepers where the device announces CQEs only on an
 * armed CQ (a ConnectX; the emulated device with SSQ_EMU_CQ_EVENTS=0):
 * two threads of ssqd, one that arms a queue's send CQ when a sleeper asks
 * (the arena header's tx_arm_seq), one that takes the events and wakes the
 * queue's sleepers. Where the device's own events reach ssqd (the backend's
 * cq_event) neither runs.
 */
#ifndef SSQ_CTRL_DAEMON_SEND_ARM_H
#define SSQ_CTRL_DAEMON_SEND_ARM_H

#include <pthread.h>
#include <stdint.h>

struct ssqd;

/* Per queue, the arm thread's and event thread's (under ssqd_send_arm.lock). */
struct ssqd_send_arm_q {
	int on;            /* this queue's sleepers ask for arms (ctl->tx_arm) */
	int armed;         /* its send CQ is armed, the event not taken yet */
	uint32_t arm_ci;   /* the routers' consumer index when it was armed */
	int fired;         /* an event came since the start, */
	uint32_t fired_ci; /* for an arm made at this consumer index, */
	uint32_t arm_at;   /* the index the CQ was armed at */
	int fired_empty;   /* and no CQE was there at the event */
	uint64_t arms;     /* arms made, events taken (ctrl_wait_arm reads */
	uint64_t events;   /* them) */
};

struct ssqd_send_arm {
	pthread_t arm_thread, event_thread;
	int running;
	int stop;       /* atomic */
	int stop_efd;   /* wakes the event thread out of its poll at stop */
	uint64_t blind; /* the event thread's wakes that brought no event */
	pthread_mutex_t lock;
};

/*
 * Start the two threads if the backend arms send CQs and some queue's
 * device gives no events of its own (ssqd_queue_make set q->tx_native);
 * set those queues' ctl->tx_arm to WANTED. 0 or -errno.
 */
int ssqd_send_arm_start(struct ssqd *d);

/*
 * Put queue @qi's ctl->tx_arm back to what ssqd knows (WANTED or SET) if
 * a client wrote another value: with NONE or a stale SET there, its
 * sleepers would never ask again. Never waits for the threads' lock (the
 * serve loop calls it): busy, it leaves the look to the next call.
 */
void ssqd_send_arm_restore(struct ssqd *d, unsigned qi);

/* Stop them (before the device closes: they arm and read its CQs' events). */
void ssqd_send_arm_stop(struct ssqd *d);

#endif
