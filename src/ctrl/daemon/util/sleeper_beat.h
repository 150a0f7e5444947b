/* SPDX-License-Identifier: MIT */
/*
 * Whether a client asleep in ssq_wait or ssq_recv_wait still lives, as
 * ssqd judges it from client memory: each sleeper moves a beat counter
 * before every slice of its sleep (ctl->wait_beat; a receive log's beat),
 * and a count of sleepers whose beat has stood for SSQD_WAIT_BEAT_NS is
 * one left behind - its sleeper died asleep, or the count was scribbled -
 * for which ssqd neither spins nor makes a system call. A live sleeper
 * descheduled that long loses nothing: it finds what it waits for at the
 * end of its slice.
 */
#ifndef SSQ_CTRL_SLEEPER_BEAT_H
#define SSQ_CTRL_SLEEPER_BEAT_H

#include <stdint.h>
#include <ssq/queue.h>

/*
 * Far more than a slice: a loaded machine keeps a woken sleeper from a
 * core for milliseconds.
 */
#define SSQD_WAIT_BEAT_NS (50 * SSQ_WAIT_SLICE_NS)

/* A beat as one watcher (one thread of ssqd) last saw it move, and when. */
struct ssqd_beat {
	uint32_t seen;
	uint64_t ns;
};

/* 1 if @beat moved since @b's last look, or within SSQD_WAIT_BEAT_NS of @now. */
static inline int ssqd_beat_live(struct ssqd_beat *b, uint32_t beat, uint64_t now)
{
	if (beat != b->seen) {
		b->seen = beat;
		b->ns = now;
	}
	return now - b->ns < SSQD_WAIT_BEAT_NS;
}

#endif
