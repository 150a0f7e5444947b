/*
 * ssq_combine.pml - the hand-over of <ssq/combine.h> (issue 29), checked
 * with Spin by tests/test_ssq_combine_model.sh.
 *
 * NOWN survivors each post K requests through combining and then settle
 * the last (ssq_combine_flush); a victim posts one and combines, and may
 * die (MAXDEAD 1) holding the role (SSQ_HOOK_COMBINE_ROLE), after taking
 * (SSQ_HOOK_COMBINE_TAKEN) or mid-batch (SSQ_HOOK_COMBINE_BUILT), or on
 * the lone fast path (L1: role free and no bit pending, then the role's
 * CAS; no bit pending still: it posts its own request itself, its slot
 * untouched) holding the role and its reservation
 * (SSQ_HOOK_COMBINE_LONE), or the role after publishing; then the
 * healer (ssqd: ssq_ctl_heal, ssq_ctl_mark_dead) fills its reserved,
 * unpublished positions with NOPs, frees the role and takes its own
 * POSTED request back. The reservation itself (reserve, record, publish
 * words, doorbell) is ssq_queue.pml's: here a reservation is one atomic
 * step, a publish one store.
 *
 * Checked: each survivor request is published exactly once, in its
 * owner's order (C: completions in order), the victim's at most once;
 * every survivor ends (no wait on a dead combiner: invalid end states);
 * no request is left handed over when its owner has settled.
 * Promela is sequentially consistent: the seq_cst pairs C8/C9 against
 * C11/C12 are what the C code gives it.
 *
 * Broken variants (each must fail): BROKEN_BLIND_TAKEBACK (the owner
 * empties its word with a store, not a CAS against the combiner's take:
 * a request published twice), BROKEN_NOP_AS_POSTED (a healer's NOP taken
 * for the owner's WQE: a request lost), BROKEN_NO_RECHECK (the holder
 * lets the role go without looking again, and owners do not settle at
 * the end: a request left handed over), BROKEN_LONE_UNSETTLED (the fast
 * path taken before the last request is settled: a request published
 * ahead of its owner's earlier one), BROKEN_SETTLE_ROUND (with
 * DIE_AFTER_SWAP and SETTLE_BOUND: settle goes round after its own
 * combine without taking its request back; a request POSTED whose bit a
 * dead combiner swapped out spins its owner for ever).
 *
 * Batches (SLOT=2; SLOT=1 is one request per slot, as before batches):
 * <ssq/combine.h>'s, first modelled from the prototype (proto-batch
 * 95f16f8). A slot holds SLOT requests under one
 * word POSTED(seq, n). The owner appends while its batch is POSTED with
 * its n and nothing is owed: request n, then the CAS POSTED(seq, n) ->
 * POSTED(seq, n + 1); a failed CAS (a combiner took it) leaves the request
 * to the slow path, after the batch's outcome. A combiner reads n with the
 * bits, reserves for all it read, and takes a prefix: POSTED(seq, m >= n)
 * -> TAKEN(pos, n); it publishes in order and CASes DONE(pos, n) per
 * batch. The owner settles by its own count (hand_n: an append after the
 * take is not in the word): DONE, all n; TAKEN, the prefix published in
 * its name (a healer's NOPs are a suffix); the rest it posts itself, in
 * order, in one reservation. SCRIBBLE=s: survivor 0's request s is not one
 * a combiner builds (its slot scribbled): a NOP in nobody's name. The
 * combiner then NOPs the rest of that batch and writes no DONE, so what
 * was published stays a prefix; PROTO_SCRIBBLE_GOES_ON (the prototype:
 * build on, DONE for all) must fail: a later request published twice, or
 * counted in `posted` but never published as its owner's. Also checked:
 * each survivor's `posted` equals what was published in its name.
 * Broken batches (each must fail): BROKEN_BATCH_SUFFIX (the whole batch
 * posted again when only a prefix was published: duplicates),
 * BROKEN_BATCH_APPEND (the append a store, not a CAS: a taken batch
 * POSTED again, published twice), BROKEN_BATCH_COUNT (the rest counted
 * from the word's n: an append after the take lost), BROKEN_BATCH_FIRST
 * (the outcome read at the first position only, as for one request: a
 * healer's NOP after a mid-batch death taken as published; it verifies
 * with MAXDEAD=0). KLAST: the last survivor's posts (default K). CAP:
 * the combiner may take any batch of two as a prefix of one (h-batch8's
 * cap at half the ring), its bit not set again. VPOSTS: the victim's
 * posts (default 1; 0: an idle victim, which never combines or dies).
 *
 * DIE_AFTER_SWAP lets the victim die between its swap of the bits and
 * its takes; SETTLE_BOUND bounds settle's rounds with its request still
 * POSTED after combining (tests/test_ssq_combine_adv_model.sh).
 * tests/test_ssq_combine_model.sh runs NOWN=1 K=2 and NOWN=2 K=1
 * (0.27 and 4.4 million states with the fast path; 0.22 and 3.1 without);
 * NOWN=2 K=2 MAXDEAD=0 verified without it (19 million states, 1 GB);
 * NOWN=2 K=2 with a death is past 2 GB. SLOT=2: NOWN=1 K=3 2.0 million
 * states (2.4 with DIE_AFTER_SWAP, 2.2 with CAP); NOWN=2 K=2 VPOSTS=0
 * MAXDEAD=0 CAP 1.0 million (K=3: past 2 GB); NOWN=2 K=2 with the
 * victim posting (KLAST=1 too, MAXDEAD=0 too) is past 2 GB (34 million
 * states stored, not done).
 */

