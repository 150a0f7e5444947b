/* SPDX-License-Identifier: MIT */
/* Lay out a shared queue's control block and bind producers to it. */
#include <ssq/queue.h>

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

size_t ssq_ctl_size(uint32_t ring)
{
	return sizeof(struct ssq_ctl) + (size_t)ring * sizeof(struct ssq_ctl_slot) +
	       (size_t)SSQ_MAX_PRODUCERS * ring * sizeof(struct ssq_completion);
}

static struct ssq_ctl_slot *slots_of(struct ssq_ctl *ctl)
{
	return (struct ssq_ctl_slot *)(ctl + 1);
}

static struct ssq_completion *comp_of(struct ssq_ctl *ctl)
{
	return (struct ssq_completion *)(slots_of(ctl) + ctl->ring);
}

int ssq_ctl_init(struct ssq_ctl *ctl, uint32_t ring, uint32_t signal_every)
{
	if (!ctl || !is_pow2(ring) || ring < 4 || ring > 65536 ||
	    !is_pow2(signal_every) || signal_every > ring / 2)
		return -EINVAL;
	memset(ctl, 0, ssq_ctl_size(ring));
	ctl->ring = ring;
	ctl->signal_every = signal_every;
	/*
	 * A producer has at most `ring` WQEs outstanding plus completions
	 * unreaped (ssq_reserve keeps the sum under this): its ring never fills.
	 */
	ctl->comp_entries = ring;
	ctl->max_producers = SSQ_MAX_PRODUCERS;
	ctl->state = SSQ_CTL_READY;
	__atomic_store_n(&ctl->magic, SSQ_CTL_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

static void bind_record(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                        const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	memset(p, 0, sizeof(*p));
	p->ctl = ctl;
	p->slots = slots_of(ctl);
	p->comp_all = comp_of(ctl);
	p->comp = p->comp_all + (size_t)id * ctl->comp_entries;
	p->me = &ctl->producers[id];
	p->sq = *sq;
	p->cq = *cq;
	p->id = id;
	p->slot_mask = ctl->ring - 1;
}

static int check_args(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	if (!p || !ctl || !sq || !cq ||
	    __atomic_load_n(&ctl->magic, __ATOMIC_ACQUIRE) != SSQ_CTL_MAGIC)
		return -EINVAL;
	/* The fast path masks and shifts by these: powers of two, as ssqd made them. */
	if (id >= ctl->max_producers || sq->wqe_cnt != ctl->ring || !is_pow2(ctl->ring) ||
	    !is_pow2(ctl->signal_every))
		return -EINVAL;
	return 0;
}

int ssq_producer_init(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq, uint32_t pid)
{
	uint32_t free_state = SSQ_PROD_FREE;
	int rc = check_args(p, ctl, id, sq, cq);

	if (rc)
		return rc;
	if (!__atomic_compare_exchange_n(&ctl->producers[id].state, &free_state,
	                                 SSQ_PROD_IDLE, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return -EBUSY;
	bind_record(p, ctl, id, sq, cq);
	p->me->pid = pid;
	return 0;
}

int ssq_producer_bind(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	int rc = check_args(p, ctl, id, sq, cq);

	if (rc)
		return rc;
	if (__atomic_load_n(&ctl->producers[id].state, __ATOMIC_ACQUIRE) != SSQ_PROD_IDLE)
		return -EINVAL;
	bind_record(p, ctl, id, sq, cq);
	return 0;
}

void ssq_producer_fini(struct ssq_producer *p)
{
	if (!p || !p->me)
		return;
	/* Retired: the router drops what is still in flight for us. */
	__atomic_store_n(&p->me->state, SSQ_PROD_DEAD, __ATOMIC_RELEASE);
	p->me = NULL;
}

int ssq_ctl_claim(struct ssq_ctl *ctl, uint32_t pid, uint32_t skip_id)
{
	uint32_t i;

	for (i = 0; i < ctl->max_producers; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];
		uint32_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

		if (i == skip_id)
			continue;
		/*
		 * A retired record is reusable once the router has counted every
		 * WQE it published: nothing routed later can name it.
		 */
		if (st == SSQ_PROD_DEAD &&
		    __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) >= r->posted) {
			/*
			 * Keep resv_gen growing (a healer may hold an old snapshot),
			 * and even: a producer that died mid-reservation left it odd,
			 * and odd means "mid-reservation" to ssq_ctl_heal.
			 */
			uint32_t gen = (r->resv_gen + 1) & ~1u;

			memset(r, 0, sizeof(*r));
			r->resv_gen = gen;
			st = SSQ_PROD_FREE;
		}
		if (st != SSQ_PROD_FREE)
			continue;
		r->pid = pid;
		__atomic_store_n(&r->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -EUSERS;
}
