/* SPDX-License-Identifier: MIT */
/*
 * WRITEs streaming both ways across a two-host queue while its ends are
 * reset (a client scribbles a control block: the guard restarts both
 * QPs with the peer), five times, alternating sides. Every WRITE ends
 * with a completion: success only if its 8 bytes are at the target
 * (a restart inside the peer's duplicate window would acknowledge
 * WRITEs it never executed), else flushed; none is lost, and the
 * stream goes on after each restart.
 */
#define _GNU_SOURCE
#include "recv_flow.h"
#include "shm/layout.h"

#define SLOTS 512u /* 8-byte slots in the target buffer */

struct side {
	const char *name;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf; /* 4 KiB target */
	struct ssq_buf src; /* SLOTS * 8 bytes of sources */
	uint64_t posted, done, ok, flushed, lied, other;
	char first_lie[160];
	char first_other[160];
};

/* Post as many WRITEs as fit on @s towards @t (values 1, 2, ...). */
static void post_some(struct side *s, struct side *t)
{
	struct ssq_producer *p = ssq_queue_producer(s->q);

	while (s->posted - s->done < 64) {
		uint64_t v = s->posted + 1, slot = v % SLOTS;
		uint64_t *src = (uint64_t *)s->src.addr + slot;
		struct ibv_sge sge = { s->src.iova + slot * 8, 8, s->src.lkey };
		struct ibv_send_wr wr, *bad = NULL;

		*src = v;
		t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, v, t->buf.remote_addr + slot * 8,
		         t->buf.rkey);
		if (ssq_post_wr(p, &wr, &bad))
			return; /* restarting (-EAGAIN) or waiting: later */
		s->posted++;
	}
}

static void reap_side(struct side *s, struct side *t)
{
	struct ssq_completion comp[32];
	int n = ssq_poll(ssq_queue_producer(s->q), comp, 32), i;

	for (i = 0; i < n; i++) {
		uint64_t v = comp[i].wr_id,
		         got = ((volatile uint64_t *)t->buf.addr)[v % SLOTS];

		s->done++;
		if (comp[i].status == IBV_WC_SUCCESS) {
			s->ok++;
			/* Its value, or a later WRITE's to the same slot. */
			if (got < v || (got - v) % SLOTS) {
				if (!s->lied++)
					snprintf(s->first_lie, sizeof(s->first_lie),
					         "WRITE %llu succeeded, slot holds %llu",
					         (unsigned long long)v,
					         (unsigned long long)got);
			}
		} else if (comp[i].status == IBV_WC_WR_FLUSH_ERR) {
			s->flushed++;
		} else if (!s->other++) {
			snprintf(s->first_other, sizeof(s->first_other),
			         "%s's WRITE %llu: status %d (%s), vendor error 0x%x",
			         s->name, (unsigned long long)v, comp[i].status,
			         ibv_wc_status_str((enum ibv_wc_status)comp[i].status),
			         comp[i].vendor_err);
		}
	}
}

int main(void)
{
	struct t_pair pair;
	struct side a = { .name = "alice" }, b = { .name = "bob" };
	double t0, next;
	int round = 0;

	t_need_ssqd();
	CHECK(t_pair_start(&pair, "advs", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	a.c = pair.c[0];
	b.c = pair.c[1];
	if (!a.c || !b.c || ssq_queue_open(a.c, "bob/q0", &a.q) ||
	    ssq_queue_open(b.c, "alice/q0", &b.q) || ssq_buf_alloc(a.c, 4096, &a.buf) ||
	    ssq_buf_alloc(b.c, 4096, &b.buf) || ssq_buf_alloc(a.c, SLOTS * 8, &a.src) ||
	    ssq_buf_alloc(b.c, SLOTS * 8, &b.src))
		goto out;
	memset(a.buf.addr, 0, 4096);
	memset(b.buf.addr, 0, 4096);
	t0 = now_s();
	next = t0 + 0.3;
	while (now_s() - t0 < 6.5) {
		post_some(&a, &b);
		post_some(&b, &a);
		reap_side(&a, &b);
		reap_side(&b, &a);
		if (now_s() >= next && round < 5) {
			struct side *s = round % 2 ? &b : &a;

			__atomic_fetch_add(&ssq_queue_producer(s->q)->ctl->epoch, 7,
			                   __ATOMIC_SEQ_CST);
			round++;
			next += 1.2; /* past the guard's pacing */
		}
	}
	/* The stream stops: what is in flight completes. */
	for (t0 = now_s(); now_s() - t0 < 10 && (a.done < a.posted || b.done < b.posted);)
		reap_side(&a, &b), reap_side(&b, &a), usleep(100);
	printf("alice: %llu posted, %llu ok, %llu flushed, %llu other; bob: %llu posted, "
	       "%llu ok, %llu flushed, %llu other\n",
	       (unsigned long long)a.posted, (unsigned long long)a.ok,
	       (unsigned long long)a.flushed, (unsigned long long)a.other,
	       (unsigned long long)b.posted, (unsigned long long)b.ok,
	       (unsigned long long)b.flushed, (unsigned long long)b.other);
	CHECK(!a.lied && !b.lied,
	      "success only for WRITEs that landed: %llu, %llu did not (%s%s)",
	      (unsigned long long)a.lied, (unsigned long long)b.lied, a.first_lie,
	      b.first_lie);
	CHECK(a.done == a.posted && b.done == b.posted,
	      "every WRITE completed: alice %llu of %llu, bob %llu of %llu",
	      (unsigned long long)a.done, (unsigned long long)a.posted,
	      (unsigned long long)b.done, (unsigned long long)b.posted);
	CHECK(!a.other && !b.other, "no error but flushes: alice %llu, bob %llu (%s%s)",
	      (unsigned long long)a.other, (unsigned long long)b.other, a.first_other,
	      b.first_other);
	CHECK(a.ok > 1000 && b.ok > 1000, "the stream went on: %llu and %llu succeeded",
	      (unsigned long long)a.ok, (unsigned long long)b.ok);
out:
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_stream_restart");
}