#ifndef NOWN
#define NOWN 2
#endif
#ifndef K
#define K 2
#endif
#ifndef KLAST
#define KLAST K /* the last survivor's posts */
#endif
#ifndef VPOSTS
#define VPOSTS 1 /* the victim's posts: 0, an idle victim */
#endif
#ifndef SLOT
#define SLOT 1
#endif
#ifndef PASSES
#define PASSES 2
#endif
#ifndef MAXDEAD
#define MAXDEAD 1
#endif
#ifndef SCRIBBLE
#define SCRIBBLE 0
#endif
#if SLOT > 2
#error "SLOT is 1 or 2: OUTCOME_KNOWN reads at most two positions"
#endif

#define VICTIM NOWN
#define KOF(o) ((o) == NOWN - 1 -> KLAST : K) /* survivor o's posts */
#define NPROC (NOWN + 1)
#define NONE 255
#define NOP 254
/*
 * Positions: each request is taken (a prefix, whole or NOPed) at most
 * once and posted directly at most once; each bit set lets at most one
 * take fail (a batch's worth of NOPs); the lone path one each.
 */
#define MAXPOS ((NOWN * K + 1) * (SLOT + 3))

#define EMPTY 0
#define POSTED 1
#define TAKEN 2
#define DONE 3

/*
 * Each producer's hand-over word: state; seq (POSTED: its first request's
 * seq) or position (TAKEN, DONE); n, the requests it holds (POSTED) or a
 * combiner took (TAKEN, DONE).
 */
byte wstate[NPROC];
byte wval[NPROC];
byte wn[NPROC];
byte hreq[NPROC * SLOT]; /* the slot's requests: their seqs */
byte owed[NPROC];        /* hand_owed: ours to post ourselves, first */
byte posted[NPROC];      /* me->posted: what the owner counts published */
byte pending;            /* comb_pending, a bit per producer */
byte role;               /* comb_role: 0 or id + 1 */
byte reserve;            /* positions handed out */
byte lowner[MAXPOS];
byte lseq[MAXPOS];
bool lpub[MAXPOS]; /* the publish word at each position */
byte pubcount[MAXPOS];
byte rnext[NPROC], rhi[NPROC]; /* the open reservation: [rnext, rhi) */
bool dead[NPROC];
byte ndead;
byte finished;

#define RESERVE(cnt)                                                           \
	base = reserve;                                                        \
	reserve = reserve + (cnt);                                             \
	assert(reserve <= MAXPOS)

/* A publish, and the reservation's next unpublished position. */
#define PUBLISH(pos, own, sq)                                                  \
	atomic {                                                               \
		lowner[pos] = own;                                             \
		lseq[pos] = sq;                                                \
		pubcount[pos]++;                                               \
		lpub[pos] = 1;                                                 \
		rnext[me] = pos + 1                                            \
	}

