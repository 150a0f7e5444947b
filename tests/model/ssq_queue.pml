/*
 * ssq_queue.pml: the shared send queue's reserve / publish / doorbell / heal
 * protocol (design.md, "One queue in the arena", "A post, step by step",
 * "Deaths", "Invariants"), checked with Spin by tests/test_ssq_model.sh. The
 * C implementation follows this model step for step: each step below is
 * labelled S<n> (producer), H<n> (healer, ssqd) or D<n> (device), and the C
 * comment for the same step should carry the same label. Invariants are
 * numbered as in design.md: 1, 2, 3 and 5 are checked; 4 (completion
 * routing to owners) is not modelled.
 *
 * What a step is. Promela is sequentially consistent and a process is
 * interleaved with the others only between statements, so every
 * atomic { } below is one shared-memory access of the C code (one load, one
 * store or one read-modify-write; where two accesses are merged into one
 * step the comment says why that loses no interleaving). The C code must
 * therefore give the seq_cst order that Promela assumes wherever the model's
 * correctness rests on it: see the "ORDER" notes, and the summary in
 * tests/model/README.md. With -DTSO the producers run on x86-TSO instead
 * (store buffers, see below), which checks the two places that need
 * seq_cst stores.
 *
 * Death. A producer may stop forever after any step: MAYDIE at the end of
 * each step is a nondeterministic "die here" (bounded by MAXDEAD deaths in a
 * run). A dead process's stores done so far stay; it does nothing more. One
 * healer (ssqd) notices each death some time after it, and heals the dead
 * one at a time while the live producers go on.
 *
 * Bounds (set with spin -D...): NPROD producers, POSTS posts each, WQEs of 1
 * or KMAX WQEBBs, RING WQEBBs in the ring, MAXDEAD deaths. Positions are
 * absolute (never wrapped in the model: at most NPROD * POSTS * KMAX); slots
 * are position % RING, so a small RING makes the ring wrap.
 *
 * Variants that must FAIL (the test script requires Spin to find an error):
 *   BROKEN_NO_REREAD   the lease holder does not re-read `published` after
 *                      releasing the lease: a lost doorbell (stall).
 *   BROKEN_NO_HARDCASE the healer ignores a producer that died between the
 *                      reserve and recording its claim: the hole is never
 *                      filled, `published` stops below `reserve` (stall).
 *   BROKEN_HEAL_LATE_R the healer snapshots `reserve` after reading the
 *                      claims instead of before: it NOPs over a live
 *                      producer's fresh reservation (WQEBB published twice).
 *   BROKEN_PER_WQEBB   every WQEBB gets its own publish word, published in
 *                      ascending order and scanned one by one: `published`
 *                      and so the doorbell can stop inside a multi-WQEBB WQE.
 *   BROKEN_FA_EAGAIN   design.md's first draft: fetch-add, then flow control
 *                      with -EAGAIN: the given-up range is a hole nobody
 *                      fills (stall).
 *   BROKEN_FA_WAIT     check for room, fetch-add, and a producer that lost
 *                      the race for the last room waits for the device: the
 *                      healer too must wait for room, which may need a hole
 *                      only it can fill (deadlock with two deaths).
 *   TSO_NO_FENCE       (with TSO) no full fence at S6a between a
 *                      publisher's plain (release) publish store and its
 *                      scan: the scan misses another's buffered publish
 *                      and both return.
 *   TSO_PLAIN_RELEASE  (with TSO) the S7d lease release is a plain store:
 *                      the holder's re-read passes its own buffered release
 *                      and a late producer still finds the lease held.
 *   BROKEN_WAIT_LEASE  a producer that finds the lease held spins until it
 *                      is free (NVSHMEM's post_send_lock): with -DNP Spin
 *                      finds the cycle where it waits on a preempted or dead
 *                      holder (invariant 5).
 */

#ifndef NPROD
#define NPROD 2
#endif
#ifndef POSTS
#define POSTS 2
#endif
#ifndef KMAX
#define KMAX 2
#endif
#ifndef RING
#define RING 3
#endif
#ifndef MAXDEAD
#define MAXDEAD 1
#endif

