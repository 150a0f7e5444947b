/*
 * ssq_queue.pml: the shared send queue's reserve / publish / doorbell / heal
 * protocol (docs/design.md, "The shared queue" and "Invariants"), checked
 * with Spin by tests/test_ssq_model.sh. The C implementation follows this
 * model step for step: each step below is labelled S<n> (producer: include/ssq/queue.h), H<n> (healer, ssqd:
 * src/dv/queue_heal.c) or D<n> (device), and the C comment for the same
 * step should carry the same label. Invariants are numbered as in
 * docs/design.md: 1, 2, 3 and 5 are checked; 4 (completion routing to owners)
 * is not modelled.
 *
 * What a step is. Promela is sequentially consistent and a process is
 * interleaved with the others only between statements, so every
 * atomic { } below is one shared-memory access of the C code (one load, one
 * store or one read-modify-write; where two accesses are merged into one
 * step the comment says why that loses no interleaving). The C code must
 * therefore give the seq_cst order that Promela assumes wherever the model's
 * correctness rests on it: see the "ORDER" notes, and the summary in
 * tests/model/README.md. With -DTSO the producers run on x86-TSO instead
 * (store buffers, see below), which checks the seq_cst lease release
 * (S7d) the lost-doorbell race needs; the S6b fence it cannot check.
 *
 * Reserve (as ssq_reserve): check for room (S1a load `reserve`, S1b load
 * `completed`; no room -> -EAGAIN owning nothing), say RESERVING (S2),
 * FETCH-ADD `reserve` (S3: positions taken, cannot be given back), record
 * the claim (S4), and then, if producers that passed the check together
 * took positions past the ring, WAIT without a bound for the device to
 * complete what the slots still hold (S4b). So a reservation may wait on
 * a hole a dead producer left below it, which only the healer fills.
 *
 * Heal (as ssq_ctl_heal, called by ssqd after each death and again every
 * 10 ms while it returns -ETIMEDOUT): H1 break the leases the dead hold;
 * H2 snapshot r0 = `reserve`, then every claim's generation, and wait out
 * the live producers that were mid-reservation; H3 walk x from `published`
 * to r0 in position order: skip what a live claim holds and what is
 * published, and publish every other WQEBB as a one-WQEBB NOP, but before
 * WAITING for the room a NOP at x needs, SUBMIT the NOPs written so far
 * (the room may need exactly those: a producer died waiting for room past
 * the ring behind another dead producer's hole); H4 submit. Every wait and
 * every walk step may pass the deadline: the heal then submits what it
 * wrote and gives up (-ETIMEDOUT), and ssqd runs it again later. The model
 * lets the healer give up at each wait and each walk step at most
 * MAXGIVEUP times in a run for no reason (a preempted producer, a slow
 * device), and at any of them while a death is waiting to be noticed (ssqd
 * then processes the death notice and heals again: bounded by MAXDEAD).
 * Past that budget a wait must end by itself, or Spin reports an invalid
 * end state: the model requires that no wait relies on the deadline.
 *
 * Death. A producer may stop forever after any step: MAYDIE at the end of
 * each step is a nondeterministic "die here" (bounded by MAXDEAD deaths in a
 * run). A dead process's stores done so far stay; it does nothing more.
 * ssqd notices each death some time after it (H0: the record becomes DEAD)
 * and heals, while the live producers go on.
 *
 * Stop. A producer may also stop after any step (MAXSTALL stops in a run)
 * and never go on by itself; ssqd's stall watch (Watch) kills it at some
 * later time, and from then on it is a death like the others. With the
 * watch every run ends with everything reserved published and rung, each
 * WQEBB once: a stopped producer costs the others the time until the kill
 * (in C: --stall-ms) plus the heal, and no more (BROKEN_NO_KILL: for ever).
 *
 * Bounds (set with spin -D...): NPROD producers, POSTS posts each, WQEs of 1
 * or KMAX WQEBBs, RING WQEBBs in the ring, MAXDEAD deaths, MAXSTALL stops,
 * MAXGIVEUP spontaneous heal timeouts. Positions are absolute (never wrapped in the
 * model: at most NPROD * POSTS * KMAX); slots are position % RING, so a
 * small RING makes the ring wrap.
 *
 * Variants that must FAIL (the test script requires Spin to find an error):
 *   BROKEN_NO_REREAD   the lease holder skips S7e (no look at the head slot
 *                      after releasing the lease): a producer that published
 *                      the head after the holder's scan and found the lease
 *                      held is never advanced nor rung (stall: `published`
 *                      stops below `reserve`).
 *   BROKEN_NO_HARDCASE the healer NOPs only the ranges the dead recorded:
 *                      a producer that died between its fetch-add and its
 *                      record leaves a hole nobody fills (stall).
 *   BROKEN_HEAL_LATE_R the healer snapshots `reserve` after reading the
 *                      claims instead of before: it NOPs over a live
 *                      producer's fresh reservation (WQEBB published twice).
 *   BROKEN_PER_WQEBB   every WQEBB gets its own publish word, published in
 *                      ascending order and scanned one by one (S7b):
 *                      `published` and so the doorbell can stop inside a
 *                      multi-WQEBB WQE.
 *   BROKEN_FA_EAGAIN   design.md's first draft: after the fetch-add, no
 *                      room -> -EAGAIN instead of the S4b wait: the given-up
 *                      range is a hole nobody fills (stall).
 *   BROKEN_HEAL_NO_SUBMIT (was BROKEN_FA_WAIT) the healer waits for room
 *                      for a NOP WITHOUT submitting the NOPs it wrote
 *                      before: with two deaths (one dead in a hole, one
 *                      dead waiting for room past the ring behind it) the
 *                      room needs those very NOPs: deadlock.
 *   TSO_PLAIN_RELEASE  (with TSO) the S7d lease release is a plain store:
 *                      the holder's S7e load passes its own buffered release
 *                      and a late producer's S6a/S6c still finds the lease
 *                      held and returns: a lost doorbell (stall).
 *   BROKEN_NO_KILL     (with MAXSTALL) no stall watch: a producer stopped
 *                      holding a reservation or the lease is never killed,
 *                      and everyone behind it waits for ever (invalid end
 *                      state).
 *   BROKEN_WAIT_LEASE  a producer that finds the lease held at S6a spins
 *                      until it is free (NVSHMEM's post_send_lock): with -DNP
 *                      Spin finds the cycle where it waits on a preempted or
 *                      dead holder (invariant 5).
 * No longer variants: TSO_NO_FENCE (the S6a lease CAS, a lock cmpxchg,
 * drains the store buffer whether it succeeds or fails, so x86-TSO cannot
 * show the S6b fence is needed: it is there for C11/Arm, where a failed
 * CAS is only a load), and BROKEN_NO_RECHECK (return at once on a failed
 * S6a CAS, no S6b/S6c) is not one: Spin verifies it (see submit below).
 * The model used to reserve by CAS (flow control before any position is
 * taken, so nobody ever waits for room); the C code reserves by fetch-add
 * and waits (S4b), and so does the model now: the CAS reserve is gone.
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
#ifndef MAXGIVEUP
#define MAXGIVEUP 1
#endif
#ifndef MAXSTALL
#define MAXSTALL 0
#endif

#define MAXPOS (NPROD * POSTS * KMAX)
#define HEALER NPROD /* the healer's id; lease owner ids are id + 1 */

