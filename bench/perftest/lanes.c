/* SPDX-License-Identifier: MIT */
/*
 * lanes.c - a sender's lanes: every mode posts through the same builder,
 * pt_post_batch(): reserve the WQEBBs of n requests with one fetch-add,
 * build and publish each, one submit. The modes differ only in who calls
 * it and around what (run.c says which).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "lanes.h"

/*
 * Reserve, build, publish and submit @n requests on @p. Returns 0,
 * -EAGAIN (no room: nothing reserved; poll and retry), -EIO or -EINVAL.
 */
int pt_post_batch(struct ssq_producer *p, const struct pt_req *r, unsigned n)
{
	struct ssq_sq *sq = ssq_producer_sq(p);
	unsigned i, total = 0;
	uint64_t pos;
	int rc;

	for (i = 0; i < n; i++)
		total += r[i].wqebbs;
	rc = ssq_reserve(p, total, &pos);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		unsigned fl = ssq_wqe_flags(p, pos, r[i].wqebbs, r[i].flags);

		if (r[i].inl) {
			struct ibv_sge sge = { .addr = r[i].laddr,
				               .length = r[i].len,
				               .lkey = r[i].lkey };
			struct ssq_wr wr = { .opcode = r[i].opcode,
				             .flags = (uint8_t)fl,
				             .inline_data = 1,
				             .num_sge = 1,
				             .sg_list = &sge,
				             .raddr = r[i].raddr,
				             .rkey = r[i].rkey };

			/* laddr is a local virtual address here: inline copies it. */
			rc = ssq_wqe_build(sq, (uint32_t)pos, &wr);
		} else if (r[i].opcode == MLX5_OPCODE_SEND) {
			rc = ssq_prep_send(sq, (uint32_t)pos, MLX5_OPCODE_SEND,
			                   r[i].laddr, r[i].lkey, r[i].len, 0, fl);
		} else if (r[i].opcode == MLX5_OPCODE_ATOMIC_FA ||
		           r[i].opcode == MLX5_OPCODE_ATOMIC_CS) {
			/* FA adds 1; CS (-A CMP_AND_SWAP) swaps 0 for 0: the word stays.
			 */
			rc = ssq_prep_atomic(sq, (uint32_t)pos, r[i].opcode, r[i].laddr,
			                     r[i].lkey, r[i].raddr, r[i].rkey,
			                     r[i].opcode == MLX5_OPCODE_ATOMIC_FA, 0, fl);
		} else if (r[i].opcode == MLX5_OPCODE_RDMA_READ) {
			rc = ssq_prep_rdma_read(sq, (uint32_t)pos, r[i].laddr, r[i].lkey,
			                        r[i].len, r[i].raddr, r[i].rkey, fl);
		} else {
			rc = ssq_prep_rdma_write(sq, (uint32_t)pos, r[i].laddr, r[i].lkey,
			                         r[i].len, r[i].raddr, r[i].rkey, fl);
		}
		if (rc != r[i].wqebbs)
			/* Sizes and inline limits are checked before the run. */
			abort();
		(void)ssq_publish(p, pos, r[i].wqebbs, r[i].wr_id, r[i].flags);
		pos += r[i].wqebbs;
	}
	ssq_submit(p);
	return 0;
}

/* Completions of @l: the newest signaled wr_id + 1 in l->completed. 0 or -1. */
static int reap(struct pt_lane *l, char *why, size_t len)
{
	struct ssq_completion comp[32];
	int n = ssq_poll(l->prod, comp, 32), k;

	for (k = 0; k < n; k++) {
		if (comp[k].status != IBV_WC_SUCCESS) {
			snprintf(why, len, "request %llu: %s (syndrome 0x%x)",
			         (unsigned long long)comp[k].wr_id,
			         ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			         comp[k].syndrome);
			return -1;
		}
		l->completed = comp[k].wr_id + 1;
	}
	return 0;
}

/* Take a sample of the completion count if it is due (full: halve them). */
void pt_sample(struct pt_samples *s, uint64_t m, double t)
{
	uint32_t i;

	if (s->n == PT_SAMPLES) {
		for (i = 0; i < PT_SAMPLES / 2; i++) {
			s->t[i] = s->t[2 * i];
			s->m[i] = s->m[2 * i];
		}
		s->n = PT_SAMPLES / 2;
		s->every *= 2;
	}
	s->t[s->n] = t;
	s->m[s->n++] = m;
	s->next = m + s->every;
}

/* Collect completions on every lane of @pt. Returns 0 or -1 (why in pt->why). */
int pt_port_poll(struct pt_port *pt)
{
	uint64_t total = 0;
	uint32_t i;
	int rc = 0;

	for (i = 0; i < pt->nlanes && !rc; i++) {
		struct pt_lane *l = &pt->lane[i];

		switch (pt->mode) {
		case PT_SPINLOCK:
			pthread_spin_lock(l->lock);
			rc = reap(l, pt->why, pt->why_len);
			pthread_spin_unlock(l->lock);
			break;
		case PT_PROXY:
			/* A1: pairs with the proxy's release of done (R1). */
			l->completed =
			    __atomic_load_n(&pt->ring->done[i], __ATOMIC_ACQUIRE);
			break;
		default:
			rc = reap(l, pt->why, pt->why_len);
		}
		total += l->completed;
	}
	pt->completed = total;
	if (pt->live)
		__atomic_store_n(pt->live, total, __ATOMIC_RELAXED);
	if (pt->smp && total >= pt->smp->next)
		pt_sample(pt->smp, total, pt_now());
	return rc ? -1 : 0;
}