#define MAXPOS (NPROD * POSTS * KMAX)
#define HEALER NPROD /* the healer's id; lease owner ids are id + 1 */

/* producers[].state (design: idle / reserving / building) */
#define IDLE 0
#define RESERVING 1
#define BUILDING 2

/* ---- ctl: shared counters, each on its own cache line in C ---- */
byte reserve;   /* producer counter in WQEBBs; next free position */
byte published; /* head of the contiguous published prefix, WQE boundary */
byte lease;     /* doorbell lease: 0 free, else owner id + 1; never waited on */
byte bell;      /* ctl copy of the last doorbell value rung (MMIO done) */
byte completed; /* tail: every WQEBB below it has completed */

/* ---- device-visible ---- */
byte dbr;      /* the send doorbell record (dbrec[1]), last value written */
byte consumed; /* device-internal: WQEBBs below it have been executed */

/* ---- slots[ring]: publish word of the WQE that starts in the slot ---- */
byte seq[RING]; /* absolute position + 1 once published: no ABA across passes */
byte wlen[RING]; /* the WQE's length in WQEBBs (metadata, written before seq) */

/* ---- producers[]: one 64-bit word each in C (state | pos | len) ---- */
byte pst[NPROD];  /* IDLE / RESERVING / BUILDING */
byte ppos[NPROD]; /* position of the reservation (valid when BUILDING) */
byte plen[NPROD]; /* its length (valid when BUILDING) */

/* ---- ghosts: the checker's bookkeeping, not protocol state ---- */
byte cover[MAXPOS]; /* number of published WQEs covering each WQEBB */
bool dead[NPROD];   /* what ssqd learns from the socket / pidfd */
bool healed[NPROD];
byte ndead, nhealed, nfinished;
bool healer_done;

/*
 * Die after this step (at most MAXDEAD deaths per run; the healer never
 * dies: ssqd's own death is recovery, out of scope). A dead process's
 * locals are cleared in the same step so that states differing only in
 * them are one state (the healer declares the producer-only names too).
 */
#define MAYDIE(who) \
	if \
	:: (who) < NPROD && ndead < MAXDEAD -> \
		dead[who] = true; ndead++; \
		k = 0; r = 0; pos = 0; h = 0; n = 0; d = 0; posts = 0; \
		moved = false; \
		goto died \
	:: true \
	fi

/* Invariant 1: a WQE [p, p+k) published, each WQEBB exactly once. */
inline ghost_publish(p, k, q)
{
	q = p;
	do
	:: q < p + k -> cover[q]++; assert(cover[q] == 1); q++
	:: else -> break
	od;
	q = 0
}

#ifdef TSO
/*
 * x86-TSO for the producers (Promela itself is sequentially consistent).
 * Each producer's plain stores (a mov: release order in C11 terms) go to
 * its own FIFO store buffer, which a Drainer process empties into memory
 * at any time, also after the producer died; a locked instruction (every
 * CAS, and an xchg, which is how a seq_cst store compiles) first waits
 * until the buffer is empty. A load sees the producer's own buffered
 * store (forwarding), else memory. The healer stays sequentially
 * consistent. The S5 publish word is a plain mov (a C11 release store);
 * S6a starts with a full fence (mfence: wait until the buffer is empty),
 * so one fence per scan pays for any number of publishes before it.
 * TSO_NO_FENCE drops that fence and TSO_PLAIN_RELEASE makes the S7d lease
 * release a plain mov: the two store-buffer races, which the test requires
 * Spin to find.
 */
#define SB_MAX 4 /* at most: BUILDING, PUB, IDLE, then the next RESERVING */
#define SB_RESERVING 1
#define SB_BUILDING 2
#define SB_PUB 3
#define SB_IDLE 4
#define SB_LEASE_FREE 5
byte sbk[NPROD * SB_MAX]; /* kind of each buffered store, oldest first */
byte sbp[NPROD * SB_MAX]; /* its position */
byte sbl[NPROD * SB_MAX]; /* its length */
byte sbn[NPROD + 1];      /* stores buffered (+1: the healer's, always 0) */
bool sbpub[NPROD + 1];    /* one of them is our own publish word */
byte sbtotal;
#define DRAINED(who) (sbn[who] == 0)