/* producers[].state (design: idle / reserving / building); DEAD is
 * `noticed[]` below, so that the dead's last claim stays readable */
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

/* ---- producers[]: the claim, read whole (C: a seqlock on resv_gen) ---- */
byte pst[NPROD];  /* IDLE / RESERVING / BUILDING */
byte ppos[NPROD]; /* position of the reservation (valid when BUILDING) */
byte plen[NPROD]; /* its length (valid when BUILDING) */
byte pgen[NPROD]; /* resv_gen: odd from S2 to S4 (mid-reservation) */
bool noticed[NPROD]; /* state DEAD: ssqd's retire() marked it (H0) */

/* ---- ghosts: the checker's bookkeeping, not protocol state ---- */
byte cover[MAXPOS]; /* number of published WQEs covering each WQEBB */
bool dead[NPROD];   /* it died (ssqd learns it later, from the socket) */
byte ndead, nnoticed, nfinished;
bool healer_done;
bool stalled[NPROD]; /* stopped (SIGSTOP, a debugger) and not killed yet */
byte nstall, nkilled;

/*
 * Die after this step (at most MAXDEAD deaths per run; the healer never
 * dies: ssqd's own death is recovery, out of scope). A dead process's
 * locals are cleared in the same step so that states differing only in
 * them are one state (the healer declares the producer-only names too).
 *
 * Or stop after this step (at most MAXSTALL stops per run): SIGSTOP, a
 * debugger, a preemption longer than --stall-ms, anywhere - holding a
 * reservation open, mid-reservation, holding the doorbell lease. The
 * process makes no step until ssqd's stall watch (Watch below) kills it
 * (its locals cleared at once: it never uses them again);
 * it never resumes on its own here, the case that stalls the others for
 * ever without the watch. (A stopped process that resumes before the kill
 * lands and is killed a few steps later is a death at that later step:
 * MAYDIE covers it.) The blocking guard breaks the atomic step, as a
 * stopped process lets everyone else run.
 */