/*
 * Survivor 0's request SCRIBBLE (0: none) is not one a combiner builds:
 * its slot scribbled after the hand-over (the slot is client-writable).
 * ssq__combine_build publishes a NOP in nobody's name in its place.
 */
#define BUILDS(own, sq) ((own) != 0 || (sq) != SCRIBBLE)

/* The victim may die here (a hook point); survivors never do. */
#define MAYDIE                                                                 \
	if                                                                     \
	:: me == VICTIM && ndead < MAXDEAD -> ndead++; dead[me] = 1; goto died \
	:: true -> skip                                                        \
	fi

/*
 * ssq__combine: the role is ours. Each batch POSTED whose bit is pending:
 * its n as read (cnt), taken as a prefix by a CAS that needs the same seq
 * and at least cnt requests (the owner may have appended meanwhile), all
 * in one reservation, published in order, DONE per batch.
 */
inline combine()
{
	pass = 1;
	MAYDIE;
	do
	:: /*
	    * Swap the bits out, and read each word (A14a, A14b). One step:
	    * the words' loads commute with the owners' appends and take-backs
	    * (other lines), and an owner's bit set after its append may be
	    * ordered after the loads; a word read later reads the same.
	    */
		d_step {
			bits = pending;
			pending = 0;
			n = 0;
			total = 0;
			i = 0;
			do
			:: i < NPROC ->
				if
				:: (bits & (1 << i)) && wstate[i] == POSTED ->
					ids[n] = i;
					ws[n] = wval[i];
					cnt[n] = wn[i];
					total = total + wn[i];
					n++
				:: else -> skip
				fi;
				i++
			:: else -> break
			od;
			i = 0
		}
#ifdef CAP
		/*
		 * ssq__combine's room cap (h-batch8): a batch past half the
		 * ring is taken as a shorter prefix, its bit not set again:
		 * here any batch of two may be taken as one.
		 */
		k = 0;
		do
		:: k < n && cnt[k] > 1 -> cnt[k]--; total--; k++
		:: k < n -> k++
		:: else -> k = 0; break
		od;
#endif
#ifdef DIE_AFTER_SWAP
		/* in ssq__reserve: the room spin, or after the fetch-add */
		MAYDIE;
#endif
		if
		:: n > 0 ->
			atomic { /* ssq__reserve, recorded */
				RESERVE(total);
				rnext[me] = base;
				rhi[me] = reserve;
				k = 0;
				at = base
			}
			do /* C10: take a prefix of cnt[k] of each, at its positions */
			:: k < n ->
				atomic {
					if
					:: wstate[ids[k]] == POSTED && wval[ids[k]] == ws[k] &&
					   wn[ids[k]] >= cnt[k] ->
						wstate[ids[k]] = TAKEN;
						wval[ids[k]] = at;
						wn[ids[k]] = cnt[k]
					:: else -> ids[k] = NONE
					fi;
					at = at + cnt[k];
					k++
				}
			:: else -> break
			od;
			MAYDIE;
			k = 0;
			at = base;
			do /* build, publish (R1a) in order; DONE (R15) per batch */
			:: k < n ->
				do
				:: i < cnt[k] ->
					atomic {
						if
						:: ids[k] == NONE -> PUBLISH(at + i, NOP, 0)
						:: ids[k] != NONE &&
						   BUILDS(ids[k], hreq[ids[k] * SLOT + i]) ->
							PUBLISH(at + i, ids[k],
							        hreq[ids[k] * SLOT + i])
						:: else ->
							/*
							 * Not built: a NOP. The rest of the batch
							 * NOPs too, and no DONE: what was published
							 * stays a prefix. PROTO_SCRIBBLE_GOES_ON:
							 * the prototype (95f16f8) builds on, and
							 * writes DONE for all cnt.
							 */
							PUBLISH(at + i, NOP, 0);
#ifndef PROTO_SCRIBBLE_GOES_ON
							ids[k] = NONE
#else
							skip
#endif
						fi
					};
					MAYDIE;
					i++
				:: else -> i = 0; break
				od;
				atomic {
					if
					:: ids[k] != NONE && wstate[ids[k]] == TAKEN &&
					   wval[ids[k]] == at ->
						wstate[ids[k]] = DONE
					:: else -> skip
					fi;
					at = at + cnt[k];
					k++
				}
			:: else -> break
			od
		:: else -> skip
		fi;
		role = 0; /* C11 */
#ifdef BROKEN_NO_RECHECK
		break
#else
		if /* C12, and C9 again */
		:: pass >= PASSES -> break
		:: pass < PASSES && pending == 0 -> break
		:: pass < PASSES && pending != 0 ->
			if
			:: atomic { role == 0 -> role = me + 1 }; pass++
			:: atomic { role != 0 -> skip }; break
			fi
		fi
#endif
	od
}

