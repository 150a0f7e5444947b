/* SPDX-License-Identifier: MIT */
/*
 * opts_derived.c - what follows from the perftest-style tools' options
 * alone (opts.h): the test's kind, its largest message, the queues a run
 * needs and their names, the receive pool a SEND run asks ssqd for.
 */
#include <stdio.h>
#include "opts.h"

const char *const pt_mode_names[] = { "lockfree", "spinlock", "qp-per-process", "proxy",
	                              "combine" };

int pt_is_lat(const struct pt_opts *o)
{
	return o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT || pt_is_cqe_lat(o);
}

uint32_t pt_top_size(const struct pt_opts *o)
{
	if (!o->all_sizes || pt_is_atomic(o))
		return o->size;
	return pt_is_send(o) ? PT_MAX_SEND_SIZE : PT_MAX_SIZE;
}

int pt_is_cqe_lat(const struct pt_opts *o)
{
	return o->test == PT_READ_LAT || o->test == PT_ATOMIC_LAT;
}

int pt_is_read(const struct pt_opts *o)
{
	return o->test == PT_READ_BW || o->test == PT_READ_LAT;
}

int pt_is_atomic(const struct pt_opts *o)
{
	return o->test == PT_ATOMIC_BW || o->test == PT_ATOMIC_LAT;
}

int pt_is_send(const struct pt_opts *o)
{
	return o->test == PT_SEND_BW || o->test == PT_SEND_LAT;
}

uint32_t pt_queue_index(const struct pt_opts *o, uint32_t idx, uint32_t lane)
{
	uint32_t np = o->npeers ? o->npeers : 1, k = lane / np;

	return o->mode == PT_QP_PER_PROCESS ? idx * o->qps + k : k;
}

void pt_queue_name(const struct pt_opts *o, uint32_t idx, uint32_t lane, char *out,
                   size_t len)
{
	uint32_t np = o->npeers ? o->npeers : 1, k = pt_queue_index(o, idx, lane);

	if (o->queue_pick)
		snprintf(out, len, "any"); /* ssqd picks; opts_checks: no --peers */
	else if (o->npeers)
		snprintf(out, len, "%s/q%u", o->peers[lane % np], k);
	else
		snprintf(out, len, "q%u", k);
}

uint32_t pt_queues_needed(const struct pt_opts *o)
{
	return o->mode == PT_QP_PER_PROCESS ? o->procs * o->qps : o->qps;
}

uint32_t pt_lanes(const struct pt_opts *o)
{
	if (o->queue_pick)
		return 1;
	return o->qps * (o->npeers ? o->npeers : 1);
}

uint32_t pt_host_qps(const struct pt_opts *o)
{
	return pt_queues_needed(o) * (o->npeers ? o->npeers : 1);
}

void pt_host_queue_name(const struct pt_opts *o, uint32_t i, char *out, size_t len)
{
	uint32_t per = pt_queues_needed(o);

	if (o->npeers)
		snprintf(out, len, "%s/q%u", o->peers[i / per], i % per);
	else
		snprintf(out, len, "q%u", i);
}

/*
 * The receive pool SEND needs at every queue: buffers of the largest size,
 * at least as many posted as can be in flight to one queue (so no sender
 * ever waits out an RNR timer), a power of two (ssqd's rule).
 */
void pt_recv_pool(const struct pt_opts *o, uint32_t *depth, uint32_t *bytes)
{
	uint32_t top = pt_top_size(o), want, d = 256;

	want = o->test == PT_SEND_LAT         ? o->procs
	       : o->mode == PT_QP_PER_PROCESS ? o->tx_depth
	                                      : o->procs * o->tx_depth;
	while (d < want && d < 32768)
		d *= 2;
	*depth = d;
	*bytes = top < 64 ? 64 : (top + 63) & ~63u;
}