#define MAYDIE(who) \
	if \
	:: (who) < NPROD && ndead - nkilled < MAXDEAD -> \
		dead[who] = true; ndead++; \
		k = 0; r = 0; pos = 0; h = 0; n = 0; posts = 0; \
		goto died \
	:: (who) < NPROD && nstall < MAXSTALL -> \
		stalled[who] = true; nstall++; \
		k = 0; r = 0; pos = 0; h = 0; n = 0; posts = 0; \
		!stalled[who]; \
		assert(dead[who]); \
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
 * until the buffer is empty. A load reads memory: no producer load can
 * hit its own buffered store (the scan and S7e run with the buffer
 * drained by the lease CAS), so no forwarding is modelled. The healer stays sequentially
 * consistent. The S5 publish word is a plain mov (a C11 release store);
 * the S6a lease CAS drains the buffer (succeeding or failing), so the
 * common path has no fence at all; the S6b fence after a failed CAS is a
 * no-op here (see submit). TSO_PLAIN_RELEASE makes the S7d lease release a
 * plain mov: the store-buffer race the test requires Spin to find. The
 * holder's S7c store of `published` is not buffered (see S7c).
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
		:: sbk[b] == SB_RESERVING -> pst[i] = RESERVING; pgen[i]++
		:: sbk[b] == SB_BUILDING ->
			ppos[i] = sbp[b];
			plen[i] = sbl[b];
			pst[i] = BUILDING;
			pgen[i]++
		:: sbk[b] == SB_PUB ->
			assert(sbp[b] + sbl[b] <= completed + RING);
			wlen[sbp[b] % RING] = sbl[b];
			seq[sbp[b] % RING] = sbp[b] + 1;
			ghost_publish(sbp[b], sbl[b], q)
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
/* a claim store; RESERVING and BUILDING also step resv_gen (odd, even) */
#define CLAIM(who, kind, state, p, l) \
	ppos[who] = p; plen[who] = l; pst[who] = state; \
	pgen[who] = pgen[who] + ((state) == IDLE -> 0 : 1)
#endif