/*
 * ssq__hand_post_direct: reserve what we owe, publish it in order from
 * owe_lo. One step: nobody reads a survivor's own positions.
 */
inline direct()
{
	atomic {
		RESERVE(owed[me]);
		i = 0;
		do
		:: i < owed[me] ->
			if /* ssq__combine_build: counted if built */
			:: BUILDS(me, hreq[me * SLOT + owelo + i]) ->
				lowner[base + i] = me;
				lseq[base + i] = hreq[me * SLOT + owelo + i];
				posted[me]++
			:: else -> lowner[base + i] = NOP
			fi;
			pubcount[base + i]++;
			lpub[base + i] = 1;
			i++
		:: else -> i = 0; break
		od
	}
}

/* C8, then C9 (or the role already ours, L1): combine. */
inline kick(held)
{
	pending = pending | (1 << me); /* C8 */
	if
	:: held -> combine()
	:: else ->
		if /* C9 */
		:: atomic { role == 0 -> role = me + 1 }; combine()
		:: atomic { role != 0 -> skip }
		fi
	fi
}

/* C13': the owner takes its batch back, the CAS against C10 */
#ifdef BROKEN_BLIND_TAKEBACK
#define TAKEBACK atomic { wstate[me] = EMPTY; owelo = 0; owed[me] = handn }
#else
#define TAKEBACK                                                               \
	atomic {                                                               \
		if                                                             \
		:: wstate[me] == POSTED ->                                     \
			wstate[me] = EMPTY;                                    \
			owelo = 0;                                             \
			owed[me] = handn                                       \
		:: else -> skip                                                \
		fi                                                             \
	}
#endif

/*
 * ssq__hand_outcome's answer is known: DONE, or TAKEN with its first
 * position published and, if that is ours and the combiner took two,
 * the second too (a NOP there, or ours first and then a NOP: a prefix).
 * Positions only go from unpublished to published here (no reuse), so
 * the C code's loads one by one read what this reads at the last load.
 */
#define P0 wval[me]
#define OUTCOME_KNOWN                                                          \
	(wstate[me] == DONE ||                                                 \
	 (wstate[me] == TAKEN && lpub[P0] &&                                   \
	  (lowner[P0] != me || wn[me] < 2 || lpub[P0 + 1])))
#ifdef BROKEN_NOP_AS_POSTED
#define OURS(pos) 1
#else
#define OURS(pos) (lowner[pos] == me)
#endif