inline sb_push(who, kind, p, l)
{
	assert(sbn[who] < SB_MAX);
	sbk[who * SB_MAX + sbn[who]] = kind;
	sbp[who * SB_MAX + sbn[who]] = p;
	sbl[who * SB_MAX + sbn[who]] = l;
	sbn[who]++;
	sbtotal++
}

/* The oldest buffered store of producer i reaches memory. */
proctype Drainer(byte i)
{
	byte b, q;

	b = i * SB_MAX;
end_drain:
	do
	:: atomic {
		sbn[i] > 0 ->
		if
		:: sbk[b] == SB_RESERVING -> pst[i] = RESERVING
		:: sbk[b] == SB_BUILDING ->
			ppos[i] = sbp[b];
			plen[i] = sbl[b];
			pst[i] = BUILDING
		:: sbk[b] == SB_PUB ->
			assert(sbp[b] + sbl[b] <= completed + RING);
			wlen[sbp[b] % RING] = sbl[b];
			seq[sbp[b] % RING] = sbp[b] + 1;
			ghost_publish(sbp[b], sbl[b], q);
			sbpub[i] = false
		:: sbk[b] == SB_IDLE -> pst[i] = IDLE
		:: sbk[b] == SB_LEASE_FREE -> lease = 0
		fi;
		q = 0;
		do
		:: q + 1 < SB_MAX ->
			sbk[b + q] = sbk[b + q + 1];
			sbp[b + q] = sbp[b + q + 1];
			sbl[b + q] = sbl[b + q + 1];
			q++
		:: else -> break
		od;
		sbk[b + q] = 0;
		sbp[b + q] = 0;
		sbl[b + q] = 0;
		q = 0;
		sbn[i]--;
		sbtotal--
	   }
	od
}

#define CLAIM(who, kind, state, p, l) sb_push(who, kind, p, l)
#else
#define DRAINED(who) true
#define CLAIM(who, kind, state, p, l) \
	ppos[who] = p; plen[who] = l; pst[who] = state
#endif

/*
 * S6/H4: advance `published` across the contiguous published prefix.
 * One step reads `published` and scans the publish words; one step is the
 * CAS. Merging the scan into one step loses nothing: publish words only go
 * from unpublished to published while the scan can see them (a slot is
 * reused only after `completed`, hence `published`, passed it, and then the
 * CAS below fails), so a scan that reads slot after slot returns what one
 * snapshot at its last read would. A failed CAS means somebody else moved
 * `published`: rescan (lock-free, never waits).
 * ORDER: the publish store (S5) and these loads are a store-buffer pair with
 * another publisher's (each stores its own slot, then loads the other's):
 * a seq_cst fence between each side's store and its loads (S6a's first
 * step), or one publisher's WQE can be left out of the prefix by both of
 * them. The C code fences once per ssq_submit, after a batch of publishes.
 */
inline advance(who, h, n, moved)
{
	moved = false;
adv_retry:
	atomic {
		/* S6a seq_cst fence (x86: mfence, our stores reach memory), then
		 * load published and scan the publish words from there */
#if defined(TSO) && !defined(TSO_NO_FENCE)
		DRAINED(who);
#endif
		h = published;
		n = h;
		do
#ifdef BROKEN_PER_WQEBB
		:: seq[n % RING] == n + 1 -> n++
#else
		:: seq[n % RING] == n + 1 -> n = n + wlen[n % RING]
#endif
#ifdef TSO
		:: seq[n % RING] != n + 1 && sbpub[who] && n == pos ->
			n = n + k /* our own publish word, still buffered */
#endif
		:: else -> break
		od;
		MAYDIE(who);
		if
		:: n == h -> /* nothing new: whoever moved it past us rings */
			h = 0;
			goto adv_done
		:: else -> skip
		fi
	}
	atomic {
		/* S6b CAS published h -> n */
		DRAINED(who);
		if
		:: published == h -> published = n; moved = true
		:: else -> goto adv_retry
		fi;
		h = 0;
		n = 0;
		MAYDIE(who)
	}
adv_done:
	n = 0
}