/*
 * S6/S7 and H4: submit. `published` (the head of the contiguous published
 * prefix) is written ONLY by the holder of the doorbell lease, with a plain
 * store: no CAS on it, and no fence on the common path. Every submitter
 * tries the lease (never waits for it); the holder scans the publish words
 * from `published`, moves `published`, rings, releases the lease, then looks
 * once more at the head slot: a producer that found the lease held returned,
 * counting on that last look (or on a later holder's scan).
 *
 * ORDER (the lost-doorbell race, store-buffer pattern): a late producer
 * stores its publish word (S5, release) and then reads the lease (its S6a
 * CAS fails, and S6c loads it again); the holder stores the lease (S7d,
 * seq_cst) and then reads the head slot's publish word (S7e, seq_cst). Each
 * side needs a full barrier between its store and its load, or both miss
 * and the WQE is never rung. The holder's is the seq_cst release (x86 xchg;
 * TSO_PLAIN_RELEASE shows the plain mov fails). The late producer's is the
 * S6b seq_cst fence after a FAILED CAS: in C11 a failed CAS is only a load,
 * so nothing orders our release publish store before it, and on Arm the
 * publish can still be in flight when the holder's S7e looks. On x86 the
 * lock cmpxchg drains the store buffer whether it succeeds or fails, so
 * the fence costs nothing there and x86-TSO (-DTSO) cannot show it is
 * needed: the model keeps it (a no-op wait on an already empty buffer) to
 * match the C code, and the test has no TSO_NO_FENCE variant any more.
 * Returning at once on a failed CAS (no S6b/S6c; `goto sub_done` for
 * `goto sub_recheck`) is not a broken variant either: Spin verifies it,
 * sequentially consistent and on TSO alike (the failed CAS read a lease
 * value the holder's seq_cst release later overwrote, so our publish, before
 * the CAS, is visible to the holder's S7e after its release). S6c is there
 * for what the model cannot show: in C11 the S6b fence, not the failed
 * CAS, is what orders our publish, and a holder may release between the
 * CAS's load and the fence; the S6c load after the fence is the one the
 * Dekker argument pairs with the holder's S7d/S7e, so a free lease there
 * means we must try again.
 */
