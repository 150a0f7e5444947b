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
 * (store buffers, see below), which checks the seq_cst lease release
 * (S7d) the lost-doorbell race needs; the S6b fence it cannot check.
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
 *   BROKEN_NO_REREAD   the lease holder skips S7e (no look at the head slot
 *                      after releasing the lease): a producer that published
 *                      the head after the holder's scan and found the lease
 *                      held is never advanced nor rung (stall: `published`
 *                      stops below `reserve`).
 *   BROKEN_NO_HARDCASE the healer ignores a producer that died between the
 *                      reserve and recording its claim: the hole is never
 *                      filled, `published` stops below `reserve` (stall).
 *   BROKEN_HEAL_LATE_R the healer snapshots `reserve` after reading the
 *                      claims instead of before: it NOPs over a live
 *                      producer's fresh reservation (WQEBB published twice).
 *   BROKEN_PER_WQEBB   every WQEBB gets its own publish word, published in
 *                      ascending order and scanned one by one (S7b):
 *                      `published` and so the doorbell can stop inside a
 *                      multi-WQEBB WQE.
 *   BROKEN_FA_EAGAIN   design.md's first draft: fetch-add, then flow control
 *                      with -EAGAIN: the given-up range is a hole nobody
 *                      fills (stall).
 *   BROKEN_FA_WAIT     check for room, fetch-add, and a producer that lost
 *                      the race for the last room waits for the device: the
 *                      healer too must wait for room, which may need a hole
 *                      only it can fill (deadlock with two deaths).
 *   TSO_PLAIN_RELEASE  (with TSO) the S7d lease release is a plain store:
 *                      the holder's S7e load passes its own buffered release
 *                      and a late producer's S6a/S6c still finds the lease
 *                      held and returns: a lost doorbell (stall).
 *   BROKEN_WAIT_LEASE  a producer that finds the lease held at S6a spins
 *                      until it is free (NVSHMEM's post_send_lock): with -DNP
 *                      Spin finds the cycle where it waits on a preempted or
 *                      dead holder (invariant 5).
 * No longer variants: TSO_NO_FENCE (the S6a lease CAS, a lock cmpxchg,
 * drains the store buffer whether it succeeds or fails, so x86-TSO cannot
 * show the S6b fence is needed: it is there for C11/Arm, where a failed
 * CAS is only a load), and BROKEN_NO_RECHECK (return at once on a failed
 * S6a CAS, no S6b/S6c) is not one: Spin verifies it (see submit below).
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
		k = 0; r = 0; pos = 0; h = 0; n = 0; posts = 0; \
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
		:: sbk[b] == SB_RESERVING -> pst[i] = RESERVING
		:: sbk[b] == SB_BUILDING ->
			ppos[i] = sbp[b];
			plen[i] = sbl[b];
			pst[i] = BUILDING
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
#define CLAIM(who, kind, state, p, l) \
	ppos[who] = p; plen[who] = l; pst[who] = state
#endif

/*
 * S6/S7 and H4/H5: submit. `published` (the head of the contiguous published
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
proctype Producer(byte me)
{
	byte k, r, pos, h, n, posts, q;

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
		 * store (x86: a plain mov): the S6a CAS (or, if it fails,
		 * the S6b fence) orders it before our loads of the lease. */
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
	byte i, j, p, R, h, n, q;
	bool claimed;
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
		/* H4, H5: submit like a producer, always: the dead may have
		 * published and died before its submit, moved `published`
		 * and died before ringing, or held the lease we just broke
		 * while others returned at S6c counting on its S7e. Our
		 * submit takes the lease like anyone's (or finds a live
		 * holder, whose S7e covers us) and scans from `published`. */
		submit(HEALER, h, n)
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