/*
 * S7/H5: ring, one ringer at a time, under a lease nobody waits on.
 * ORDER (the lost-doorbell race): a late producer does CAS(published) then
 * tries the lease and fails; the holder does release(lease) then re-reads
 * `published`. Store-buffer pattern again: the lease CAS (also when it
 * fails), the lease release store and the re-read load must all be seq_cst
 * (x86: the release is an xchg, not a plain mov), else the holder may miss
 * the late producer's WQE and nobody rings it.
 */
inline doorbell(who, d)
{
	d = 0;
ring_try:
	atomic {
		/* S7a try-acquire (CAS 0 -> id); if held, return: the
		 * holder's re-read covers us */
		DRAINED(who);
		if
		:: lease == 0 -> lease = who + 1
#ifdef BROKEN_WAIT_LEASE
		:: else -> goto ring_try /* spin until free (NVSHMEM's lock) */
#else
		:: else -> goto ring_done
#endif
		fi;
		MAYDIE(who)
	}
	atomic {
		/* S7b read published; if it is past the last doorbell, write
		 * the DBR record (after the udma_to_device barrier). `bell`,
		 * not `dbr`, decides: a holder that died between S7b and S7c
		 * left dbr ahead of bell, and the device may not have looked.
		 * Load and store in one step: `published` only grows, and a
		 * value that grew after our load is caught by S7e. */
		d = published;
		if
		:: d > bell -> assert(d >= dbr); dbr = d /* Invariant 2: never decreases */
		:: else -> goto ring_release
		fi;
		MAYDIE(who)
	}
	atomic {
		/* S7c the 8-byte MMIO doorbell (the first 8 bytes of the control
		 * segment of the WQE that ends at d), mmio_flush_writes, then the
		 * ctl copy `bell`. If a holder dies between the MMIO and the ctl
		 * copy, the next rings the same value again: nothing new for the
		 * device. */
		bell = d;
		MAYDIE(who)
	}
ring_release:
	atomic {
		/* S7d release the lease: seq_cst store (after the flush) */
#if defined(TSO) && defined(TSO_PLAIN_RELEASE)
		sb_push(who, SB_LEASE_FREE, 0, 0);
#else
		DRAINED(who); /* x86: xchg */
		lease = 0;
#endif
#ifdef BROKEN_NO_REREAD
		d = 0;
#endif
		MAYDIE(who)
	}
#ifndef BROKEN_NO_REREAD
	atomic {
		/* S7e re-read published (seq_cst, after the release): if it
		 * passed what we read at S7b, a producer may have failed S7a
		 * while we held the lease; its WQE is ours to ring. */
		if
		:: published > d -> goto ring_try
		:: else -> d = 0
		fi
	}
#endif
ring_done:
	skip
}