inline submit(who, h, n)
{
	n = 0; /* (already 0: Spin wants a statement before the label) */
sub_try:
	atomic {
		/* S6a CAS lease 0 -> who + 1 (seq_cst RMW; x86 lock cmpxchg:
		 * drains the store buffer, also when it fails). */
		DRAINED(who);
		if
		:: lease == 0 -> lease = who + 1
#if defined(BROKEN_WAIT_LEASE)
		:: else -> goto sub_try /* spin until free (NVSHMEM's lock) */
#else
		:: else -> goto sub_recheck
#endif
		fi;
		MAYDIE(who)
	}
	goto sub_hold;
sub_recheck:
	atomic {
		/* S6b seq_cst fence (a failed CAS is only a load in C11: the
		 * fence orders our publish store before the load below; a no-op
		 * on x86, whose cmpxchg already drained the buffer), then S6c
		 * load the lease (seq_cst): free -> try again; held -> return,
		 * the holder's S7e (or a later holder's scan) covers us. */
		DRAINED(who);
		if
		:: lease == 0 -> goto sub_try
		:: else -> goto sub_done
		fi
	}
sub_hold:
	atomic {
		/* S7b (lease held) load `published` (only holders write it, so
		 * it is what the last holder left) and scan the publish words
		 * from there, jumping by length. One step: while we hold the
		 * lease `published` does not move, so no slot at or past it is
		 * reused (reuse needs `completed`, hence `published`, past it),
		 * and publish words there only go from unpublished to
		 * published: a scan reading slot after slot returns what one
		 * snapshot at its last read would. */
		h = published;
		n = h;
		do
#ifdef BROKEN_PER_WQEBB
		:: seq[n % RING] == n + 1 -> n++
#else
		:: seq[n % RING] == n + 1 -> n = n + wlen[n % RING]
#endif
		:: else -> break
		od;
		MAYDIE(who)
	}
	atomic {
		/* S7c (1) if the scan found anything, published := n: a plain
		 * (release) store, only the holder writes it (release: the
		 * WQE contents, for the router and the next holder).
		 * TSO: done in memory at once, not buffered. Equivalent:
		 * our buffer is empty here (the S6a CAS drained it), TSO
		 * keeps our later stores (DBR, bell) after this one, we make
		 * no load of another's data before the S7d xchg drains it,
		 * and a dying process's stores drain before ssqd learns of
		 * the death (H0). */
		if
		:: n > h -> published = n
		:: else -> skip
		fi;
		h = 0;
		MAYDIE(who)
	}
	atomic {
		/* S7c (2) if `published` (n, what we left it) is past the
		 * last MMIO doorbell, write the DBR record (after the
		 * udma_to_device barrier). `bell`, not `dbr`, decides: a
		 * holder that died between (2) and (3) left dbr ahead of
		 * bell, and the device may not have looked. A holder that
		 * died between (1) and (2) left `published` ahead of bell:
		 * the next holder rings it though its own scan finds nothing
		 * new. */
		if
		:: n > bell -> assert(n >= dbr); dbr = n /* Invariant 2: never decreases */
		:: else -> goto sub_release
		fi;
		MAYDIE(who)
	}
	atomic {
		/* S7c (3) the 8-byte MMIO doorbell (the first 8 bytes of the
		 * control segment of the WQE that ends at n),
		 * mmio_flush_writes, then the ctl copy `bell`. If a holder
		 * dies between the MMIO and the ctl copy, the next rings the
		 * same value again: nothing new for the device. */
		bell = n;
		MAYDIE(who)
	}
sub_release:
	atomic {
		/* S7d release the lease: seq_cst store (after the flush) */
#if defined(TSO) && defined(TSO_PLAIN_RELEASE)
		sb_push(who, SB_LEASE_FREE, 0, 0);
#else
		DRAINED(who); /* x86: xchg */
		lease = 0;
#endif
#ifdef BROKEN_NO_REREAD
		n = 0;
#endif
		MAYDIE(who)
	}
#ifndef BROKEN_NO_REREAD
	atomic {
		/* S7e load the publish word of the slot at `published` as we
		 * left it (n; seq_cst, after the release): published there
		 * means a producer may have published at the head after our
		 * scan and found the lease held: submit again. (If a later
		 * holder has moved `published` past n since, the word is n + 1
		 * or the slot's next pass, and that holder's scan covered
		 * whatever was published before our release.) */
		if
		:: seq[n % RING] == n + 1 -> goto sub_try
		:: else -> n = 0
		fi
	}
#endif
sub_done:
	n = 0
}

/* ---------------------------------------------------------------- producer */

