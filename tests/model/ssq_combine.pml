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
 * DIE_AFTER_SWAP lets the victim die between its swap of the bits and
 * its takes; SETTLE_BOUND bounds settle's rounds with its request still
 * POSTED after combining (tests/test_ssq_combine_adv_model.sh).
 * tests/test_ssq_combine_model.sh runs NOWN=1 K=2 and NOWN=2 K=1
 * (0.27 and 4.4 million states with the fast path; 0.22 and 3.1 without);
 * NOWN=2 K=2 MAXDEAD=0 verified without it (19 million states, 1 GB);
 * NOWN=2 K=2 with a death is past 2 GB.
 */

#ifndef NOWN
#define NOWN 2
#endif
#ifndef K
#define K 2
#endif
#ifndef PASSES
#define PASSES 2
#endif
#ifndef MAXDEAD
#define MAXDEAD 1
#endif

#define VICTIM NOWN
#define NPROC (NOWN + 1)
#define NONE 255
#define NOP 254
#define MAXPOS (2 * (NOWN * K + 1) + 2)

#define EMPTY 0
#define POSTED 1
#define TAKEN 2
#define DONE 3

/* Each producer's hand-over word: state, and seq (POSTED) or position. */
byte wstate[NPROC];
byte wval[NPROC];
byte reqseq[NPROC]; /* the request's fields: its seq */
bool owed[NPROC];   /* hand_owed: ours to post ourselves, first */
byte pending;       /* comb_pending, a bit per producer */
byte role;          /* comb_role: 0 or id + 1 */
byte reserve;       /* positions handed out */
byte lowner[MAXPOS];
byte lseq[MAXPOS];
bool lpub[MAXPOS]; /* the publish word at each position */
byte pubcount[MAXPOS];
byte rnext[NPROC], rhi[NPROC]; /* the open reservation: [rnext, rhi) */
bool dead[NPROC];
byte ndead;
byte finished;

#define PUBLISH(pos, own, sq)                                                  \
	atomic {                                                               \
		lowner[pos] = own;                                             \
		lseq[pos] = sq;                                                \
		pubcount[pos]++;                                               \
		lpub[pos] = 1;                                                 \
	}

/* The victim may die here (a hook point); survivors never do. */
#define MAYDIE                                                                 \
	if                                                                     \
	:: me == VICTIM && ndead < MAXDEAD -> ndead++; dead[me] = 1; goto died \
	:: true -> skip                                                        \
	fi