/* ---------------------------------------------------------------- producer */
proctype Producer(byte me)
{
	byte k, r, pos, h, n, d, posts, q;
	bool moved;

next_post:
	if
	:: posts == POSTS -> goto finished
	:: else -> skip
	fi;

#if defined(BROKEN_FA_WAIT)
	/* Check for room, then fetch-add; a producer that lost the race for
	 * the last room waits for the device, without a bound (a bound
	 * would be BROKEN_FA_EAGAIN's hole). Safe with no death, but the
	 * healer must then wait for room before writing a NOP, and room may
	 * need a hole only it can fill: a deadlock (invalid end state). */
	atomic {
		if
		:: k = 1
		:: k = KMAX
		fi;
		pst[me] = RESERVING;
		r = reserve;
		if
		:: r + k > completed + RING ->
			pst[me] = IDLE;
			k = 0;
			r = 0;
			posts++;
			goto next_post /* -EAGAIN */
		:: else -> r = 0
		fi;
		MAYDIE(me)
	}
	atomic {
		pos = reserve; /* fetch-add */
		reserve = reserve + k;
		MAYDIE(me)
	}
	atomic {
		ppos[me] = pos;
		plen[me] = k;
		pst[me] = BUILDING;
		MAYDIE(me)
	}
	atomic {
		(pos + k <= completed + RING); /* wait for room */
		MAYDIE(me)
	}
#elif defined(BROKEN_FA_EAGAIN)
	/* design.md's first draft: fetch-add, record, then flow control
	 * with -EAGAIN. The positions are taken before the check, so giving
	 * up leaves a hole no live producer claims and nobody fills:
	 * `published` stops there for everyone. */
	atomic {
		if
		:: k = 1
		:: k = KMAX
		fi;
		pst[me] = RESERVING;
		MAYDIE(me)
	}
	atomic {
		pos = reserve;
		reserve = reserve + k;
		MAYDIE(me)
	}
	atomic {
		ppos[me] = pos;
		plen[me] = k;
		pst[me] = BUILDING;
		MAYDIE(me)
	}
	atomic {
		if
		:: pos + k > completed + RING -> /* bounded wait ran out */
			pst[me] = IDLE;
			k = 0;
			pos = 0;
			posts++;
			goto next_post /* -EAGAIN */
		:: else -> skip
		fi;
		MAYDIE(me)
	}
#else
	atomic {
		/* S1 load reserve, then completed, and check flow control
		 * BEFORE taking any position: a full ring returns -EAGAIN
		 * owning nothing (after a bounded wait polling the CQ; not
		 * modelled, the device completes on its own). S2 if there is
		 * room, mark self RESERVING (the WQE size k is the caller's).
		 * One step: a stale `reserve` fails the CAS in S3 and is
		 * re-read there, `completed` only grows, so an early read is
		 * only more cautious, and the healer needs RESERVING visible
		 * before the CAS, not before these loads. */
		if
		:: k = 1
		:: k = KMAX
		fi;
		r = reserve;
		if
		:: r + k > completed + RING ->
			k = 0; /* RESERVING then IDLE: nothing to see */
			r = 0;
			posts++;
			goto next_post /* -EAGAIN */
		:: else -> CLAIM(me, SB_RESERVING, RESERVING, 0, 0)
		fi;
		MAYDIE(me)
	}
reserve_cas:
	atomic {
		/* S3 CAS reserve r -> r + k. A failure returns the current
		 * value (as C's compare_exchange does): check flow control
		 * again with it and retry; only another reservation can make
		 * it fail. Dying right after a success is the hard case:
		 * positions taken, no claim recorded. */
		DRAINED(me);
		if
		:: reserve == r -> reserve = r + k; pos = r; r = 0
		:: else ->
			r = reserve;
			if
			:: r + k > completed + RING ->
				CLAIM(me, SB_IDLE, IDLE, 0, 0);
				k = 0;
				r = 0;
				posts++;
				goto next_post /* -EAGAIN */
			:: else -> goto reserve_cas
			fi
		fi;
		MAYDIE(me)
	}
	atomic {
		/* S4 record the claim (state, pos, len in one 64-bit store), then
		 * build the WQE in its slots (abstract). Invariant 3: the slots'
		 * previous occupants have completed. */
		CLAIM(me, SB_BUILDING, BUILDING, pos, k);
		assert(pos + k <= completed + RING);
		MAYDIE(me)
	}
#endif
#ifdef BROKEN_PER_WQEBB
	/* S5 (broken) each WQEBB published on its own, in ascending order */
	wlen[pos % RING] = k;
	q = pos;
	do
	:: q < pos + k ->
		atomic {
			seq[q % RING] = q + 1;
			cover[q]++;
			assert(cover[q] == 1);
			q++;
			MAYDIE(me)
		}
	:: else -> break
	od;
#else
	atomic {
		/* S5 publish: the slot metadata (owner, wr_id, flags), then
		 * the head slot's publish word: ONE 64-bit store of
		 * (position + 1, length) packed, so a reader gets both from
		 * one load (the healer walks WQEs by length; a separate length
		 * could belong to the slot's next pass). One word per WQE:
		 * the WQE becomes visible whole or not at all. A release
		 * store (x86: a plain mov): S6a's fence orders it before our
		 * scan. */
#ifdef TSO
		sb_push(me, SB_PUB, pos, k);
		sbpub[me] = true;
#else
		wlen[pos % RING] = k;
		seq[pos % RING] = pos + 1;
		ghost_publish(pos, k, q);
#endif
		MAYDIE(me)
	}
#endif
	atomic {
		/* S5b the claim is no longer needed (after the publish word: a
		 * healer that reads IDLE then sees the WQE published) */
		CLAIM(me, SB_IDLE, IDLE, 0, 0);
		MAYDIE(me)
	}
	advance(me, h, n, moved);
	if
	:: moved -> doorbell(me, d)
	:: else -> skip /* whoever moved `published` over our WQE rings it */
	fi;
	posts++;
	goto next_post;

finished:
	nfinished++;
died:
	skip
}