/* ---------------------------------------------------------------- producer */
proctype Producer(byte me)
{
	byte k, r, pos, h, n, posts, q;

next_post:
	if
	:: posts == POSTS -> goto finished
	:: else -> skip
	fi;
	atomic {
		/* S1a load `reserve` (relaxed); the WQE size k is the caller's */
		if
		:: k = 1
		:: k = KMAX
		fi;
		r = reserve
	}
	atomic {
		/* S1b load `completed` (acquire) and check for room. A
		 * separate step: `reserve` may have moved and `completed`
		 * advanced since S1a, so the pair can pass where no single
		 * snapshot would (more producers past the ring, S4b). No
		 * room: -EAGAIN owning nothing (C: after a bounded wait
		 * polling the CQ; not modelled, the device completes on its
		 * own). */
		if
		:: r + k > completed + RING ->
			k = 0;
			r = 0;
			posts++;
			goto next_post /* -EAGAIN */
		:: else -> r = 0
		fi
	}
	atomic {
		/* S2 resv_gen odd, state RESERVING (release stores; TSO:
		 * buffered, drained by S3's lock xadd), BEFORE the add: a
		 * healer that finds us dead between S3 and S4 knows an
		 * unrecorded range may be ours; a live one it waits out. */
		CLAIM(me, SB_RESERVING, RESERVING, 0, 0);
		MAYDIE(me)
	}
	atomic {
		/* S3 fetch-add `reserve` (seq_cst; x86 lock xadd: drains the
		 * store buffer). The positions are ours from here on: they
		 * cannot be given back, only published (by us or the
		 * healer). Dying right after it is the hard case: positions
		 * taken, no claim recorded. */
		DRAINED(me);
		pos = reserve;
		reserve = reserve + k;
		MAYDIE(me)
	}
	atomic {
		/* S4 record the claim (pos, k), BUILDING, resv_gen even: one
		 * claim, read whole by the healer (C: seqlock). */
		CLAIM(me, SB_BUILDING, BUILDING, pos, k);
		MAYDIE(me)
	}
#ifdef BROKEN_FA_EAGAIN
	atomic {
		/* (broken) no room after the add: give up with -EAGAIN. The
		 * positions are taken: a hole nobody claims and, with no
		 * death to heal, nobody fills. */
		if
		:: pos + k > completed + RING ->
			CLAIM(me, SB_IDLE, IDLE, 0, 0);
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
		/* S4b producers that passed S1b together may have taken
		 * positions past the ring: wait, without a bound, until the
		 * device has completed what our slots still hold (everyone
		 * below us publishes or is healed, so this ends). Dying while
		 * waiting is dying after S4 (the wait changes nothing). */
		pos + k <= completed + RING;
		MAYDIE(me)
	}
#endif
	/* build the WQE in its slots (abstract); invariant 3 at S5 */
#ifdef BROKEN_PER_WQEBB
	/* S5 (broken) each WQEBB published on its own, in ascending order */
	wlen[pos % RING] = k;
	q = pos;
	do
	:: q < pos + k ->
		atomic {
			assert(q < completed + RING);
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
		 * store (x86: a plain mov): the S6a CAS (or, if it fails,
		 * the S6b fence) orders it before our loads of the lease. */
		assert(pos + k <= completed + RING); /* invariant 3 */
#ifdef TSO
		sb_push(me, SB_PUB, pos, k);
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
	/* S6, S7: submit (take the lease and ring, or leave it to the
	 * holder) */
	submit(me, h, n);
	posts++;
	goto next_post;

finished:
	nfinished++;
died:
	skip
}


/* -------------------------------------------------------------- healer */
/* Where the healer's one submit (H4, also before a wait and on a timeout)
 * returns to: Promela inlines are textual, so submit's labels may appear
 * once per proctype. */
#define RET_WAIT 1    /* wait_room: the NOPs so far are submitted, now wait */
#define RET_TIMEOUT 2 /* -ETIMEDOUT: ssqd retries later (heal_pending) */
#define RET_NOTICE 3  /* -ETIMEDOUT, then ssqd processes a death notice */
#define RET_DONE 4    /* H4: healed up to r0 */

/*
 * The deadline. At any wait and any walk step the heal may find its
 * deadline past: it submits what it wrote and returns -ETIMEDOUT. For no
 * reason the model allows it MAXGIVEUP times in a run (a preempted
 * producer, a slow device: the retry then finds things moved on); while a
 * death is waiting to be noticed, at any time (ssqd's loop then takes the
 * death notice: retire() marks the record DEAD and heals again; at most
 * MAXDEAD times). Past that a wait must end by itself: no invariant may
 * rest on the deadline.
 */
#define DEADLINE \
	:: atomic { giveups < MAXGIVEUP -> giveups++; sret = RET_TIMEOUT }; \
		goto hsubmit \
	:: atomic { ndead > nnoticed -> sret = RET_NOTICE }; \
		goto hsubmit

/* x lies in a live (not DEAD) producer's recorded claim */
#define LIVE_CLAIM(j, x) \
	(pst[j] == BUILDING && !noticed[j] && ppos[j] <= (x) && (x) < ppos[j] + plen[j])

proctype Healer()
{
	byte i, j, x, R, h, n, q, sret, giveups;
	bool pending;
	byte g[NPROD]; /* resv_gen of every claim, read after the r0 snapshot */
	byte k, r, pos, posts; /* never used: named by MAYDIE, which never fires here */

main:
	do
	:: ndead > nnoticed -> goto pick /* a death notice (socket, pidfd) */
	:: pending -> goto heal          /* progress(): retry every 10 ms */
	:: atomic { nfinished + ndead == NPROD && nnoticed == ndead && !pending -> break }
	od;
	healer_done = true;
	goto died;

pick:
	atomic {
		i = 0;
		do
		:: dead[i] && !noticed[i] -> break
		:: else -> i++
		od
	};
	/* H0 retire(): the death notice comes after the dead's last store
	 * landed (its store buffer drained); the record becomes DEAD. */
	atomic {
		DRAINED(i);
		noticed[i] = true;
		nnoticed++;
		i = 0
	};
heal:
	/* H1 break a lease a DEAD record holds (one CAS per DEAD record in
	 * C; the lease has one holder, so at most one succeeds) */
	atomic {
		if
		:: lease > 0 && lease <= NPROD && noticed[lease - 1] -> lease = 0
		:: else -> skip
		fi
	};
	/* H2 snapshot r0, then every claim's generation. ORDER: r0
	 * (acquire) BEFORE the claims: a range below r0 was handed out by
	 * a fetch-add already done, whose producer said RESERVING (odd
	 * generation) before it. */
#ifndef BROKEN_HEAL_LATE_R
	atomic { R = reserve };
#endif
	j = 0;
	do
	:: j < NPROD -> atomic { g[j] = pgen[j]; j++ }
	:: else -> break
	od;
	/* wait out every live producer that was mid-reservation (odd
	 * generation): it may own a range below r0 not recorded yet. One
	 * that enters RESERVING later takes positions >= r0. */
	j = 0;
	do
	:: j == NPROD -> break
	:: j < NPROD ->
		if
		:: atomic { (g[j] % 2 == 0 || noticed[j] || pgen[j] != g[j]) -> j++ }
		DEADLINE
		fi
	od;
	atomic {
		j = 0;
		for (q : 0 .. NPROD - 1) {
			g[q] = 0 /* done with: fewer states */
		}
		q = 0
	};
#ifdef BROKEN_HEAL_LATE_R
	atomic { R = reserve };
#endif
	/* H3 walk x from `published` to r0 in position order */
	atomic { x = published };
walk:
	if
	:: x >= R -> goto walk_done
	:: else -> skip
	fi;
	if
	:: skip
	DEADLINE
	fi;
	atomic {
		/* load `published`: below it all is published; then the
		 * claims (C's live_claim: each read whole, as a seqlock).
		 * One step: a live range below r0 stays claimed until its
		 * publish word is stored (S5 before S5b), so a claim that
		 * no longer covers x means x is already published, whatever
		 * order the loads take. */
		if
		:: x < published -> x = published; goto walk
		:: else -> skip
		fi;
		j = 0;
		do
		:: j == NPROD -> break
		:: j < NPROD && LIVE_CLAIM(j, x) -> x = ppos[j] + plen[j]; j = 0; goto walk
		:: j < NPROD && !LIVE_CLAIM(j, x) -> j++
		od;
		j = 0
	};
	atomic {
		/* load the publish word at x (position + 1 and length, one
		 * word in the model; C re-checks a separate length) */
		if
		:: seq[x % RING] == x + 1 -> x = x + wlen[x % RING]; goto walk
		:: seq[x % RING] > x + 1 ->
			/* a later pass: x completed meanwhile, so
			 * `published` passed it; the top resumes there */
			assert(published > x);
			goto walk
		:: seq[x % RING] < x + 1 -> skip /* a dead producer's */
		fi
	};
#ifdef BROKEN_NO_HARDCASE
	atomic {
		/* (broken) only a range a DEAD record recorded is healed */
		j = 0;
		do
		:: j == NPROD -> x++; j = 0; goto walk /* unrecorded: left */
		:: j < NPROD && noticed[j] && pst[j] == BUILDING &&
		   ppos[j] <= x && x < ppos[j] + plen[j] -> j = 0; break
		:: j < NPROD && !(noticed[j] && pst[j] == BUILDING &&
		   ppos[j] <= x && x < ppos[j] + plen[j]) -> j++
		od
	};
#endif
	/* H3 wait_room: the NOP at x overwrites slot x % RING: its last
	 * pass must have completed (invariant 3). */
	atomic {
		if
		:: x + 1 <= completed + RING -> goto nop
		:: else -> skip
		fi
	};
#ifndef BROKEN_HEAL_NO_SUBMIT
	/* No room: SUBMIT the NOPs written so far first. The room may
	 * need exactly them: a producer that died waiting for room past
	 * the ring (S4b) behind another dead producer's hole, which this
	 * walk has just filled; once the live producers are idle nobody
	 * else moves `published` over them. */
	sret = RET_WAIT;
	goto hsubmit;
#endif
wait_room:
	if
	:: atomic { x + 1 <= completed + RING }
	DEADLINE
	fi;
nop:
	atomic {
		/* H3 a one-WQEBB NOP at x, published like any WQE (S5):
		 * nobody else publishes x (below r0, no live claim, and the
		 * dead do nothing), and its slot is not reused before it is. */
		assert(x + 1 <= completed + RING); /* invariant 3 */
		wlen[x % RING] = 1;
		seq[x % RING] = x + 1;
		ghost_publish(x, 1, q);
		x++
	};
	goto walk;
walk_done:
	sret = RET_DONE;
hsubmit:
	/* H4 submit like a producer (also before a wait and on a timeout):
	 * the dead may have published and died before its submit, moved
	 * `published` and died before ringing, or held the lease H1 broke
	 * while others returned at S6c counting on its S7e. */
	submit(HEALER, h, n);
	if
	:: sret == RET_WAIT -> sret = 0; goto wait_room
	:: sret == RET_TIMEOUT || sret == RET_NOTICE || sret == RET_DONE ->
		atomic {
			pending = (sret != RET_DONE); /* heal_pending */
			x = 0; R = 0; j = 0;
			for (q : 0 .. NPROD - 1) {
				g[q] = 0
			}
			q = 0;
			if
			:: sret == RET_NOTICE -> sret = 0; goto pick
			:: else -> sret = 0; goto main
			fi
		}
	fi;
died:
	skip
}
/* ---------------------------------------------------------- stall watch */
/*
 * ssqd's stall watch (src/ctrl/daemon/watch/stall.c): a producer whose
 * hold has not moved for --stall-ms is killed (SIGKILL). In the model it
 * may kill a stopped producer at any time after it stopped, which covers
 * every deadline; what it must never do is heal a live one: the kill only
 * makes the producer dead, and the healer takes over, as after any death,
 * once it notices (H0: in C, the client's socket closes). BROKEN_NO_KILL:
 * no watch, as before: a stopped producer holds everyone up for ever.
 */
proctype Watch()
{
	byte i;

end_watch:
	do
	:: atomic {
		nstall > nkilled ->
#ifdef BROKEN_NO_KILL
		false;
#endif
		i = 0;
		do
		:: stalled[i] -> break
		:: else -> i++
		od;
		stalled[i] = false;
		dead[i] = true;
		ndead++;
		nkilled++;
		i = 0
	   }
	od
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
#if MAXSTALL > 0
		run Watch();
#endif
#ifdef TSO
		for (q : 0 .. NPROD - 1) {
			run Drainer(q)
		}
#endif
		q = 0
	}
	/* Every live producer finished, every death noticed and healed. */
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