/* ssq__combine: the role is ours. */
inline combine()
{
	pass = 1;
	MAYDIE;
	do
	:: /* swap the bits out, and pick the requests POSTED (A14a, A14b) */
		d_step {
			bits = pending;
			pending = 0;
			n = 0;
			i = 0;
			do
			:: i < NPROC ->
				if
				:: (bits & (1 << i)) && wstate[i] == POSTED ->
					ids[n] = i;
					ws[n] = wval[i];
					n++
				:: else -> skip
				fi;
				i++
			:: else -> break
			od
		}
#ifdef DIE_AFTER_SWAP
		/* in ssq__reserve: the room spin, or after the fetch-add */
		MAYDIE;
#endif
		if
		:: n > 0 ->
			atomic { /* ssq__reserve, recorded */
				base = reserve;
				rnext[me] = reserve;
				reserve = reserve + n;
				rhi[me] = reserve
			}
			k = 0;
			do /* C10: take each, at its position */
			:: k < n ->
				atomic {
					if
					:: wstate[ids[k]] == POSTED && wval[ids[k]] == ws[k] ->
						wstate[ids[k]] = TAKEN;
						wval[ids[k]] = base + k
					:: else -> ids[k] = NONE
					fi
				}
				k++
			:: else -> break
			od;
			MAYDIE;
			k = 0;
			do /* build, publish (R1a), DONE (R15) */
			:: k < n ->
				if
				:: ids[k] == NONE -> PUBLISH(base + k, NOP, 0)
				:: else -> PUBLISH(base + k, ids[k], reqseq[ids[k]])
				fi;
				rnext[me] = base + k + 1;
				MAYDIE;
				if
				:: ids[k] != NONE ->
					atomic {
						if
						:: wstate[ids[k]] == TAKEN && wval[ids[k]] == base + k ->
							wstate[ids[k]] = DONE
						:: else -> skip
						fi
					}
				:: else -> skip
				fi;
				k++
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

/* ssq__hand_post_direct: reserve one, publish our request. */
inline direct()
{
	atomic {
		base = reserve;
		reserve++
	}
	PUBLISH(base, me, reqseq[me])
}

/* C13': the owner takes its request back, the CAS against C10 */
#ifdef BROKEN_BLIND_TAKEBACK
#define TAKEBACK atomic { wstate[me] = EMPTY; owed[me] = 1 }
#else
#define TAKEBACK                                                               \
	atomic {                                                               \
		if                                                             \
		:: wstate[me] == POSTED -> wstate[me] = EMPTY; owed[me] = 1    \
		:: else -> skip                                                \
		fi                                                             \
	}
#endif

/* ssq__hand_settle */
inline settle()
{
	do
	:: wstate[me] == EMPTY && !owed[me] -> break
	:: wstate[me] == EMPTY && owed[me] -> direct(); owed[me] = 0; break
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
	:: wstate[me] == DONE -> wstate[me] = EMPTY
	:: wstate[me] == TAKEN && lpub[wval[me]] ->
		/*
		 * ssq__hand_outcome: the publish word at our position. No
		 * position is reused here; in the C code a completed one is
		 * (pos + ring), so the owner read there means "at pos" only
		 * while `completed` has not passed pos, and done_pos answers
		 * past it (test_ssq_combine_settle.c: a foreign owner taken
		 * for a NOP posted the request twice).
		 */
		atomic {
#ifndef BROKEN_NOP_AS_POSTED
			if
			:: wstate[me] != DONE && lowner[wval[me]] != me -> owed[me] = 1
			:: else -> skip
			fi;
#endif
			wstate[me] = EMPTY
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
		base = reserve;
		rnext[me] = reserve;
		reserve++;
		rhi[me] = reserve
	}
	MAYDIE;
	PUBLISH(base, me, s);
	rnext[me] = base + 1;
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

/* ssq__combine_post, @s its seq */
inline post()
{
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
		reqseq[me] = s;
		atomic { /* R14 */
			wstate[me] = POSTED;
			wval[me] = s
		}
		pending = pending | (1 << me); /* C8 */
		if
		:: held -> combine() /* L1 won with bits pending */
		:: else ->
			if /* C9 */
			:: atomic { role == 0 -> role = me + 1 }; combine()
			:: atomic { role != 0 -> skip }
			fi
		fi
	fi
}

proctype producer(byte me)
{
	byte s = 0, bits, n, i, k, base, pass;
	byte ids[NPROC], ws[NPROC];
	bool held; /* L1 won: the role ours */
#ifdef SETTLE_BOUND
	byte rounds = 0; /* settle's rounds with ours POSTED after combining */
#endif

	do
	:: me != VICTIM && s < K -> s++; post()
	:: me == VICTIM && s < 1 -> s++; post()
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

/* Once every survivor has settled: exactly once, in order. */
active proctype check()
{
	byte o, p, next;

	finished == NOWN;
	o = 0;
	do
	:: o < NOWN ->
		next = 1;
		p = 0;
		do
		:: p < MAXPOS ->
			if
			:: lpub[p] && lowner[p] == o ->
				assert(pubcount[p] == 1);
				assert(lseq[p] == next); /* in order, none twice */
				next++
			:: else -> skip
			fi;
			p++
		:: else -> break
		od;
		assert(next == K + 1); /* none lost */
		assert(wstate[o] == EMPTY && !owed[o]);
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