/* ssq__hand_settle */
inline settle()
{
	do
	:: wstate[me] == EMPTY && owed[me] == 0 -> handn = 0; break
	:: wstate[me] == EMPTY && owed[me] > 0 ->
		direct(); owed[me] = 0; handn = 0; break
	:: wstate[me] == POSTED ->
		/*
		 * The role if it is free: combine; then, or at once if it is
		 * held, take ours back if it is still POSTED (its bit may be
		 * gone: DIE_AFTER_SWAP) and go round to post it ourselves.
		 * BROKEN_SETTLE_ROUND: the old code, round again after our own
		 * combine, no take-back (a free role and no bit: for ever).
		 */
		if
		:: atomic { role == 0 -> role = me + 1 }; combine();
#ifdef SETTLE_BOUND
			/* a settle that combined and left ours POSTED goes round */
			if
			:: wstate[me] == POSTED -> rounds++; assert(rounds < 3)
			:: else -> skip
			fi;
#endif
#ifndef BROKEN_SETTLE_ROUND
			TAKEBACK
#else
			skip
#endif
		:: atomic { role != 0 -> skip }; TAKEBACK
		fi
	:: OUTCOME_KNOWN ->
		/*
		 * ssq__hand_outcome: DONE says all the combiner took; TAKEN,
		 * the prefix published as ours (a combiner publishes in
		 * order: a healer's NOPs are a suffix). No position is reused
		 * here; in the C code a completed one is (pos + ring), so the
		 * owner read there means "at pos" only while `completed` has
		 * not passed pos, and done_pos answers past it
		 * (test_ssq_combine_settle.c). Ours to post ourselves: the
		 * rest of what we handed over (handn, ours: an append after
		 * the take is not in the word's n), from the first not
		 * published.
		 */
		atomic {
			if
			:: wstate[me] == DONE -> got = wn[me]
			:: else ->
				got = 0;
				do
				:: got < wn[me] && lpub[P0 + got] && OURS(P0 + got) -> got++
				:: else -> break
				od;
#ifdef BROKEN_BATCH_FIRST
				/* the first position read as the whole batch's */
				if
				:: got > 0 -> got = wn[me]
				:: else -> skip
				fi
#else
				skip
#endif
			fi;
#if defined(BROKEN_BATCH_SUFFIX)
			/* the whole batch again when only a prefix was published */
			if
			:: got < handn -> owelo = 0; owed[me] = handn
			:: else -> owelo = got; owed[me] = 0
			fi;
#elif defined(BROKEN_BATCH_COUNT)
			/* the word's n, not ours: an append after the take lost */
			owelo = got;
			owed[me] = wn[me] - got;
#else
			owelo = got;
			owed[me] = handn - got;
#endif
			posted[me] = posted[me] + got;
			wstate[me] = EMPTY;
			got = 0
		}
	od
}

/*
 * ssq__combine_lone: the role ours and no bit pending (L1, L2): reserve
 * one, publish our request @s in our name, our slot untouched; then C11,
 * C12 as a combiner. The victim may die holding the role and the
 * reservation (SSQ_HOOK_COMBINE_LONE), or the role after publishing.
 */
inline lone()
{
	atomic { /* ssq_reserve, recorded */
		RESERVE(1);
		rnext[me] = base;
		rhi[me] = reserve
	}
	MAYDIE;
	atomic { PUBLISH(base, me, s); posted[me]++ }
	MAYDIE;
	role = 0; /* C11 */
#ifndef BROKEN_NO_RECHECK
	if /* C12, and C9 again */
	:: pending != 0 ->
		if
		:: atomic { role == 0 -> role = me + 1 }; combine()
		:: atomic { role != 0 -> skip }
		fi
	:: else -> skip
	fi
#endif
}

/* L1: role free and no bit pending (the loads), then C9's CAS. */
inline lone_try()
{
	held = 0;
	if
	:: role == 0 && pending == 0 ->
		if
		:: atomic { role == 0 -> role = me + 1 }; held = 1
		:: atomic { role != 0 -> skip }
		fi
	:: else -> skip
	fi
}

/*
 * The append (SLOT > 1): our batch still POSTED with our n, room in the
 * slot, nothing owed: request n into the slot (nobody reads it: a
 * combiner reads at most the n it saw), then POSTED(seq, n) ->
 * POSTED(seq, n + 1). A failed CAS: a combiner took the batch; the
 * request is posted below, after the batch's outcome.
 * BROKEN_BATCH_APPEND: a store of the word read, n + 1, not a CAS.
 */
inline append()
{
	appended = 0;
	if
	:: atomic {
		wstate[me] == POSTED && handn < SLOT && wn[me] == handn &&
		owed[me] == 0 ->
			hreq[me * SLOT + handn] = s;
			bseq = wval[me]
	   };
		atomic {
#ifdef BROKEN_BATCH_APPEND
			wstate[me] = POSTED;
			wval[me] = bseq;
			wn[me] = handn + 1;
			appended = 1;
#else
			if
			:: wstate[me] == POSTED && wval[me] == bseq &&
			   wn[me] == handn ->
				wn[me] = handn + 1;
				appended = 1
			:: else -> skip
			fi;
#endif
			bseq = 0
		}
	:: else -> skip
	fi
}