/*
 * --mode combine: one single-WQEBB request through <ssq/combine.h> (a
 * READ is not combined: posted as post_batch would).
 */
static int post_combined(struct ssq_producer *p, const struct pt_req *r)
{
	switch (r->opcode) {
	case MLX5_OPCODE_SEND:
		return ssq_post_send_combined(p, MLX5_OPCODE_SEND, r->laddr, r->lkey,
		                              r->len, 0, r->wr_id, r->flags);
	case MLX5_OPCODE_ATOMIC_FA:
		return ssq_post_fetch_add_combined(p, r->laddr, r->lkey, r->raddr,
		                                   r->rkey, 1, r->wr_id, r->flags);
	case MLX5_OPCODE_RDMA_WRITE:
		return ssq_post_write_combined(p, r->laddr, r->lkey, r->len, r->raddr,
		                               r->rkey, r->wr_id, r->flags);
	default:
		/* Direct: after our last request handed over, not before it. */
		return ssq_combine_flush(p) ?: pt_post_batch(p, r, 1);
	}
}

/* Hand @n requests to lane @li. Returns 0, -EAGAIN (poll and retry), -errno. */
static int port_post(struct pt_port *pt, uint32_t li, const struct pt_req *r, unsigned n)
{
	struct pt_ring *ring = pt->ring;
	struct pt_lane *l = &pt->lane[li];
	uint64_t h;
	unsigned i;
	int rc;

	switch (pt->mode) {
	case PT_SPINLOCK:
		pthread_spin_lock(l->lock);
		rc = pt_post_batch(l->prod, r, n);
		pthread_spin_unlock(l->lock);
		return rc;
	case PT_PROXY:
		h = ring->head;
		/* A2: pairs with the proxy's release of tail (R2): slots free. */
		if (h + n - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) > PT_RING)
			return -EAGAIN;
		for (i = 0; i < n; i++) {
			ring->req[(h + i) % PT_RING] = r[i];
			ring->req[(h + i) % PT_RING].lane = (uint8_t)li;
		}
		/* R3: records before head; pairs with the proxy's acquire (A3). */
		__atomic_store_n(&ring->head, h + n, __ATOMIC_RELEASE);
		return 0;
	case PT_COMBINE:
		if (n == 1 && !r->inl && r->wqebbs == 1)
			return post_combined(l->prod, r);
		return ssq_combine_flush(l->prod) ?: pt_post_batch(l->prod, r, n);
	default:
		return pt_post_batch(l->prod, r, n);
	}
}

/*
 * A waiting process (window full, ring full, nothing to drain) spins a
 * little, then yields: with more busy processes than cores (the point of
 * -P 4 on 2 cores) a pure spinner would hold its core for a whole time slice
 * while the process it waits for cannot run. Every mode waits this way.
 */
void pt_backoff(unsigned *spins)
{
	if (++*spins < 64)
		ssq_cpu_relax();
	else
		sched_yield();
}

/*
 * Wait for a completion of lane @ln: with -e asleep in ssq_wait (woken by
 * whoever routes the queue's CQ, or on the emulated device by the device
 * as the CQE lands), for at most WAIT_NS so that the caller's stall and
 * abort checks still run; else pt_backoff().
 */
#define WAIT_NS (10 * SSQ_WAIT_SLICE_NS)
void pt_idle_wait(struct pt_port *pt, struct pt_lane *ln, unsigned *spins)
{
	uint32_t i;

	/*
	 * --mode combine: what we wait for may still be handed over, its
	 * combiner gone or done with its passes (<ssq/combine.h>): post it.
	 */
	if (pt->mode == PT_COMBINE)
		for (i = 0; i < pt->nlanes; i++)
			(void)ssq_combine_flush(pt->lane[i].prod);
	if (!pt->events) {
		pt_backoff(spins);
		return;
	}
	++*spins;
	(void)ssq_wait(ln->prod, 1, WAIT_NS);
}

/* A lane with completions still to come (the first), else NULL. */
struct pt_lane *pt_owed_lane(struct pt_port *pt)
{
	uint32_t i;

	for (i = 0; i < pt->nlanes; i++)
		if (pt->lane[i].completed < pt->lane[i].posted)
			return &pt->lane[i];
	return NULL;
}

int pt_stopped(const struct pt_shared *sh)
{
	return __atomic_load_n(&sh->abort, __ATOMIC_RELAXED) != 0;
}

/* Say ready, then wait for the parent's go (everyone connected first). */
void pt_start_line(struct pt_shared *sh)
{
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) && !pt_stopped(sh))
		usleep(100);
}

/* Post @k requests from @r on lane @li, polling while there is no room. */
int pt_post_wait(struct pt_port *pt, uint32_t li, const struct pt_req *r, unsigned k)
{
	unsigned spins;
	int rc;

	/* Poll, and wait only if that made no room (a wait after would oversleep). */
	for (spins = 0; (rc = port_post(pt, li, r, k)) == -EAGAIN;) {
		if (pt_port_poll(pt) || pt_stopped(pt->sh))
			return -1;
		if ((rc = port_post(pt, li, r, k)) != -EAGAIN)
			break;
		pt_idle_wait(pt, &pt->lane[li], &spins);
	}
	if (rc) {
		snprintf(pt->why, pt->why_len, "post: %s", strerror(-rc));
		return -1;
	}
	return 0;
}