/* -------------------------------------------------------------- healer */
inline publish_nop(p, q)
{
	/* H3 a one-WQEBB NOP at p, published like any WQE. Invariant 3:
	 * p < reserve, and every reservation passed flow control. */
#ifdef BROKEN_FA_WAIT
	(p < completed + RING); /* a fetch-add reservation may not have room yet */
#endif
	assert(p < completed + RING);
	wlen[p % RING] = 1;
	seq[p % RING] = p + 1;
	ghost_publish(p, 1, q)
}

proctype Healer()
{
	byte i, j, p, R, h, n, d, q;
	bool moved, claimed;
	byte k, r, pos, posts; /* never used: named by MAYDIE, which never fires here */
	byte cst[NPROD], cpos[NPROD], clen[NPROD]; /* the claims as read */

	do
	:: atomic {
		/* H0 ssqd learns of a death (socket closed, pidfd) */
		ndead > nhealed ->
		i = 0;
		do
		:: dead[i] && !healed[i] -> break
		:: else -> i++
		od
	   };
		/* the death notice comes after the dead's last store landed */
		DRAINED(i);
		/* H1 break the lease the dead held (CAS owner -> 0) */
		atomic {
			if
			:: lease == i + 1 -> lease = 0
			:: else -> skip
			fi
		}
		/* H2 its reserved, unpublished WQEBBs become NOPs. The dead
		 * producer's record is frozen, so reading it races nothing. */
		if
		:: pst[i] == BUILDING ->
			if
			:: seq[ppos[i] % RING] < ppos[i] + 1 ->
				/* `<`, not `!=`: it may have published and
				 * died before S5b, and the slot since been
				 * completed and reused by a later pass (seq
				 * is then larger). Spin found this. */
				p = ppos[i];
				do
				:: p < ppos[i] + plen[i] -> atomic { publish_nop(p, q) }; p++
				:: else -> break
				od
			:: else -> skip /* published before it died */
			fi
		:: pst[i] == RESERVING ->
#ifndef BROKEN_NO_HARDCASE
			/* H2' the hard case: it may have died between the CAS on
			 * reserve and recording its claim. Ranges tile [0,
			 * reserve), so walk them from `published`: an unpublished
			 * range no claim covers, while no live producer is
			 * reserving, belongs to the dead (this one or another
			 * hard-case death): NOP it WQEBB by WQEBB.
			 * ORDER: snapshot reserve (acquire) BEFORE reading the
			 * claims (acquire), and read a slot's publish word after
			 * the claims: a live producer's range below the
			 * snapshot is then either claimed or already published
			 * when we look (its RESERVING store precedes its CAS,
			 * release; its IDLE store follows its publish). */
hard_case:
#ifndef BROKEN_HEAL_LATE_R
			atomic { R = reserve };
#endif
			j = 0;
			do
			:: j < NPROD ->
				atomic {
					cst[j] = pst[j];
					cpos[j] = ppos[j];
					clen[j] = plen[j]
				}
				if
				:: cst[j] == RESERVING && !dead[j] ->
					/* a live producer between S1 and S4: its
					 * range may be unclaimed yet. Wait for it
					 * to move on (only the healer waits), then
					 * start over. */
					(pst[j] != RESERVING || dead[j]);
					goto hard_case
				:: else -> j++
				fi
			:: else -> break
			od;
#ifdef BROKEN_HEAL_LATE_R
			atomic { R = reserve };
#endif
			atomic { p = published };
			do
			:: p >= R -> break
			:: else ->
				atomic {
					/* one load of the packed publish word
					 * (seq, len): see S5. Load and NOP store
					 * in one step: nobody else can publish an
					 * unclaimed position, and its slot is not
					 * reused before it is published. */
					if
					:: seq[p % RING] == p + 1 -> p = p + wlen[p % RING]
					:: seq[p % RING] > p + 1 ->
						/* the slot was reused: p has long
						 * completed (our `published` read is
						 * stale). Spin found this; restart at
						 * the prefix head, past p by now. */
						p = published
					:: seq[p % RING] < p + 1 ->
						claimed = false;
						j = 0;
						do
						:: j < NPROD && cst[j] == BUILDING && cpos[j] == p ->
							claimed = true; break
						:: j < NPROD && !(cst[j] == BUILDING && cpos[j] == p) -> j++
						:: j == NPROD -> break
						od;
						if
						:: claimed -> p = p + clen[j] /* its owner (or its heal) publishes it */
						:: else -> publish_nop(p, q); p++
						fi
					fi
				}
			od
#else
			skip
#endif
		:: pst[i] == IDLE -> skip
		fi;
		atomic {
			pst[i] = IDLE;
			healed[i] = true;
			nhealed++;
			i = 0; j = 0; p = 0; R = 0; claimed = false;
			for (q : 0 .. NPROD - 1) {
				cst[q] = 0; cpos[q] = 0; clen[q] = 0
			}
			q = 0
		};
		/* H4, H5: advance and ring like a producer, always: the dead
		 * may have moved `published` and died before ringing, or held
		 * the lease we just broke. */
		advance(HEALER, h, n, moved);
		doorbell(HEALER, d)
	:: atomic { nfinished + ndead == NPROD && nhealed == ndead -> break }
	od;
	healer_done = true;
died:
	skip
}

