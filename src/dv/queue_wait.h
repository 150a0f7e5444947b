/* SPDX-License-Identifier: MIT */
/*
 * What a producer about to sleep on its queue's wake_seq does besides
 * counting itself (ssq__sleeper_in): ask ssqd to arm the send CQ where the
 * device announces CQEs only when armed. Private to libssq: ssq_wait
 * (queue_wait.c) and the wait fd's thread (src/ctrl/client) call it.
 */
#ifndef DV_QUEUE_WAIT_H
#define DV_QUEUE_WAIT_H

#include <ssq/queue.h>

/*
 * After ssq__sleeper_in (its count and the R6 fence), before the last look
 * at the CQ: if the queue's send CQ is not armed (ctl->tx_arm WANTED), bump
 * the arena header's tx_arm_seq and wake ssqd's arm thread on it.
 *
 * A1 (pairs with A2 in ssqd's send_arm.c): the count was added (seq_cst)
 * and fenced before this load of tx_arm; ssqd stores WANTED (seq_cst) and
 * fences before it loads the count to wake. One of the two sees the other:
 * the sleeper asks for an arm, or ssqd, taking the event that disarmed the
 * CQ, wakes it.
 */
void dv_sleeper_ask_arm(struct ssq_producer *p);

#endif