/* ssq__combine_post, @s its seq */
inline post()
{
#if SLOT > 1
	append();
	if
	:: appended -> handn++; kick(0)
	:: else ->
#endif
#ifndef BROKEN_LONE_UNSETTLED
	settle();
#endif
	lone_try();
	if
	:: held && pending == 0 -> lone() /* L2 */
	:: else ->
#ifdef BROKEN_LONE_UNSETTLED
		settle(); /* too late: the fast path may have passed our last */
#endif
		atomic { /* the request, then R14: a new batch of one */
			hreq[me * SLOT] = s;
			handn = 1;
			wstate[me] = POSTED;
			wval[me] = s;
			wn[me] = 1
		}
		kick(held) /* held: L1 won with bits pending */
	fi
#if SLOT > 1
	fi
#endif
}

proctype producer(byte me)
{
	byte s = 0, bits, n, i, k, base, pass, total, at, got;
	byte ids[NPROC], ws[NPROC], cnt[NPROC];
	byte handn; /* hand_n: the requests in our batch */
	byte owelo; /* owe_lo: the first of them owed */
	bool held;  /* L1 won: the role ours */
#if SLOT > 1
	byte bseq;      /* the append's word, read */
	bool appended;
#endif
#ifdef SETTLE_BOUND
	byte rounds = 0; /* settle's rounds with ours POSTED after combining */
#endif

	do
	:: me != VICTIM && s < KOF(me) -> s++; post()
	:: me == VICTIM && s < VPOSTS -> s++; post()
	:: else -> break
	od;
#ifndef BROKEN_NO_RECHECK
	if
	:: me != VICTIM -> settle() /* ssq_combine_flush */
	:: else -> skip
	fi;
#endif
	if
	:: me != VICTIM -> finished++
	:: else -> skip
	fi;
died:
	skip
}

/* ssqd, after the victim's death. */
proctype healer()
{
end: /* no death: nothing to heal */
	dead[VICTIM];
	atomic {
		do /* ssq_ctl_heal: NOPs over what it reserved and did not publish */
		:: rnext[VICTIM] < rhi[VICTIM] ->
			lowner[rnext[VICTIM]] = NOP;
			pubcount[rnext[VICTIM]]++;
			lpub[rnext[VICTIM]] = 1;
			rnext[VICTIM]++
		:: else -> break
		od;
		if /* its role */
		:: role == VICTIM + 1 -> role = 0
		:: else -> skip
		fi;
		if /* ssq_ctl_mark_dead: its request still POSTED */
		:: wstate[VICTIM] == POSTED -> wstate[VICTIM] = EMPTY
		:: else -> skip
		fi
	}
}

/*
 * Once every survivor has settled: exactly once, in order (SCRIBBLE's at
 * most once), and what each counts in `posted` is what was published in
 * its name (the router's `done`, once all complete: a mismatch leaves
 * ssq_reserve's room check off by it for good).
 */
active proctype check()
{
	byte o, p, next, mine;

	finished == NOWN;
	o = 0;
	do
	:: o < NOWN ->
		next = 1;
		mine = 0;
		p = 0;
		do
		:: p < MAXPOS ->
			if
			:: lpub[p] && lowner[p] == o ->
				assert(pubcount[p] == 1);
				if /* not built: it may be missing */
				:: !BUILDS(o, next) && lseq[p] != next -> next++
				:: else -> skip
				fi;
				assert(lseq[p] == next); /* in order, none twice */
				next++;
				mine++
			:: else -> skip
			fi;
			p++
		:: else -> break
		od;
		if
		:: !BUILDS(o, next) -> next++
		:: else -> skip
		fi;
		assert(next == KOF(o) + 1); /* none lost */
		assert(posted[o] == mine);
		assert(wstate[o] == EMPTY && owed[o] == 0);
		o++
	:: else -> break
	od;
	next = 0;
	p = 0;
	do
	:: p < MAXPOS ->
		if
		:: lpub[p] && lowner[p] == VICTIM -> next++
		:: else -> skip
		fi;
		p++
	:: else -> break
	od;
	assert(next <= 1) /* the victim's: at most once */
}

init
{
	byte j;

	atomic {
		j = 0;
		do
		:: j < NPROC -> run producer(j); j++
		:: else -> break
		od;
		run healer()
	}
}