/* -------------------------------------------------------------- device */
active proctype Device()
{
	byte l, q;
end_device:
	do
	:: atomic {
		/* D1 execute the next WQE below the doorbell record, in order.
		 * The device is only sure to look after an MMIO doorbell
		 * (`bell`), but one already busy on the queue may read the
		 * record (`dbr`, >= bell) at any time: executing up to dbr
		 * is the more demanding device. Invariant 1: what it executes
		 * was published, each WQEBB exactly once; the doorbell record
		 * never stops inside a WQE.
		 * D2 its completion (the queue forces a signaled WQE at least
		 * once a ring) is routed and `completed` passes it: its slots
		 * may be reused. Merged with D1: nobody but the device sees
		 * the gap between executing a WQE and completing it, and
		 * completion may lag as long as the scheduler likes. */
		consumed < dbr ->
		assert(seq[consumed % RING] == consumed + 1);
		l = wlen[consumed % RING];
		assert(l >= 1 && consumed + l <= dbr);
		q = consumed;
		do
		:: q < consumed + l -> assert(cover[q] == 1); q++
		:: else -> break
		od;
		consumed = consumed + l;
		completed = consumed;
		l = 0;
		q = 0
	   }
	od
}

/* Invariant 2 at every state: the doorbell never passes `published`. */
active proctype Monitor()
{
end_monitor:
	atomic { !(bell <= dbr && dbr <= published && published <= reserve) -> assert(false) }
}

init
{
	byte q;

	atomic {
		for (q : 0 .. NPROD - 1) {
			run Producer(q)
		}
		run Healer();
#ifdef TSO
		for (q : 0 .. NPROD - 1) {
			run Drainer(q)
		}
#endif
		q = 0
	}
	/* Every live producer finished, every dead one healed. */
	healer_done;
#ifdef TSO
	sbtotal == 0;
#endif
	/* Invariant 5, no stall: everything reserved is published and rung
	 * (no lost doorbell, no hole left by the dead), though nobody waited
	 * on anybody. */
	assert(published == reserve);
	assert(dbr == reserve && bell == reserve);
	/* The device executes it all (else: invalid end state). */
	consumed == reserve && completed == consumed;
	for (q : 0 .. MAXPOS - 1) {
		assert(q < reserve && cover[q] == 1 || q >= reserve && cover[q] == 0)
	}
}
